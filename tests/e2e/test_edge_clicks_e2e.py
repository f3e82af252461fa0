"""Clicks from the edge's logs end to end on the local stack: CloudFront's standard log records
(v2, JSON) written with PutLogEvents into the stack's EdgeLogGroup, as AWS's vended-logs delivery
writes them, reach the collector through the log group's subscription filter and show in
GET /links/{code}/clicks with their referrer's host and CloudFront's country, counted once although
CloudWatch Logs delivers every batch twice (docs/clicks.md, "Clicks from the edge")."""

import json
import time
import uuid
from typing import Any
from urllib.parse import quote

import pytest

from tests.e2e.conftest import StartStack

BROWSER = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.0 Mobile/15E148 Safari/604.1"
)


def edge_record(code: str, at_ms: int, **changes: str) -> str:
    """One request the edge answered, as CloudFront's standard logging (v2) writes it in JSON."""
    fields = {
        "timestamp(ms)": str(at_ms),
        "c-ip": "198.51.100.23",
        "cs-method": "GET",
        "x-host-header": "d111111abcdef8.cloudfront.net",
        "cs-uri-stem": f"/{code}",
        "cs-uri-query": "-",
        "sc-status": "301",
        "cs(Referer)": quote("https://Mail.Example.org/inbox", safe=""),
        "cs(User-Agent)": quote(BROWSER, safe=""),
        "x-edge-result-type": "Hit",
        "x-edge-request-id": uuid.uuid4().hex,
        "c-country": "JP",
        "time-taken": "0.001",
    }
    fields.update(changes)
    return json.dumps(fields)


def report(stack: Any, code: str) -> dict[str, Any]:
    answer = stack.request("GET", f"links/{code}/clicks")
    assert answer.status == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


@pytest.mark.e2e_timeout(240)
def test_edge_records_show_with_referrer_and_country_within_a_minute_counted_once(
    start_stack: StartStack,
) -> None:
    # Given the stack on make run's defaults (the edge on), CloudWatch Logs delivering every batch
    # of every subscribed log group twice
    stack = start_stack(faults=["duplicate-logs=1"])
    assert stack.post_json("/", {"url": "https://example.com/e2e/edge", "code": "e2e-edge"}).status == 201
    # EdgeLogGroup, where CloudFront's delivery writes (/aws/vendedlogs/cloudfront/<stack>-edge on AWS; the
    # local stack names log groups <stack>-<logical id>)
    logs = stack.boto3_client("logs")
    groups = [g["logGroupName"] for g in logs.describe_log_groups()["logGroups"]]
    [group] = [
        name
        for name in groups
        if name.endswith("EdgeLogGroup") or name.startswith("/aws/vendedlogs/cloudfront/")
    ]
    logs.create_log_stream(logGroupName=group, logStreamName="cloudfront-delivery")
    now = int(time.time() * 1000)
    # When CloudFront's delivery writes three redirects of the link (a hit, a miss, one without a
    # referrer), a 404 of another code and a HEAD of the link
    records = [
        edge_record("e2e-edge", now),
        edge_record("e2e-edge", now, **{"x-edge-result-type": "Miss"}),
        edge_record("e2e-edge", now, **{"cs(Referer)": "-", "c-country": "BR"}),
        edge_record("e2e-no-such-code", now, **{"sc-status": "404"}),
        edge_record("e2e-edge", now, **{"cs-method": "HEAD"}),
    ]
    logs.put_log_events(
        logGroupName=group,
        logStreamName="cloudfront-delivery",
        logEvents=[{"timestamp": now, "message": message} for message in records],
    )
    # Then within 60 s the link reads 3 clicks, with the referrer's host and CloudFront's countries
    deadline = time.monotonic() + 60
    found = report(stack, "e2e-edge")
    while found["total"] < 3 and time.monotonic() < deadline:
        time.sleep(0.5)
        found = report(stack, "e2e-edge")
    assert (found["total"], found["humans"], found["bots"]) == (3, 3, 0)
    assert found["referrers"] == [{"value": "mail.example.org", "clicks": 2}]
    assert found["countries"] == [{"value": "JP", "clicks": 2}, {"value": "BR", "clicks": 1}]
    assert found["devices"] == [{"value": "mobile", "clicks": 3}]
    # And the second delivery of the batch, and a late one, changes nothing
    time.sleep(2.5)
    assert report(stack, "e2e-edge")["total"] == 3
    assert "duplicate-logs" in stack.log()
    # And no viewer address is kept (the day's visitor key is bytes: shown as their repr)
    items = stack.boto3_client("dynamodb").scan(TableName=stack.resources["ClicksTable"])["Items"]
    assert "198.51.100.23" not in json.dumps(items, default=repr)
    # And a click on the API's own URL is still counted from the access log, once, without a
    # referrer (API Gateway's access log cannot carry one)
    assert stack.request("GET", "e2e-edge", api_key=None, headers={"User-Agent": BROWSER}).status == 301
    deadline = time.monotonic() + 60
    while report(stack, "e2e-edge")["total"] < 4 and time.monotonic() < deadline:
        time.sleep(0.5)
    found = report(stack, "e2e-edge")
    assert found["total"] == 4
    assert found["referrers"] == [{"value": "mail.example.org", "clicks": 2}]
