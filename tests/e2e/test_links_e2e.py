"""Link management end to end on the local stack: a takedown with the prod stage cache on, the
blocklist for single links and bulk rows, and a function started under a changed code key.

Until the local stack runs the API's Lambda authorizer (branch `access`), every HTTP caller is the
anonymous owner, who may create links but not manage them: the management calls here go to the
API function through the local Lambda Invoke endpoint, with the authorizer context API Gateway
passes for an admin's key (``as_admin``). Redirects, shortening and uploads go over HTTP."""

import csv
import io
import json
import time
from typing import Any

import pytest

from local_stack.api_gateway import HttpRequest, Route, proxy_event
from tests.e2e.conftest import RunningStack, StartStack

# A shuffle of A-Z a-z 0-9: a CodeAlphabet an operator might set after links exist.
OTHER_ALPHABET = "ZqmBxKcLwTvNpHsJgRfDyEaQkMuVtPbWnYhXoijlrzdeGAFSCIOU0123456789"


def as_admin(
    stack: RunningStack, method: str, path: str, resource: str, parameters: dict[str, str], body: Any = None
) -> tuple[int, Any]:
    """``method path`` answered by the API function as API Gateway would pass it for an admin's
    key (through the local Lambda Invoke endpoint); (status, JSON body or None)."""
    port = int(stack.api_url.rstrip("/").rsplit(":", 1)[1])
    request = HttpRequest(
        method=method,
        target=path,
        headers=[("Host", f"127.0.0.1:{port}"), ("Content-Type", "application/json")],
        body=json.dumps(body).encode() if body is not None else b"",
        source_ip="127.0.0.1",
        port=port,
    )
    function = stack.resources["ApiFunction"]
    event = proxy_event(request, Route(resource, method, function), parameters, [], "local")
    event["requestContext"]["authorizer"] = {
        "principalId": "e2e-admin-key",
        "owner_id": "e2e-admin",
        "role": "admin",
        "key_id": "e2e-admin-key",
        "key_name": "e2e",
    }
    answer = stack.boto3_client("lambda").invoke(FunctionName=function, Payload=json.dumps(event).encode())
    result = json.loads(answer["Payload"].read())
    return int(result["statusCode"]), (json.loads(result["body"]) if result.get("body") else None)


def link_items(stack: RunningStack) -> list[dict[str, Any]]:
    pages = (
        stack.boto3_client("dynamodb").get_paginator("scan").paginate(TableName=stack.resources["LinksTable"])
    )
    return [item for page in pages for item in page["Items"] if not item["code"]["S"].startswith("#")]


def wait_for_job(stack: RunningStack, job_id: str, seconds: float) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        job = dict(stack.request("GET", f"jobs/{job_id}").json())
        if job["status"] == "done" or time.monotonic() > deadline:
            return job
        time.sleep(0.5)


@pytest.mark.e2e_timeout(180)
def test_a_deleted_link_is_410_at_once_with_the_stage_cache_on_and_its_code_never_returns(
    start_stack: StartStack,
) -> None:
    # Given the prod stage (API Gateway caches GET /{code}) and a link that has been followed
    stack = start_stack(params={"Stage": "prod"})
    created = stack.post_json("/", {"url": "https://example.com/e2e/takedown", "code": "e2e-takedown"})
    assert created.status == 201, created.text
    code = created.json()["code"]
    assert stack.request("GET", code).status == 301
    # And the cache really answers: a change made behind the API's back is not seen
    stack.boto3_client("dynamodb").update_item(
        TableName=stack.resources["LinksTable"],
        Key={"code": {"S": code}},
        UpdateExpression="SET #url = :other",
        ExpressionAttributeNames={"#url": "url"},
        ExpressionAttributeValues={":other": {"S": "https://example.com/e2e/not-yet-seen"}},
    )
    assert stack.request("GET", code).headers["Location"] == "https://example.com/e2e/takedown"
    # When the link is deleted through the API
    status, deleted = as_admin(stack, "DELETE", f"/links/{code}", "/links/{code}", {"code": code})
    assert (status, deleted["status"]) == (200, "deleted")
    # Then the very next request gets 410 Gone (JSON for programs, a page for browsers), HEAD too
    gone = stack.request("GET", code, headers={"Accept": "application/json"})
    assert (gone.status, gone.json()["error"]) == (410, "gone")
    assert stack.request("GET", code, headers={"Accept": "text/html"}).status == 410
    head = stack.request("HEAD", code)
    assert (head.status, head.body) == (410, b"")
    # And the code is never given out again: not as a custom code, not for the same URL
    taken = stack.post_json("/", {"url": "https://example.com/e2e/takedown", "code": code})
    assert taken.status == 409
    again = stack.post_json("/", {"url": "https://example.com/e2e/takedown"})
    assert again.status == 201
    assert again.json()["code"] != code


@pytest.mark.e2e_timeout(180)
def test_a_blocked_host_is_refused_as_a_single_link_and_as_a_bulk_row(start_stack: StartStack) -> None:
    # Given a stack whose admin blocked evil.example
    stack = start_stack(time_scale=20)
    status, entry = as_admin(
        stack, "PUT", "/blocklist/Evil.Example.", "/blocklist/{host}", {"host": "Evil.Example."}
    )
    assert (status, entry["host"]) == (200, "evil.example")
    # When a link to a subdomain of it is asked for
    single = stack.post_json("/", {"url": "https://login.evil.example/account"})
    # Then it is refused, saying why
    assert (single.status, single.json()["error"]) == (400, "blocked_host")
    # And in a bulk upload the blocked rows are row errors while the others get codes
    upload = "url\nhttps://evil.example/a\nhttps://fine.example/b\nhttps://WWW.EVIL.EXAMPLE./c\n"
    accepted = stack.request("POST", "bulk", upload, {"Content-Type": "text/csv"})
    assert accepted.status == 202, accepted.text
    job = wait_for_job(stack, accepted.json()["job_id"], 120)
    assert (job["status"], job["succeeded"], job["failed"]) == ("done", 1, 2)
    rows = list(csv.DictReader(io.StringIO(stack.request("GET", f"jobs/{job['job_id']}/results").text)))
    assert [row["error"].split(":")[0] for row in rows] == ["blocked_host", "", "blocked_host"]
    assert [item["url"]["S"] for item in link_items(stack)] == ["https://fine.example/b"]


@pytest.mark.e2e_timeout(240)
def test_a_function_started_with_a_changed_code_key_writes_nothing_and_says_why(
    start_stack: StartStack,
) -> None:
    # Given a stack with links (its counter records the key of this stack's codes)
    stack = start_stack(time_scale=20)
    assert stack.post_json("/", {"url": "https://example.com/e2e/before"}).status == 201
    before = link_items(stack)
    # When it restarts with a CodeAlphabet set after the fact (another code key)
    stack.args += ["--param", f"CodeAlphabet={OTHER_ALPHABET}"]
    stack.restart()
    # Then shortening and uploading are refused with a 503 that says what changed and what to do
    for answer in (
        stack.post_json("/", {"url": "https://example.com/e2e/after"}),
        stack.request("POST", "bulk", "url\nhttps://example.com/e2e/bulk\n", {"Content-Type": "text/csv"}),
    ):
        assert answer.status == 503, answer.text
        assert answer.json()["error"] == "code_key_changed"
        assert "CodeAlphabet" in answer.json()["message"]
    # And rows already queued are not processed: the loop leaves them queued and says why
    queue_url = stack.resources["BulkQueue"]
    stack.boto3_client("sqs").send_message(
        QueueUrl=queue_url,
        MessageBody=json.dumps(
            {"job_id": "e" * 32, "chunk": 0, "first_row": 1, "rows": [["https://example.com/e2e/queued", ""]]}
        ),
    )
    deadline = time.monotonic() + 120
    while "Bulk rows are not processed" not in stack.log() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "Bulk rows are not processed" in stack.log()
    attributes = stack.boto3_client("sqs").get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "1"
    # And nothing was written
    assert link_items(stack) == before
