"""API keys on the local stack, over HTTP: no key, a wrong key and a revoked key are refused on
every protected route with nothing written; revocation is effective at once although API Gateway
caches the authorizer's answers; a key over its usage plan gets 429; Access=open shortens without
a key and rate-limits a single client. Keys are made and revoked with the `shortener` client."""

import json
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from local_stack.apigateway.gateway import routes_from_swagger
from tests.e2e.conftest import Answer, RunningStack, StartStack
from tests.support.stack_template import expanded_template

WRONG_KEY = "shk_0123456789ab_" + "A" * 43


JSON = {"Content-Type": "application/json"}


def shortener(stack: RunningStack, *args: str) -> subprocess.CompletedProcess[str]:
    """The command-line client, finding the stack through its data dir."""
    return subprocess.run(
        [sys.executable, "-m", "shortener_cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "SHORTENER_LOCAL_STACK": str(stack.data_dir)},
    )


def create_key(stack: RunningStack, owner: str, role: str = "member") -> tuple[str, str]:
    """(key id, key) of a new key made with `shortener keys create`."""
    made = shortener(stack, "keys", "create", "--name", f"e2e {owner}", "--owner", owner, "--role", role)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    found = re.search(r"Key (\w+) ", made.stderr)
    assert found, made.stderr
    return found.group(1), key


def protected_requests() -> list[tuple[str, str, str, dict[str, str]]]:
    """(method, path, body, headers) for every route of the template that has an authorizer, so
    that routes added later are covered too; path parameters get a made-up value."""
    expanded, resolver = expanded_template(stack_name="e2e")
    body = expanded["Resources"]["ShortenerApi"]["Properties"]["Body"]
    # Only the integration URIs and security matter here.
    resolver.attributes = {
        name: {"Arn": f"arn:aws:lambda:us-east-1:1:function:{name}"} for name in expanded["Resources"]
    }
    routes = routes_from_swagger(resolver.resolve(body))
    requests = []
    for route in routes:
        if route.authorizer is None:
            continue
        path = re.sub(r"\{[^}]+\}", "e2e-x", route.resource)
        if route.resource == "/bulk":
            requests.append(
                (route.method, path, "url\nhttps://example.com/e2e/refused\n", {"Content-Type": "text/csv"})
            )
        elif route.method in ("POST", "PUT", "PATCH"):
            payload = '{"url": "https://example.com/e2e/refused", "code": "refused-code"}'
            requests.append((route.method, path, payload, {"Content-Type": "application/json"}))
        else:
            requests.append((route.method, path, "", {}))
    return requests


def state(stack: RunningStack) -> dict[str, Any]:
    """Every item of the stack's tables but the keys, and the bulk queue's message counts."""
    dynamodb, sqs = stack.boto3_client("dynamodb"), stack.boto3_client("sqs")
    tables = {
        name: sorted(map(str, dynamodb.scan(TableName=stack.resources[name], ConsistentRead=True)["Items"]))
        for name in ("LinksTable", "JobsTable", "TokensTable", "BlocklistTable", "AuditTable")
    }
    attributes = sqs.get_queue_attributes(
        QueueUrl=stack.resources["BulkQueue"],
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    tables.pop("TokensTable")  # loops heartbeat on their own
    return {**tables, "queue": attributes}


def send(stack: RunningStack, request: tuple[str, str, str, dict[str, str]], key: str | None) -> Answer:
    method, path, body, headers = request
    return stack.request(method, path, body or None, headers, api_key=key)


@pytest.mark.e2e_timeout(150)
def test_no_key_a_wrong_key_and_a_revoked_key_are_refused_everywhere_and_write_nothing(
    stack: RunningStack,
) -> None:
    # Given a member key that worked, then was revoked with the client
    key_id, key = create_key(stack, "e2e-refused")
    assert stack.post_json("/", {"url": "https://example.com/e2e/before-revoke"}, api_key=key).status == 201
    revoked = shortener(stack, "keys", "revoke", key_id)
    assert revoked.returncode == 0, revoked.stderr
    before = state(stack)
    requests = protected_requests()
    assert {(method, path) for method, path, _, _ in requests} >= {
        ("POST", "/"),
        ("POST", "/bulk"),
        ("POST", "/bulk/uploads"),
        ("GET", "/jobs/e2e-x"),
        ("GET", "/jobs/e2e-x/results"),
    }
    # When every protected route is called without a key, with a wrong key, with the revoked key
    for presented, error in (
        (None, "missing_api_key"),
        (WRONG_KEY, "invalid_api_key"),
        (key, "invalid_api_key"),
    ):
        for request in requests:
            answer = send(stack, request, presented)
            # Then each is a 403 in the project's error shape
            assert answer.status == 403, (request, presented, answer.text)
            assert answer.json()["error"] == error
            assert "X-Api-Key" in answer.json()["message"] or error == "invalid_api_key"
    # And nothing was written: no link, no job, no queued row
    assert state(stack) == before


def test_the_audit_log_shows_who_disabled_a_link_and_its_url_before_and_after(stack: RunningStack) -> None:
    # Given a member who makes a link, points it elsewhere, then disables it
    key_id, key = create_key(stack, "e2e-audited")
    link = {"url": "https://example.com/e2e/audit-before", "code": "e2e-audited"}
    assert stack.post_json("/", link, api_key=key).status == 201
    changed = {"url": "https://example.com/e2e/audit-after"}
    assert stack.request("PATCH", "links/e2e-audited", json.dumps(changed), JSON, api_key=key).status == 200
    disabled = json.dumps({"status": "disabled"})
    assert stack.request("PATCH", "links/e2e-audited", disabled, JSON, api_key=key).status == 200
    # Then an admin reads at once who disabled it and when, and the URL before and after the change
    answer = stack.request("GET", "audit?code=e2e-audited")
    assert answer.status == 200, answer.text
    entries = answer.json()["entries"]
    assert [entry["action"] for entry in entries] == ["link.updated", "link.updated", "link.created"]
    assert {entry["actor"] for entry in entries} == {key_id}
    assert entries[0]["after"]["status"] == "disabled" and entries[0]["source_ip"] == "127.0.0.1"
    assert (entries[1]["before"]["url"], entries[1]["after"]["url"]) == (link["url"], changed["url"])
    assert datetime.fromisoformat(entries[0]["time"]) > datetime.now(UTC) - timedelta(minutes=5)
    # and the command line prints them, newest first
    printed = shortener(stack, "audit", "--code", "e2e-audited")
    assert printed.returncode == 0, printed.stderr
    assert [line.split()[2] for line in printed.stdout.splitlines()] == [e["action"] for e in entries]
    # and the key was recorded when the command line made it, by the credentials that made it
    [made] = stack.request("GET", f"audit?action=key.created&code={key_id}").json()["entries"]
    assert made["actor"].startswith("cli:") and made["after"]["owner_id"] == "e2e-audited"
    assert key not in json.dumps(made)
    # and a member cannot read it
    refused = stack.request("GET", "audit", api_key=key)
    assert refused.status == 403 and refused.json()["error"] == "forbidden", refused.text


@pytest.mark.e2e_timeout(90)
def test_revocation_is_effective_at_once_although_answers_are_cached(stack: RunningStack) -> None:
    # Given a key whose authorizer answer API Gateway caches (60 s) and which works on two methods
    key_id, key = create_key(stack, "e2e-revoked")
    assert stack.post_json("/", {"url": "https://example.com/e2e/revoke-1"}, api_key=key).status == 201
    assert stack.request("GET", "jobs/no-such-job", api_key=key).status == 404  # the cached policy covers it
    # When it is revoked with the client
    revoked = shortener(stack, "keys", "revoke", key_id)
    assert revoked.returncode == 0, revoked.stderr
    # Then the very next request is refused, and the key is listed as revoked
    answer = stack.post_json("/", {"url": "https://example.com/e2e/revoke-2"}, api_key=key)
    assert answer.status == 403, answer.text
    listed = shortener(stack, "keys", "list")
    assert re.search(rf"^{key_id} .* revoked", listed.stdout, re.MULTILINE), listed.stdout
    # While other keys (the stack's admin key) still work
    assert stack.post_json("/", {"url": "https://example.com/e2e/revoke-3"}).status == 201


@pytest.mark.e2e_timeout(60)
def test_public_routes_need_no_key(stack: RunningStack) -> None:
    code = stack.post_json("/", {"url": "https://example.com/e2e/public"}).json()["code"]
    assert stack.request("GET", code, api_key=None).status == 301
    assert stack.request("GET", "/", api_key=None).status == 200
    assert stack.request("GET", ".well-known/apple-app-site-association", api_key=None).status == 200


@pytest.mark.e2e_timeout(120)
def test_a_key_over_its_usage_plan_gets_429(start_stack: StartStack) -> None:
    # Given a usage plan of 1 request per second (burst 1) and 3 requests a day
    stack = start_stack(params={"KeyRateLimit": 1, "KeyBurstLimit": 1, "KeyDailyQuota": 3})
    _, key = create_key(stack, "e2e-limited")
    # When the key sends two requests at once, the second is throttled
    first = stack.post_json("/", {"url": "https://example.com/e2e/limit"}, api_key=key)
    second = stack.post_json("/", {"url": "https://example.com/e2e/limit"}, api_key=key)
    assert first.status == 201, first.text
    assert second.status == 429, second.text
    assert second.json()["error"] == "throttled"
    # And once its daily quota of 3 admitted requests is used, it gets "Limit Exceeded"
    admitted, deadline = 1, time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = stack.post_json("/", {"url": "https://example.com/e2e/limit"}, api_key=key)
        if answer.status == 429 and answer.json()["error"] == "quota_exceeded":
            break
        if answer.status == 200:
            admitted += 1
        else:
            assert answer.json()["error"] == "throttled", answer.text
        time.sleep(0.2)
    else:
        pytest.fail("the quota was never exceeded")
    assert admitted == 3
    # While another key has its own plan budget (another owner: find-if-exists is per owner, so
    # the same URL is a new link of theirs)
    assert stack.post_json("/", {"url": "https://example.com/e2e/limit"}).status == 201


@pytest.mark.e2e_timeout(120)
def test_open_access_shortens_without_a_key_and_limits_a_single_client(start_stack: StartStack) -> None:
    # Given a deliberately public stack: at most 10 POSTs per client per minute
    stack = start_stack(params={"Access": "open", "OpenClientLimit": 10, "OpenClientWindowSeconds": 60})
    # Without a key a direct upload above AnonymousMaxUploadBytes (10 MB) is refused (a POST too)
    big = stack.request(
        "POST",
        "bulk/uploads",
        '{"file_name": "big.csv", "size": 20000000}',
        {"Content-Type": "application/json"},
        api_key=None,
    )
    assert (big.status, big.json()["error"]) == (413, "payload_too_large"), big.text
    # When the client shortens 9 links more without a key, each is created for the anonymous owner
    codes = []
    for number in range(9):
        answer = stack.post_json("/", {"url": f"https://example.com/e2e/open/{number}"}, api_key=None)
        assert answer.status == 201, answer.text
        codes.append(answer.json()["code"])
    # Then its 11th is refused by the per-client rule, before any function runs
    answer = stack.post_json("/", {"url": "https://example.com/e2e/open/11"}, api_key=None)
    assert answer.status == 429, answer.text
    assert answer.json()["error"] == "rate_limited"
    # While its links still redirect, and a wrong key is still refused
    assert stack.request("GET", codes[0], api_key=None).status == 301
    assert stack.request("GET", "jobs/x", api_key=WRONG_KEY).status == 403
    # And a keyed route reached without a key is refused as missing one, not as a wrong one
    listing = stack.request("GET", "links", api_key=None)
    assert (listing.status, listing.json()["error"]) == (403, "missing_api_key"), listing.text
    assert "X-Api-Key" in listing.json()["message"]
