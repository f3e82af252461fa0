"""The audit log under moto: every change made through the API is an entry (who, what, when,
from where, before and after) readable at once by admins, newest first, filtered and paged;
members are refused; entries are never changed."""

import json
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import boto3
import pytest
from freezegun import freeze_time

from local_stack.cloudformation.template import create_table_arguments
from shortener.access.usage_plans import ApiGatewayUsagePlan
from shortener.audit.model import AuditEntry
from shortener.audit.store import AuditSelection, AuditStore
from shortener.audit.trail import AuditTrail
from shortener.services import api as api_services
from shortener.services import keys as stack_keys
from tests.support.api import ApiCaller

pytestmark = pytest.mark.integration


def audit(caller: ApiCaller, **query: str) -> dict[str, Any]:
    return caller.request("GET", "/audit", resource="/audit", query=query or None)


def entries(caller: ApiCaller, **query: str) -> list[dict[str, Any]]:
    answer = audit(caller, **query)
    assert answer["statusCode"] == 200, answer["body"]
    return list(json.loads(answer["body"])["entries"])


def test_who_made_changed_disabled_and_deleted_a_link_reads_newest_first(api: ModuleType) -> None:
    alice, admin = ApiCaller(api, "alice"), ApiCaller(api, "root", role="admin")
    alice.shorten("https://example.com/before", code="audited")
    assert alice.link("PATCH", "audited", {"url": "https://example.com/after"})["statusCode"] == 200
    assert alice.link("PATCH", "audited", {"status": "disabled"})["statusCode"] == 200
    assert alice.link("DELETE", "audited")["statusCode"] == 200
    found = entries(admin, code="audited")
    assert [entry["action"] for entry in found] == [
        "link.deleted",
        "link.updated",
        "link.updated",
        "link.created",
    ]
    assert {entry["actor"] for entry in found} == {"key-alice"}
    assert all(entry["source_ip"] for entry in found)
    deleted, disabled, updated, created = found
    assert (updated["before"]["url"], updated["after"]["url"]) == (
        "https://example.com/before",
        "https://example.com/after",
    )
    assert (disabled["before"]["status"], disabled["after"]["status"]) == ("active", "disabled")
    assert deleted["after"] is None and deleted["before"]["code"] == "audited"
    assert created["before"] is None and created["after"]["url"] == "https://example.com/before"
    # Filtered by action and by actor; a member may not read it
    assert [e["after"]["status"] for e in entries(admin, action="link.updated")] == ["disabled", "active"]
    assert entries(admin, actor="key-nobody") == []
    refused = audit(alice)
    assert refused["statusCode"] == 403 and "admin" in json.loads(refused["body"])["message"]
    assert audit(admin, action="link.renamed")["statusCode"] == 400


def test_a_password_is_never_in_the_log(api: ModuleType) -> None:
    alice, admin = ApiCaller(api, "alice"), ApiCaller(api, "root", role="admin")
    alice.shorten("https://example.com/secret", code="locked", password="hunter2-hunter2")
    assert alice.link("PATCH", "locked", {"password": "another-secret-9"})["statusCode"] == 200
    text = json.dumps(entries(admin, code="locked"))
    assert "hunter2" not in text and "another-secret" not in text


def test_pages_follow_each_other_across_days_without_repeats(tables: dict[str, str]) -> None:
    store = AuditStore(tables["AUDIT_TABLE"])
    start = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)
    for number in range(7):
        with freeze_time(start + timedelta(minutes=25 * number)):
            AuditTrail(store, 400).record("k1", "link.created", f"c{number}", after={"n": number})
    selection = AuditSelection(begin=start - timedelta(days=1), end=start + timedelta(days=1))
    seen: list[str] = []
    position: str | None = None
    while True:
        page, position = store.page(
            AuditSelection(begin=selection.begin, end=selection.end, before=position), 3
        )
        seen += [entry.target for entry in page]
        if position is None:
            break
    assert seen == [f"c{number}" for number in reversed(range(7))]


def test_an_entry_expires_after_the_retention(tables: dict[str, str]) -> None:
    store = AuditStore(tables["AUDIT_TABLE"])
    with freeze_time("2026-11-29T10:00:00Z"):
        entry = AuditTrail(store, 30).record("k1", "host.blocked", "bad.example")
    [item] = boto3.client("dynamodb").scan(TableName=tables["AUDIT_TABLE"])["Items"]
    assert int(item["expires_at"]["N"]) == int((entry.time + timedelta(days=30)).timestamp())
    assert isinstance(entry, AuditEntry) and entry.source_ip is None


@pytest.mark.parametrize(
    "query",
    [
        {"from": "yesterday"},
        {"to": "2026-13-01"},
        {"from": "2026-11-20", "to": "2026-11-10"},
        {"limit": "0"},
        {"limit": "101"},
        {"cursor": "not-a-cursor"},
        {"action": "link.renamed"},
    ],
)
def test_a_bad_query_is_a_400_naming_the_problem(api: ModuleType, query: dict[str, str]) -> None:
    answer = audit(ApiCaller(api, "root", role="admin"), **query)
    assert answer["statusCode"] == 400, answer["body"]
    assert json.loads(answer["body"])["error"] == "invalid_request"


@pytest.mark.parametrize(
    "query", [{"to": "0001-01-01"}, {"from": "9999-12-31"}, {"to": "9999-12-31T23:59:59Z"}]
)
def test_a_range_outside_the_kept_entries_reads_nothing_at_once(
    api: ModuleType, query: dict[str, str]
) -> None:
    answer = audit(ApiCaller(api, "root", role="admin"), **query)
    assert answer["statusCode"] == 200, answer["body"]
    assert json.loads(answer["body"]) == {"entries": [], "next_cursor": None}


def test_a_batch_is_one_entry_naming_what_it_asked(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    import batches

    from tests.shortener.jobs.test_link_batches import StartedBatches

    # The jobs worker's invoke stands aside (the batch itself is test_link_batches'); two codes listed
    monkeypatch.setattr(api_services, "_jobs_worker", StartedBatches)
    monkeypatch.setattr(batches, "AUDITED_CODES", 2)
    alice, admin = ApiCaller(api, "alice"), ApiCaller(api, "root", role="admin")
    for number in range(3):
        alice.shorten(f"https://example.com/batch/{number}", code=f"batched-{number}")
    codes = [f"batched-{number}" for number in range(3)]
    answer = alice.request("POST", "/links/batch", body={"action": "disable", "codes": codes})
    assert answer["statusCode"] == 202, answer["body"]
    [entry] = entries(admin, action="links.batch")
    assert entry["target"] == json.loads(answer["body"])["batch_id"]
    assert entry["after"] == {"action": "disable", "codes_count": 3, "codes": codes[:2]}


def test_a_key_made_and_revoked_with_the_command_line_is_in_the_log(
    tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    apigateway = boto3.client("apigateway")
    plan = apigateway.create_usage_plan(name="plan", apiStages=[{"apiId": "api1", "stage": "dev"}])["id"]
    monkeypatch.setattr(ApiGatewayUsagePlan, "flush_authorizer_cache", lambda self: None)
    boto3.client("dynamodb").create_table(**create_table_arguments("KeysTable", "keys"))
    outputs = {
        "KeysTableName": "keys",
        "UsagePlanId": plan,
        "RestApiId": "api1",
        "ApiStageName": "dev",
        "AuditTableName": tables["AUDIT_TABLE"],
        "AuditRetentionDays": "30",
    }
    manager = stack_keys.key_manager(
        outputs,
        "stk",
        boto3.client("apigateway"),
        boto3.client("dynamodb"),
        actor="cli:arn:aws:iam::1:user/ops",
    )
    made = manager.create("campaigns", "team-a")
    manager.revoke(made.record.key_id)
    store = AuditStore(tables["AUDIT_TABLE"])
    now = datetime.now(UTC)
    found, _ = store.page(AuditSelection(begin=now - timedelta(hours=1), end=now + timedelta(minutes=1)), 10)
    assert [(e.action, e.target, e.actor) for e in found] == [
        ("key.revoked", made.record.key_id, "cli:arn:aws:iam::1:user/ops"),
        ("key.created", made.record.key_id, "cli:arn:aws:iam::1:user/ops"),
    ]
    assert found[1].after == {
        "key_id": made.record.key_id,
        "name": "campaigns",
        "owner_id": "team-a",
        "role": "member",
        "revoked": False,
        "domains": "",
    }
    # never the key itself nor its hash
    assert made.key not in json.dumps([e.model_dump(mode="json") for e in found])
    assert made.record.key_hash not in json.dumps([e.model_dump(mode="json") for e in found])
