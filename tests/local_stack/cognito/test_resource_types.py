"""The user pool's CloudFormation types in moto's cognito-idp: a client, a group and an identity
provider are made inside their pool, and deleting each takes it out of that pool only."""

import boto3
import pytest

from local_stack.cognito.resource_types import (
    UserPoolClientProvider,
    UserPoolGroupProvider,
    UserPoolIdentityProviderProvider,
    UserPoolProvider,
)

pytestmark = pytest.mark.integration

ACCOUNT, REGION = "123456789012", "us-east-1"


def test_a_pools_parts_are_made_in_it_and_deleted_from_it(moto: None) -> None:
    pool = UserPoolProvider().create("us-east-1_Parts", {"UserPoolName": "parts"}, ACCOUNT, REGION)
    pool_id = pool.physical_id
    client = UserPoolClientProvider().create(
        "page-client", {"UserPoolId": pool_id, "ClientName": "page"}, ACCOUNT, REGION
    )
    group = UserPoolGroupProvider().create(
        "admin", {"UserPoolId": pool_id, "GroupName": "admin"}, ACCOUNT, REGION
    )
    provider = UserPoolIdentityProviderProvider().create(
        "Corp",
        {
            "UserPoolId": pool_id,
            "ProviderName": "Corp",
            "ProviderType": "OIDC",
            "ProviderDetails": {
                "client_id": "c",
                "oidc_issuer": "https://idp.example",
                "authorize_scopes": "openid",
            },
        },
        ACCOUNT,
        REGION,
    )
    cognito = boto3.client("cognito-idp", region_name=REGION)
    assert [c["ClientId"] for c in cognito.list_user_pool_clients(UserPoolId=pool_id)["UserPoolClients"]] == [
        client.physical_id
    ]
    assert [g["GroupName"] for g in cognito.list_groups(UserPoolId=pool_id)["Groups"]] == ["admin"]
    assert [p["ProviderName"] for p in cognito.list_identity_providers(UserPoolId=pool_id)["Providers"]] == [
        "Corp"
    ]
    # When each part is deleted, it is gone from its pool, and the pool stays
    UserPoolClientProvider().delete(client, ACCOUNT, REGION)
    UserPoolGroupProvider().delete(group, ACCOUNT, REGION)
    UserPoolIdentityProviderProvider().delete(provider, ACCOUNT, REGION)
    assert cognito.list_user_pool_clients(UserPoolId=pool_id)["UserPoolClients"] == []
    assert cognito.list_groups(UserPoolId=pool_id)["Groups"] == []
    assert cognito.list_identity_providers(UserPoolId=pool_id)["Providers"] == []
    assert cognito.describe_user_pool(UserPoolId=pool_id)["UserPool"]["Id"] == pool_id
