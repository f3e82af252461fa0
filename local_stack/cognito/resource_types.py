"""The user pool's CloudFormation types in moto's cognito-idp (moto's CloudFormation has no model
for them). Ids are the ones the stack named them with (cloudformation/resources.py): the same on
every start, so the people kept in the data folder find their pool again."""

import re
from typing import Any

from moto.cognitoidp.models import CognitoIdpBackend, cognitoidp_backends

from local_stack.cloudformation.resources import client_id, user_pool_id
from local_stack.resource_provider import Created

_CLIENT_ID = re.compile(r"^[a-z0-9]{26}$")


def _backend(account_id: str, region: str) -> CognitoIdpBackend:
    return cognitoidp_backends[account_id][region]


class _PartOfAPool:
    """A resource kept inside its user pool (``Created.owner``), in the pool's ``COLLECTION``."""

    COLLECTION = ""

    def delete(self, created: Created, account_id: str, region: str) -> None:
        pool = _backend(account_id, region).user_pools.get(created.owner)
        if pool is not None:
            getattr(pool, self.COLLECTION).pop(created.physical_id, None)


class UserPoolProvider:
    TYPE, NAME_PROPERTY = "AWS::Cognito::UserPool", "UserPoolName"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        backend = _backend(account_id, region)
        # `make run` named it beforehand; `sam deploy` against the embedded AWS gives a name.
        if not name.startswith(f"{region}_"):
            name = user_pool_id(name, region)
        config = {
            key: value for key, value in properties.items() if key not in ("UserPoolName", "UserPoolTags")
        }
        pool = backend.create_user_pool(str(properties.get("UserPoolName", name)), config)
        backend.user_pools.pop(pool.id)
        pool.id = name
        pool.arn = f"arn:aws:cognito-idp:{region}:{account_id}:userpool/{name}"
        backend.user_pools[name] = pool
        provider = f"cognito-idp.{region}.amazonaws.com/{name}"
        return Created(
            name, {"Arn": pool.arn, "ProviderName": provider, "ProviderURL": provider, "UserPoolId": name}
        )

    def delete(self, created: Created, account_id: str, region: str) -> None:
        _backend(account_id, region).user_pools.pop(created.physical_id, None)


class UserPoolClientProvider(_PartOfAPool):
    COLLECTION = "clients"
    TYPE, NAME_PROPERTY = "AWS::Cognito::UserPoolClient", "ClientName"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        backend = _backend(account_id, region)
        pool_id = str(properties["UserPoolId"])
        if not _CLIENT_ID.match(name):
            name = client_id(name)
        config = {
            key: value for key, value in properties.items() if key not in ("UserPoolId", "GenerateSecret")
        }
        client = backend.create_user_pool_client(pool_id, bool(properties.get("GenerateSecret")), config)
        pool = backend.describe_user_pool(pool_id)
        pool.clients.pop(client.id)
        client.id = name
        pool.clients[name] = client
        return Created(name, {"ClientId": name, "Name": str(properties.get("ClientName", ""))}, owner=pool_id)


class UserPoolDomainProvider:
    TYPE, NAME_PROPERTY = "AWS::Cognito::UserPoolDomain", "Domain"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        domain = str(properties["Domain"])
        _backend(account_id, region).create_user_pool_domain(str(properties["UserPoolId"]), domain)
        return Created(domain, {"CloudFrontDistribution": f"{domain}.auth.{region}.amazoncognito.com"})

    def delete(self, created: Created, account_id: str, region: str) -> None:
        _backend(account_id, region).user_pool_domains.pop(created.physical_id, None)


class UserPoolGroupProvider(_PartOfAPool):
    COLLECTION = "groups"
    TYPE, NAME_PROPERTY = "AWS::Cognito::UserPoolGroup", "GroupName"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        pool_id = str(properties["UserPoolId"])
        group = str(properties.get("GroupName", name))
        pool = _backend(account_id, region).describe_user_pool(pool_id)
        if group not in pool.groups:  # restored from the data folder already
            _backend(account_id, region).create_group(
                pool_id,
                group,
                str(properties.get("Description", "")),
                str(properties.get("RoleArn", "")) or None,  # type: ignore[arg-type]
                int(properties["Precedence"]) if "Precedence" in properties else None,  # type: ignore[arg-type]
            )
        return Created(group, owner=pool_id)


class UserPoolIdentityProviderProvider(_PartOfAPool):
    COLLECTION = "identity_providers"
    TYPE, NAME_PROPERTY = "AWS::Cognito::UserPoolIdentityProvider", "ProviderName"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        pool_id = str(properties["UserPoolId"])
        provider = str(properties["ProviderName"])
        config = {
            key: value for key, value in properties.items() if key not in ("UserPoolId", "ProviderName")
        }
        _backend(account_id, region).create_identity_provider(pool_id, provider, config)
        return Created(provider, owner=pool_id)
