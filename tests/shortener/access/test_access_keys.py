"""API keys under moto: the keys table (made from template.yaml), the usage plan's API keys in API
Gateway, and the authorizer handler with the event API Gateway sends it."""

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest

from local_stack.cloudformation.template import create_table_arguments
from shortener import settings
from shortener.access.keys import KeyManager
from shortener.access.store_keys import KeysStore
from shortener.access.usage_plans import ApiGatewayUsagePlan
from shortener.exceptions import KeyNotFoundError, UsagePlanError
from shortener.services import authorizer as authorizer_services
from tests.support.lambda_context import FakeLambdaContext

pytestmark = pytest.mark.integration

_EVENT = json.loads(
    (Path(__file__).parents[2] / "support" / "apigateway_request_authorizer.json").read_text()
)
METHOD_ARN = "arn:aws:execute-api:us-east-1:123456789012:api1/prod/POST/bulk"


@pytest.fixture
def keys_table(moto: None, monkeypatch: pytest.MonkeyPatch) -> str:
    boto3.client("dynamodb").create_table(**create_table_arguments("KeysTable", "test-KeysTable"))
    monkeypatch.setenv("KEYS_TABLE", "test-KeysTable")
    return "test-KeysTable"


@pytest.fixture
def plan(moto: None) -> ApiGatewayUsagePlan:
    client = boto3.client("apigateway")
    created = client.create_usage_plan(
        name="plan",
        throttle={"rateLimit": 10, "burstLimit": 20},
        apiStages=[{"apiId": "api1", "stage": "prod"}],
    )
    return ApiGatewayUsagePlan(client, created["id"], "api1", "prod")


@pytest.fixture
def manager(keys_table: str, plan: ApiGatewayUsagePlan) -> KeyManager:
    return KeyManager(KeysStore(keys_table), plan, name_prefix="stk")


@pytest.fixture
def authorizer(keys_table: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    from functions.authorizer import app

    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "authorizer")
    settings.authorizer_settings.cache_clear()
    authorizer_services.keys.cache_clear()
    yield app
    settings.authorizer_settings.cache_clear()
    authorizer_services.keys.cache_clear()


def authorizer_event(key: str | None) -> dict[str, Any]:
    event = copy.deepcopy(_EVENT)
    event["methodArn"] = METHOD_ARN
    event["headers"] = {"Host": "api1.execute-api.us-east-1.amazonaws.com"}
    if key is not None:
        event["headers"]["x-api-key"] = key
    return event


def call(app: ModuleType, key: str | None) -> dict[str, Any]:
    return app.lambda_handler(authorizer_event(key), FakeLambdaContext(function_name="authorizer"))


def effect(answer: dict[str, Any]) -> str:
    return str(answer["policyDocument"]["Statement"][0]["Effect"])


def test_a_created_key_is_stored_hashed_and_in_the_usage_plan(
    manager: KeyManager, keys_table: str, plan: ApiGatewayUsagePlan
) -> None:
    # When a key is created
    created = manager.create("ci pipeline", "team-a", "member")
    # Then the table holds its record without the key itself
    item = boto3.client("dynamodb").get_item(
        TableName=keys_table, Key={"key_id": {"S": created.record.key_id}}
    )
    assert created.key not in json.dumps(item["Item"])
    assert item["Item"]["owner_id"] == {"S": "team-a"}
    assert item["Item"]["revoked"] == {"BOOL": False}
    # And API Gateway has an enabled API key with its usage identifier, in the usage plan
    assert plan.has_key(created.record.usage_key)
    assert KeysStore(keys_table).get_key(created.record.key_id) == created.record


def test_the_authorizer_allows_a_stored_key_with_its_caller_and_usage_key(
    manager: KeyManager, authorizer: ModuleType
) -> None:
    created = manager.create("ci", "team-a", "admin")
    answer = call(authorizer, created.key)
    assert effect(answer) == "Allow"
    assert answer["policyDocument"]["Statement"][0]["Resource"] == [
        "arn:aws:execute-api:us-east-1:123456789012:api1/prod/*"
    ]
    assert answer["context"]["owner_id"] == "team-a"
    assert answer["context"]["role"] == "admin"
    assert answer["usageIdentifierKey"] == created.record.usage_key


def test_the_authorizer_denies_a_revoked_key_at_once(
    manager: KeyManager, authorizer: ModuleType, keys_table: str
) -> None:
    # Given a key that was allowed
    created = manager.create("ci", "team-a")
    assert effect(call(authorizer, created.key)) == "Allow"
    # When it is revoked (moto has no authorizer cache to flush: that step fails, and says so)
    with pytest.raises(UsagePlanError, match="authorizer cache"):
        manager.revoke(created.record.key_id)
    # Then the record says revoked and the very next authorizer call denies it
    record = KeysStore(keys_table).get_key(created.record.key_id)
    assert record is not None and record.revoked
    assert effect(call(authorizer, created.key)) == "Deny"


def test_the_authorizer_denies_unknown_and_missing_keys(manager: KeyManager, authorizer: ModuleType) -> None:
    manager.create("ci", "team-a")
    assert effect(call(authorizer, None)) == "Deny"
    assert effect(call(authorizer, "shk_0123456789ab_" + "x" * 43)) == "Deny"


def test_open_access_allows_a_caller_without_a_key(
    keys_table: str, authorizer: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCESS", "open")
    monkeypatch.setenv("ANONYMOUS_USAGE_KEY", "stk-anonymous-1234")
    answer = call(authorizer, None)
    assert effect(answer) == "Allow"
    assert answer["context"]["role"] == "anonymous"
    assert answer["usageIdentifierKey"] == "stk-anonymous-1234"


def test_the_authorizer_fails_closed_when_the_table_is_unreadable(
    authorizer: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a table that does not exist: API Gateway answers an authorizer error with a 5xx
    monkeypatch.setenv("KEYS_TABLE", "no-such-table")
    settings.authorizer_settings.cache_clear()
    authorizer_services.keys.cache_clear()
    with pytest.raises(Exception, match="ResourceNotFound"):
        call(authorizer, "shk_0123456789ab_" + "x" * 43)


def test_revoking_disables_the_usage_plan_key_even_when_the_flush_fails(
    manager: KeyManager, plan: ApiGatewayUsagePlan
) -> None:
    created = manager.create("ci", "team-a")
    with pytest.raises(UsagePlanError):
        manager.revoke(created.record.key_id)
    assert not plan.has_key(created.record.usage_key)


def test_revoking_an_unknown_key_id_is_refused(manager: KeyManager, keys_table: str) -> None:
    with pytest.raises(KeyNotFoundError):
        manager.revoke("0123456789ab")
    with pytest.raises(KeyNotFoundError):
        KeysStore(keys_table).mark_revoked("0123456789ab", datetime.now(UTC))
