"""The local API Gateway's API keys and usage plans over moto's API Gateway: lookups, admission
of a request's API key, and the keys kept across a restart in the data dir."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from local_stack.apigateway.access import ApiAccess
from local_stack.apigateway.authorizers import AuthorizerCache, Authorizers, AuthorizerSpec
from local_stack.apigateway.gateway import Route
from local_stack.apigateway.gateway_responses import GatewayResponses
from local_stack.apigateway.usage_plans import KeyDirectory, UsagePlans
from local_stack.awslambda.runtime import Invocation
from local_stack.cloudformation.resources import Resources, create_resources, name_resources
from local_stack.embedded.client import aws_client
from local_stack.embedded.server import EmbeddedAws
from local_stack.registry import PROVIDERS_BY_TYPE
from tests.support.stack_template import expanded_template

pytestmark = pytest.mark.integration

USAGE_KEY = "u" * 30


@pytest.fixture
def apigateway(moto: None) -> Any:
    client = boto3.client("apigateway")
    plan = client.create_usage_plan(
        name="stk-KeysUsagePlan",
        apiStages=[{"apiId": "local", "stage": "local"}],
        throttle={"rateLimit": 1, "burstLimit": 1},
        quota={"limit": 100, "period": "DAY"},
    )
    key = client.create_api_key(name="stk-key", value=USAGE_KEY, enabled=True)
    client.create_usage_plan_key(usagePlanId=plan["id"], keyId=key["id"], keyType="API_KEY")
    client.create_api_key(name="stk-loose", value="l" * 30, enabled=True)  # in no plan
    return client


def access(apigateway: Any, answer: dict[str, Any]) -> ApiAccess:
    def invoke(function: str, event: dict[str, Any]) -> Invocation:
        return Invocation("r", result=answer)

    spec = AuthorizerSpec("keys", "request", "auth", ("method.request.header.X-Api-Key",), 60)
    return ApiAccess(
        region="us-east-1",
        api_id="local",
        authorizers=Authorizers({"keys": spec}, invoke, AuthorizerCache()),
        responses=GatewayResponses(),
        usage_plans=UsagePlans(KeyDirectory(apigateway, "local")),
        api_key_source="AUTHORIZER",
    )


def allowed_with(usage_key: str) -> dict[str, Any]:
    return {
        "principalId": "k1",
        "policyDocument": {
            "Statement": [{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": "*"}]
        },
        "context": {"owner_id": "team-a", "role": "member"},
        "usageIdentifierKey": usage_key,
    }


def event() -> dict[str, Any]:
    return {
        "httpMethod": "POST",
        "path": "/",
        "headers": {"X-Api-Key": "shk_whatever"},
        "requestContext": {"requestId": "r1", "identity": {"sourceIp": "127.0.0.1"}},
    }


ROUTE = Route("/", "POST", "api", authorizer="keys", api_key_required=True)


def test_a_key_in_the_plan_passes_with_the_authorizers_context_then_is_throttled(apigateway: Any) -> None:
    guard = access(apigateway, allowed_with(USAGE_KEY))
    first = event()
    assert guard.admit(ROUTE, first) is None
    assert first["requestContext"]["authorizer"] == {
        "owner_id": "team-a",
        "role": "member",
        "principalId": "k1",
    }
    assert first["requestContext"]["identity"]["apiKey"] == USAGE_KEY
    status, _, body = guard.admit(ROUTE, event()) or (0, [], b"")
    assert (status, body) == (429, b'{"message":"Too Many Requests"}')


@pytest.mark.parametrize("usage_key", ["l" * 30, "not-an-api-key-at-all-xx", ""])
def test_a_usage_identifier_that_is_not_in_the_plan_is_403_forbidden(apigateway: Any, usage_key: str) -> None:
    status, _, body = access(apigateway, allowed_with(usage_key)).admit(ROUTE, event()) or (0, [], b"")
    assert (status, body) == (403, b'{"message":"Forbidden"}')


def test_a_disabled_api_key_is_refused(apigateway: Any) -> None:
    key_id = next(k["id"] for k in apigateway.get_api_keys()["items"] if k["name"] == "stk-key")
    apigateway.update_api_key(
        apiKey=key_id, patchOperations=[{"op": "replace", "path": "/enabled", "value": "false"}]
    )
    assert KeyDirectory(apigateway, "local").lookup(USAGE_KEY).enabled is False  # type: ignore[union-attr]
    assert access(apigateway, allowed_with(USAGE_KEY)).admit(ROUTE, event()) is not None


@pytest.fixture(scope="module")
def embedded_aws() -> Iterator[EmbeddedAws]:
    server = EmbeddedAws(0)
    server.start()
    yield server
    server.stop()


def created(aws: EmbeddedAws, params: dict[str, str]) -> Resources:
    """The template's resources with ``params``, made on a freshly reset embedded AWS."""
    aws.reset()
    expanded, resolver = expanded_template(params)
    resources = name_resources(expanded, resolver, aws.url, "us-east-1")
    create_resources(resources, lambda name: "http://127.0.0.1:9/sns/" + name, PROVIDERS_BY_TYPE)
    return resources


def test_the_templates_usage_plan_is_made_with_its_parameters(embedded_aws: EmbeddedAws) -> None:
    resources = created(embedded_aws, {"KeyRateLimit": "2.5", "KeyBurstLimit": "4", "KeyDailyQuota": "7"})
    apigateway = aws_client("apigateway", embedded_aws.url, "us-east-1")
    (plan,) = apigateway.get_usage_plans()["items"]
    assert plan["id"] == resources.outputs()["UsagePlanId"]
    assert plan["throttle"] == {"rateLimit": 2.5, "burstLimit": 4}
    assert plan["quota"] == {"limit": 7, "period": "DAY"}
    assert plan["apiStages"] == [{"apiId": "local", "stage": "local"}]
    # Access=keys: no anonymous key; the one key is signed-in people's (SignIn=on)
    assert [key["name"] for key in apigateway.get_api_keys()["items"]] == ["test-sign-in"]


def test_sign_in_puts_the_signed_in_peoples_key_in_the_plan(embedded_aws: EmbeddedAws) -> None:
    resources = created(embedded_aws, {})
    directory = KeyDirectory(aws_client("apigateway", embedded_aws.url, "us-east-1"), "local")
    people = resources.functions["AuthorizerFunction"].environment["SIGN_IN_USAGE_KEY"]
    info = directory.lookup(people)
    assert info is not None and info.enabled and len(info.plans) == 1


def test_without_sign_in_there_is_no_key_for_people(embedded_aws: EmbeddedAws) -> None:
    resources = created(embedded_aws, {"SignIn": "off"})
    apigateway = aws_client("apigateway", embedded_aws.url, "us-east-1")
    assert apigateway.get_api_keys()["items"] == []
    assert resources.functions["AuthorizerFunction"].environment["SIGN_IN_USAGE_KEY"] == ""


def test_access_open_puts_the_anonymous_key_in_the_plan(embedded_aws: EmbeddedAws) -> None:
    resources = created(embedded_aws, {"Access": "open"})
    directory = KeyDirectory(aws_client("apigateway", embedded_aws.url, "us-east-1"), "local")
    anonymous = resources.functions["AuthorizerFunction"].environment["ANONYMOUS_USAGE_KEY"]
    info = directory.lookup(anonymous)
    assert info is not None and info.enabled and len(info.plans) == 1
