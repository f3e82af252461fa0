"""Link management end to end on the local stack, over HTTP with API keys: a takedown with the
prod stage cache on, the blocklist for single links and bulk rows, a function started under a
changed code key, and members who see and change only their own links and jobs. The stack's own
key (the harness sends it) is an admin's; members' keys are made with `shortener keys create`."""

import csv
import io
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import RunningStack, StartStack, _factory
from tests.e2e.test_access_e2e import create_key

# A shuffle of A-Z a-z 0-9: a CodeAlphabet an operator might set after links exist.
OTHER_ALPHABET = "ZqmBxKcLwTvNpHsJgRfDyEaQkMuVtPbWnYhXoijlrzdeGAFSCIOU0123456789"


def send_json(stack: RunningStack, method: str, path: str, payload: Any, key: str | None = None) -> Any:
    """``method path`` with a JSON body, as the stack's admin unless ``key`` is given."""
    headers = {"Content-Type": "application/json"}
    if key is None:
        return stack.request(method, path, json.dumps(payload), headers)
    return stack.request(method, path, json.dumps(payload), headers, api_key=key)


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


@pytest.fixture(scope="module")
def prod_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """One stack on the prod stage (API Gateway caches GET /{code}), shared by this module's tests."""
    started: list[RunningStack] = []
    yield _factory(tmp_path_factory.mktemp("prod-stack"), started)(params={"Stage": "prod", "Edge": "off"})
    for running in started:
        running.stop()


@pytest.mark.e2e_timeout(180)
def test_a_deleted_link_is_410_at_once_with_the_stage_cache_on_and_its_code_never_returns(
    prod_stack: RunningStack,
) -> None:
    # Given the prod stage (API Gateway caches GET /{code}) and a link that has been followed
    stack = prod_stack
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
    deleted = stack.request("DELETE", f"links/{code}")
    assert (deleted.status, deleted.json()["status"]) == (200, "deleted")
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


def _status_within(stack: RunningStack, code: str, wanted: int, seconds: float) -> tuple[int, float]:
    """Follow ``code`` until it answers ``wanted`` (or ``seconds`` pass): the last status, and when."""
    started = time.monotonic()
    while True:
        status = stack.request("GET", code, headers={"Accept": "application/json"}).status
        elapsed = time.monotonic() - started
        if status == wanted or elapsed > seconds:
            return status, elapsed
        time.sleep(0.5)


@pytest.mark.e2e_timeout(180)
def test_blocking_a_host_takes_its_cached_links_down_and_unblocking_restores_them(
    prod_stack: RunningStack,
) -> None:
    # Given links to a host and to its subdomain, followed (so the stage cache holds their 301s),
    # and a link to the host its owner disabled before
    stack = prod_stack
    codes = [
        stack.post_json("/", {"url": url}).json()["code"]
        for url in (
            "https://phish.example/e2e",
            "https://login.phish.example/e2e",
            "https://phish.example/old",
        )
    ]
    for code in codes[:2]:
        assert stack.request("GET", code).status == 301
    assert (
        stack.request(
            "PATCH",
            f"links/{codes[2]}",
            json.dumps({"status": "disabled"}),
            {"Content-Type": "application/json"},
        ).status
        == 200
    )
    # When the admin blocks the host
    blocked = send_json(stack, "PUT", "blocklist/phish.example", {"reason": "phishing"})
    assert blocked.status == 200, blocked.text
    assert (blocked.json()["links_taken_down"], blocked.json()["stage_cache_refreshed"]) == (3, 3)
    # Then its links answer 410 within 30 s (at once: the cache entries were refreshed)
    for code in codes[:2]:
        status, elapsed = _status_within(stack, code, 410, 30)
        assert status == 410, (code, elapsed)
    # And when it is unblocked, the links the block took down redirect again; the disabled one not
    assert stack.request("DELETE", "blocklist/phish.example").status == 204
    for code in codes[:2]:
        status, elapsed = _status_within(stack, code, 301, 30)
        assert status == 301, (code, elapsed)
    assert stack.request("GET", codes[2]).status == 410


@pytest.mark.e2e_timeout(180)
def test_a_blocked_host_is_refused_as_a_single_link_and_as_a_bulk_row(start_stack: StartStack) -> None:
    # Given a stack whose admin blocked evil.example
    stack = start_stack(time_scale=20)
    entry = send_json(stack, "PUT", "blocklist/Evil.Example.", {"reason": "phishing"})
    assert (entry.status, entry.json()["host"]) == (200, "evil.example")
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


@pytest.mark.e2e_timeout(150)
def test_a_member_sees_and_changes_only_their_own_links_and_jobs(start_stack: StartStack) -> None:
    # Given two members, each with a key, and a link and a job of the first
    stack = start_stack(time_scale=20)
    _, alice = create_key(stack, "e2e-alice")
    _, bob = create_key(stack, "e2e-bob")
    made = send_json(stack, "POST", "", {"url": "https://example.com/e2e/alice", "code": "e2e-alice"}, alice)
    assert made.status == 201, made.text
    job = stack.request(
        "POST",
        "bulk",
        "url\nhttps://example.com/e2e/alice/bulk\n",
        {"Content-Type": "text/csv"},
        api_key=alice,
    )
    assert job.status == 202, job.text
    job_id = job.json()["job_id"]
    # When the second member looks for them, changes and deletes the link
    answers = {
        "show": stack.request("GET", "links/e2e-alice", api_key=bob),
        "change": send_json(stack, "PATCH", "links/e2e-alice", {"url": "https://example.com/e2e/bob"}, bob),
        "delete": stack.request("DELETE", "links/e2e-alice", api_key=bob),
        "job": stack.request("GET", f"jobs/{job_id}", api_key=bob),
        "results": stack.request("GET", f"jobs/{job_id}/results", api_key=bob),
    }
    # Then each is a 404, as if they did not exist, and the lists hold none of them
    assert {name: answer.status for name, answer in answers.items()} == dict.fromkeys(answers, 404)
    assert stack.request("GET", "links", api_key=bob).json()["links"] == []
    assert stack.request("GET", "jobs", api_key=bob).json()["jobs"] == []
    # And the link still leads where its owner pointed it, who sees it and the job
    assert stack.request("GET", "e2e-alice").headers["Location"] == "https://example.com/e2e/alice"
    # (the bulk row may have become a link of hers by now: the lists are compared as sets)
    assert "e2e-alice" in {
        link["code"] for link in stack.request("GET", "links", api_key=alice).json()["links"]
    }
    assert [each["job_id"] for each in stack.request("GET", "jobs", api_key=alice).json()["jobs"]] == [job_id]
    # And an admin (the stack's key) sees the member's link, listed by its owner
    shown = stack.request("GET", "links/e2e-alice")
    assert (shown.status, shown.json()["owner"]) == (200, "e2e-alice")
    listed = stack.request("GET", "links?owner=e2e-alice").json()["links"]
    assert "e2e-alice" in {link["code"] for link in listed}
    # And a member may not manage the blocklist
    refused = send_json(stack, "PUT", "blocklist/evil.example", {}, alice)
    assert (refused.status, refused.json()["error"]) == (403, "forbidden")
