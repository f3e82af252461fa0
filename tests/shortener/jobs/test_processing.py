"""Bulk jobs end to end inside one process under moto: upload through the API handler, drain the
queue with a loop (real stores, real queue semantics), read status and results through the API."""

import json
import threading
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import boto3
import pytest

from shortener import aws as aws_clients
from shortener.aws import DynamoDBTable
from shortener.jobs.bulk import ChunkProcessor
from shortener.jobs.message_model import ChunkMessage
from shortener.jobs.model import RecordedChunk, RowOutcome
from shortener.jobs.store import JobsStore
from shortener.links.codes import code_generator
from shortener.links.store import LinksStore
from shortener.loops.model import LoopInvocation
from shortener.loops.poller import LoopOptions, LoopReport, PollLoop
from shortener.loops.queue import BulkQueue
from shortener.loops.store import LoopsStore
from shortener.services import restarter as restarter_services
from shortener.services.links import link_service
from shortener.settings import poller_settings
from tests.support.api import call, get_code, post_json
from tests.support.bulk import (
    cancel_for_throttling,
    create_bulk_queues,
    csv_text,
    dead_letter_queue_url,
    parse_results,
    throttle,
)
from tests.support.events import api_event

pytestmark = pytest.mark.integration

DRAIN_DEADLINE_SECONDS = 120.0


class RecordingStarter:
    def __init__(self) -> None:
        self.started: list[tuple[str, LoopInvocation]] = []

    def start(self, function_name: str, loop: LoopInvocation) -> None:
        self.started.append((function_name, loop))


class RecordingQueue(BulkQueue):
    """The queue, remembering what it received, so a test can make those messages visible again
    at once (as their visibility timeout would, but without waiting on the clock)."""

    def __init__(self) -> None:
        super().__init__()
        self.receipts: list[str] = []

    def receive(self, queue_url: str, **options: Any) -> list[dict[str, Any]]:
        messages = super().receive(queue_url, **options)
        self.receipts += [message["ReceiptHandle"] for message in messages]
        return messages

    def redeliver_now(self, queue_url: str) -> None:
        for receipt in self.receipts:
            self.client.change_message_visibility(
                QueueUrl=queue_url, ReceiptHandle=receipt, VisibilityTimeout=0
            )


class CrashingDeletes(RecordingQueue):
    """The queue, except that the first ``crashes`` deletes die (the loop crashed after writing)."""

    def __init__(self, crashes: int) -> None:
        super().__init__()
        self.crashes = crashes

    def delete(self, queue_url: str, receipt_handles: Sequence[str]) -> int:
        if self.crashes:
            self.crashes -= 1
            raise RuntimeError("the loop died before deleting")
        return super().delete(queue_url, receipt_handles)


@pytest.fixture
def bulk_env(tables: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("FIND_IF_EXISTS", "false")
    monkeypatch.setenv("RECEIVE_WAIT_SECONDS", "0")
    return tables


def make_queue(monkeypatch: pytest.MonkeyPatch, **overrides: int) -> str:
    url = create_bulk_queues(**overrides)
    monkeypatch.setenv("BULK_QUEUE_URL", url)
    return url


@pytest.fixture
def queue_url(bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    return make_queue(monkeypatch)


@pytest.fixture
def api(bulk_env: dict[str, str]) -> ModuleType:
    from functions.api import app

    app.links.cache_clear()
    return app


def a_loop(tables: dict[str, str], queue_url: str) -> LoopInvocation:
    token = LoopsStore(tables["TOKENS_TABLE"]).create(queue_url)
    return token.invocation()


def queue_is_empty(queue_url: str) -> bool:
    """No message left in the queue: none visible, in flight or delayed."""
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )["Attributes"]
    return not any(int(count) for count in attributes.values())


def chunk_processor(client: Any = None) -> ChunkProcessor:
    """A ChunkProcessor composed as the poller composes it (optionally over another client)."""
    settings = poller_settings()
    return ChunkProcessor(
        LinksStore(settings.LINKS_TABLE, client=client),
        JobsStore(settings.JOBS_TABLE, client=client),
        link_service(settings),
        code_generator(settings.CODE_ALPHABET, settings.CODE_KEY),
        settings.url_policy(),
        strategy=settings.CODE_STRATEGY,
        find_if_exists=settings.FIND_IF_EXISTS,
    )


def drain(
    tables: dict[str, str],
    queue_url: str,
    *,
    until: Callable[[], bool] | None = None,
    queue: BulkQueue | None = None,
    links_client: Any = None,
) -> LoopReport:
    """Run one loop invocation over the queue, composed as the poller composes it, until ``until``
    holds (by default: the queue is empty), then let it end as its time runs out. The loop checks
    its remaining time before each iteration, so the invocation ends at the event the test needs
    however slow the machine is; DRAIN_DEADLINE_SECONDS only bounds a hang."""
    from shortener.observability import metrics  # after the fixtures set the metrics namespace

    processor = chunk_processor(links_client)
    loop = PollLoop(
        LoopsStore(tables["TOKENS_TABLE"]),
        queue or BulkQueue(),
        RecordingStarter(),
        processor,
        metrics=metrics,
        options=LoopOptions(reinvoke_margin_seconds=1, receive_wait_seconds=0, error_pause_seconds=0.1),
    )
    done = until or (lambda: queue_is_empty(queue_url))
    deadline = time.monotonic() + DRAIN_DEADLINE_SECONDS

    def remaining_seconds() -> float:
        return 0.0 if done() or time.monotonic() > deadline else DRAIN_DEADLINE_SECONDS

    invocation = a_loop(tables, queue_url)
    return loop.run(invocation, "test-poller", remaining_seconds)


def upload(api: ModuleType, text: str) -> str:
    answer = call(api, api_event("POST", "/bulk", body=text.encode(), headers={"Content-Type": "text/csv"}))
    assert answer["statusCode"] == 202, answer["body"]
    return str(json.loads(answer["body"])["job_id"])


def status(api: ModuleType, job_id: str) -> dict[str, Any]:
    answer = call(
        api,
        api_event("GET", f"/jobs/{job_id}", resource="/jobs/{job_id}", path_parameters={"job_id": job_id}),
    )
    assert answer["statusCode"] == 200
    return dict(json.loads(answer["body"]))


def results(api: ModuleType, job_id: str) -> list[dict[str, str]]:
    answer = call(
        api,
        api_event(
            "GET",
            f"/jobs/{job_id}/results",
            resource="/jobs/{job_id}/results",
            path_parameters={"job_id": job_id},
        ),
    )
    assert answer["statusCode"] == 200
    assert "text/csv" in str(answer.get("headers") or answer.get("multiValueHeaders"))
    assert answer["body"].startswith("row,url,code,short_url,error\r\n")
    return parse_results(answer["body"])


def link_count(tables: dict[str, str]) -> int:
    client = boto3.client("dynamodb")
    pages = client.get_paginator("scan").paginate(TableName=tables["LINKS_TABLE"])
    return sum(1 for page in pages for item in page["Items"] if not item["code"]["S"].startswith("#"))


def send_raw(queue_url: str, body: str) -> None:
    boto3.client("sqs").send_message(QueueUrl=queue_url, MessageBody=body)


def wait_until(condition: Callable[[], bool]) -> None:
    assert condition()


def test_rows_reach_done_and_results_follow_input_order(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str
) -> None:
    # Given an upload of 600 rows, every seventh of them not a URL
    rows = [["not a url" if n % 7 == 0 else f"https://example.com/{n}"] for n in range(600)]
    job_id = upload(api, csv_text(rows))
    # When a loop drains the queue
    report = drain(bulk_env, queue_url)
    # Then the job is done with every row counted once
    assert report.reinvoked and not report.stopped
    job = status(api, job_id)
    invalid = sum(1 for n in range(600) if n % 7 == 0)
    assert (job["status"], job["total"], job["succeeded"], job["failed"]) == (
        "done",
        600,
        600 - invalid,
        invalid,
    )
    # And the results have one line per row in input order, with a code or an error each
    lines = results(api, job_id)
    assert [int(line["row"]) for line in lines] == list(range(1, 601))
    for n, line in enumerate(lines):
        if n % 7 == 0:
            assert (line["code"], line["short_url"]) == ("", "")
            assert line["error"].startswith("invalid_url: ")
        else:
            assert line["url"] == f"https://example.com/{n}"
            assert line["short_url"] == f"https://sho.rt/{line['code']}"
            assert line["error"] == ""
    # And each code redirects to its URL
    assert len({line["code"] for line in lines if line["code"]}) == 600 - invalid
    for line in [line for line in lines if line["code"]][:50]:
        followed = get_code(api, line["code"])
        assert followed["statusCode"] == 301, line
        assert line["url"] in str(followed.get("headers") or followed.get("multiValueHeaders"))
    # And the queue is empty
    assert boto3.client("sqs").receive_message(QueueUrl=queue_url, WaitTimeSeconds=0).get("Messages") is None


def test_custom_codes_are_claimed_and_a_taken_code_is_a_row_error(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str
) -> None:
    # Given 'promo' already points elsewhere, and an upload asking for 'promo', 'fresh' twice and
    # a reserved word
    assert post_json(api, {"url": "https://other.example/", "code": "promo"})["statusCode"] == 201
    text = csv_text(
        [
            ["https://a.example/", "promo"],
            ["https://b.example/", "fresh"],
            ["https://c.example/", "fresh"],
            ["https://b.example/", "fresh"],
            ["https://d.example/", "jobs"],
            ["https://e.example/", ""],
        ],
        header=("url", "code"),
    )
    job_id = upload(api, text)
    # When it is processed
    drain(bulk_env, queue_url)
    # Then the first row asking for a free code gets it, later rows for the same URL share it,
    # and the others are row errors
    lines = results(api, job_id)
    assert [line["error"].split(":")[0] for line in lines] == [
        "code_taken",
        "",
        "code_taken",
        "",
        "invalid_code",
        "",
    ]
    assert [line["code"] for line in lines[1:4]] == ["fresh", "", "fresh"]
    assert lines[5]["code"]
    assert status(api, job_id)["failed"] == 3
    # And each link made records its job and its row of the file (a custom code's, a generated one's)
    links = LinksStore(bulk_env["LINKS_TABLE"])
    made = {code: links.get(code) for code in ("fresh", lines[5]["code"])}
    assert {code: (link.job_id, link.row) for code, link in made.items() if link} == {
        "fresh": (job_id, 2),
        lines[5]["code"]: (job_id, 6),
    }


def test_a_message_delivered_twice_gets_the_same_codes_and_is_counted_once(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str
) -> None:
    # Given an uploaded job whose message SQS delivers twice (at-least-once delivery)
    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(40)]))
    sqs = boto3.client("sqs")
    [message] = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0)["Messages"]
    sqs.change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
    )
    send_raw(queue_url, message["Body"])
    # When a loop processes both copies
    report = drain(bulk_env, queue_url)
    # Then both were processed, the rows counted once, and one link exists per row
    assert report.messages == 2
    job = status(api, job_id)
    assert (job["status"], job["succeeded"], job["failed"]) == ("done", 40, 0)
    assert link_count(bulk_env) == 40
    assert len({line["code"] for line in results(api, job_id)}) == 40


def test_a_crash_between_writing_and_deleting_redelivers_with_the_same_codes(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a loop that dies after writing a batch but before deleting it (the message stays
    # invisible for the whole first run: a redelivery there would depend on the machine's speed)
    queue_url = make_queue(monkeypatch, visibility_timeout=60)
    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(30)]))
    crashing = CrashingDeletes(crashes=1)
    report = drain(bulk_env, queue_url, queue=crashing, until=lambda: crashing.crashes == 0)
    assert report.errors == 1
    first = status(api, job_id)
    codes_before = [line["code"] for line in results(api, job_id)]
    # When the message is redelivered (its visibility timeout ended) and processed again
    crashing.redeliver_now(queue_url)
    report = drain(bulk_env, queue_url)
    # Then it was recognised as done: same codes, counted once, no extra links
    assert report.messages == 1
    assert first["succeeded"] == status(api, job_id)["succeeded"] == 30
    assert [line["code"] for line in results(api, job_id)] == codes_before
    assert link_count(bulk_env) == 30


def test_a_crash_between_recording_outcomes_and_counting_them_counts_on_redelivery(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a loop that dies right after a chunk's outcomes are recorded, before they are counted
    # (the message stays invisible for the whole first run)
    queue_url = make_queue(monkeypatch, visibility_timeout=60)
    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(20)]))
    real_count = JobsStore.count_chunk
    crashes = [RuntimeError("the loop died before counting")]

    def count_or_crash(self: JobsStore, *args: Any, **kwargs: Any) -> bool:
        if crashes:
            raise crashes.pop()
        return real_count(self, *args, **kwargs)

    monkeypatch.setattr(JobsStore, "count_chunk", count_or_crash)
    queue = RecordingQueue()
    drain(bulk_env, queue_url, queue=queue, until=lambda: not crashes)
    assert status(api, job_id)["succeeded"] == 0
    # When the message comes back (its visibility timeout ended) and is processed again
    queue.redeliver_now(queue_url)
    drain(bulk_env, queue_url)
    # Then the recorded chunk is counted now, once, with the same links
    job = status(api, job_id)
    assert (job["status"], job["succeeded"]) == ("done", 20)
    assert link_count(bulk_env) == 20


def test_a_failing_message_does_not_hold_up_the_others_and_ends_in_the_dead_letter_queue(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a queue with a short visibility timeout and two receives before the DLQ, a poison
    # message and a good job
    queue_url = make_queue(monkeypatch, visibility_timeout=1, max_receive_count=2)
    send_raw(queue_url, '{"job_id": "this is not a chunk"}')
    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(10)]))
    # When the loop runs until the queue is empty: the poison message received twice, then moved
    report = drain(bulk_env, queue_url)
    # Then the good message was processed and deleted while the poison one failed each time
    assert status(api, job_id)["status"] == "done"
    assert report.failed_messages >= 2
    assert not report.stopped and report.reinvoked
    # And the poison message is in the dead-letter queue, not in the bulk queue
    sqs = boto3.client("sqs")
    assert sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0).get("Messages") is None
    [dead] = sqs.receive_message(QueueUrl=dead_letter_queue_url(), WaitTimeSeconds=0)["Messages"]
    assert "not a chunk" in dead["Body"]


def test_throttling_is_retried_and_every_row_counted_once(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str
) -> None:
    # Given a DynamoDB client that throttles link writes, the chunk's conditional put and the
    # counter and job updates a few times each
    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(60)]))
    client = aws_clients.dynamodb()  # the layer's client, with its retry configuration
    throttled = [
        throttle(client, "BatchWriteItem", 3),
        throttle(client, "PutItem", 2),
        throttle(client, "UpdateItem", 4),
    ]
    # When the loop processes the job through that client (backoff makes it slower)
    drain(bulk_env, queue_url, links_client=client)
    # Then the throttled calls were retried and the job completed, each row counted once
    assert [injected() for injected in throttled] == [3, 2, 4]
    job = status(api, job_id)
    assert (job["status"], job["succeeded"], job["failed"]) == ("done", 60, 0)
    assert link_count(bulk_env) == 60


def test_unprocessed_batch_items_are_retried_until_written(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str
) -> None:
    # Given BatchWriteItem answers that leave items unprocessed (DynamoDB's partial throttling)
    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(50)]))
    client = boto3.client("dynamodb")
    real_batch_write = client.batch_write_item
    answers: list[int] = []
    lock = threading.Lock()

    def partly_unprocessed(**kwargs: Any) -> Any:
        table, requests = next(iter(kwargs["RequestItems"].items()))
        with lock:
            leave_some = len(answers) < 3 and len(requests) > 1
            if leave_some:
                answers.append(len(requests) - 1)
        if leave_some:
            written = real_batch_write(RequestItems={table: requests[:1]})
            return {**written, "UnprocessedItems": {table: requests[1:]}}
        return real_batch_write(**kwargs)

    client.batch_write_item = partly_unprocessed  # type: ignore[method-assign]
    # When the loop processes the job
    drain(bulk_env, queue_url, links_client=client)
    # Then the unprocessed items were written on later rounds
    assert len(answers) == 3
    assert status(api, job_id)["succeeded"] == 50
    assert link_count(bulk_env) == 50


def test_results_are_safe_to_open_in_a_spreadsheet(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str
) -> None:
    # Given rows whose cells a spreadsheet would run as formulas
    text = csv_text(
        [
            ['=HYPERLINK("https://evil.example/","x")', ""],
            ["https://example.com/ok", "-dash"],
            ["@SUM(1)", ""],
        ],
        header=("url", "code"),
    )
    job_id = upload(api, text)
    drain(bulk_env, queue_url)
    # Then every such cell starts with a quote
    lines = results(api, job_id)
    assert lines[0]["url"] == '\'=HYPERLINK("https://evil.example/","x")'
    assert lines[1]["code"] == "'-dash"
    assert lines[1]["short_url"] == "https://sho.rt/-dash"
    assert lines[2]["url"] == "'@SUM(1)"


def test_with_find_if_exists_known_urls_and_duplicates_share_one_code(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given find-if-exists, a URL that already has a link, and an upload repeating URLs
    monkeypatch.setenv("FIND_IF_EXISTS", "true")
    for getter in (poller_settings,):
        getter.cache_clear()
    from shortener.settings import api_settings

    api_settings.cache_clear()
    api.links.cache_clear()
    queue_url = make_queue(monkeypatch)
    existing = json.loads(post_json(api, {"url": "https://known.example/"})["body"])["code"]
    rows = [
        ["https://known.example/"],
        ["https://x.example/"],
        ["https://y.example/"],
        ["https://x.example/"],
    ]
    rows += [[f"https://x.example/{n}"] for n in range(300)] + [["https://y.example/"]]
    job_id = upload(api, csv_text(rows))
    # When it is processed (two messages: 250 rows and 55)
    drain(bulk_env, queue_url)
    # Then the known URL keeps its code and each repeated URL has one code, across messages too
    lines = results(api, job_id)
    assert lines[0]["code"] == existing
    assert lines[1]["code"] == lines[3]["code"]
    assert lines[2]["code"] == lines[-1]["code"]
    assert len({line["code"] for line in lines}) == 3 + 300
    assert status(api, job_id)["succeeded"] == len(rows)


def test_results_of_a_very_large_job_continue_on_a_linked_page(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a processed job of 600 rows (3 chunks) and pages of about one chunk
    from shortener.services import api as api_services

    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(600)]))
    drain(bulk_env, queue_url)
    monkeypatch.setattr(api_services, "RESULTS_PAGE_BYTES", 10_000)
    api_services.job_queries.cache_clear()
    # When the results are read page by page, following the Link header
    rows: list[int] = []
    path = f"/jobs/{job_id}/results"
    query: dict[str, str] | None = None
    for _ in range(5):
        event = api_event("GET", path, resource="/jobs/{job_id}/results", path_parameters={"job_id": job_id})
        event["queryStringParameters"] = query
        answer = call(api, event)
        assert answer["statusCode"] == 200
        rows += [int(line["row"]) for line in parse_results(answer["body"])]
        headers = answer.get("multiValueHeaders") or {}
        link = (headers.get("Link") or [None])[0]
        if not link:
            break
        query = {"from_chunk": link.split("from_chunk=")[1].split(">")[0]}
    # Then every row came exactly once, in order
    assert rows == list(range(1, 601))


def test_links_to_the_shortener_itself_are_row_errors(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str
) -> None:
    # Given rows pointing at the host the upload arrived on (sho.rt in these events)
    job_id = upload(api, csv_text([["https://sho.rt/abcd"], ["https://example.com/fine"]]))
    drain(bulk_env, queue_url)
    lines = results(api, job_id)
    assert lines[0]["error"].startswith("invalid_url: ")
    assert lines[1]["code"]


def test_under_the_hash_strategy_rows_get_hash_codes_and_a_redelivery_the_same_ones(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the hash strategy and a job whose message is delivered twice
    monkeypatch.setenv("CODE_STRATEGY", "hash")
    poller_settings.cache_clear()
    queue_url = make_queue(monkeypatch)
    job_id = upload(api, csv_text([[f"https://example.com/h/{n}"] for n in range(30)]))
    sqs = boto3.client("sqs")
    [message] = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0)["Messages"]
    sqs.change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
    )
    send_raw(queue_url, message["Body"])
    # When both copies are processed
    drain(bulk_env, queue_url)
    # Then every row has a hash code (a prefix of the URL's digest), counted once
    lines = results(api, job_id)
    # (a code starting with "-" is quoted in the CSV, so spreadsheets do not read it as a formula)
    codes = [line["code"].removeprefix("'") for line in lines]
    generator = code_generator(poller_settings().CODE_ALPHABET, poller_settings().CODE_KEY)
    assert codes == [next(generator.hash_candidates(line["url"])) for line in lines]
    assert status(api, job_id)["succeeded"] == 30
    assert link_count(bulk_env) == 30


def test_a_row_throttled_beyond_the_retries_fails_its_message_not_the_row(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a job whose custom code is in the generated space (its write is a transaction), and
    # DynamoDB throttling every try of that transaction on the first delivery
    monkeypatch.setattr(DynamoDBTable, "sleep", staticmethod(lambda _: None))
    queue_url = make_queue(monkeypatch, visibility_timeout=1)
    custom = code_generator(poller_settings().CODE_ALPHABET, poller_settings().CODE_KEY).encode(10**9)
    job_id = upload(
        api,
        csv_text(
            [["https://example.com/custom", custom], ["https://example.com/plain", ""]], ("url", "code")
        ),
    )
    injected = cancel_for_throttling(aws_clients.dynamodb(), times=8, items=3)
    # When a loop processes it
    first = drain(bulk_env, queue_url, until=lambda: injected() == 8)
    # Then the message failed (it comes back), and no row was given a wrong outcome
    assert (first.failed_messages, injected()) == (1, 8)
    assert status(api, job_id)["status"] == "queued"
    assert results(api, job_id) == []
    # And once the throttling has passed, the redelivery gives every row its code
    drain(bulk_env, queue_url)
    lines = results(api, job_id)
    assert lines[0]["code"] == custom
    assert all(line["code"] and not line["error"] for line in lines)
    assert status(api, job_id)["status"] == "done"


# ---- dead letters: every job ends ---------------------------------------------------------------


def refusing_link_writes() -> Any:
    """A DynamoDB client whose BatchWriteItem is always refused (a bug that no retry cures): every
    message with generated rows fails on every delivery."""
    client = boto3.client("dynamodb")
    throttle(client, "BatchWriteItem", 10_000, error_code="ValidationException")
    return client


def restarter_for(queue_url: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The restarter function, managing the test's bulk queue; its loop starts are recorded."""
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "restarter")
    monkeypatch.setenv("LOOP_FUNCTIONS", json.dumps({queue_url.rsplit("/", 1)[-1]: "test-poller"}))
    monkeypatch.setenv("MIN_LOOPS", "1")
    monkeypatch.setenv("MAX_LOOPS", "2")
    # A dead letter's last attempt is visible at once (the tests need not wait for a burst to pass).
    monkeypatch.setenv("LAST_ATTEMPT_DELAY_SECONDS", "0")
    from functions.restarter import app
    from shortener.settings import restarter_settings

    restarter_settings.cache_clear()
    monkeypatch.setattr(app.metrics, "namespace", "BulkShortenerTests")
    for cached in (
        restarter_services.tokens,
        restarter_services.scaler,
        restarter_services.targets,
        restarter_services.dead_letters,
    ):
        cached.cache_clear()
    restarter_services.scaler().starter = RecordingStarter()
    return app


def run_restarter(restarter: ModuleType) -> dict[str, Any]:
    from tests.support.lambda_context import FakeLambdaContext

    return dict(
        restarter.lambda_handler({"source": "aws.events"}, FakeLambdaContext(function_name="restarter"))
    )


def dead_letters_waiting() -> int:
    """Messages in the dead-letter queue, visible or not."""
    names: Any = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=dead_letter_queue_url(), AttributeNames=names
    )
    return sum(int(attributes["Attributes"][name]) for name in names)


def last_attempt_dies(queue_url: str) -> None:
    """The message the restarter sent back for its last attempt dies with the loop that took it
    as often as SQS allows: it is in the dead-letter queue again, marked."""
    sqs = boto3.client("sqs")
    [message] = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1)["Messages"]
    assert ChunkMessage.model_validate_json(message["Body"]).last_attempt
    sqs.send_message(QueueUrl=dead_letter_queue_url(), MessageBody=message["Body"])
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def test_a_dead_lettered_message_gets_a_last_attempt_and_its_rows_fail_with_that_attempts_reason(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a queue that dead-letters a message after two receives, a job of 300 generated rows
    # (two messages) whose link writes are always refused, and a job of custom codes that is fine
    queue_url = make_queue(monkeypatch, visibility_timeout=1, max_receive_count=2)
    poisoned = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(300)]))
    fine = upload(api, csv_text([["https://example.com/fine", "fine-code"]], ("url", "code")))
    # When the loops have received the poisoned messages until SQS moved them to the DLQ, and the
    # scheduled restarter runs
    drain(bulk_env, queue_url, until=lambda: dead_letters_waiting() == 2, links_client=refusing_link_writes())
    assert status(api, poisoned)["status"] == "queued"
    report = run_restarter(restarter_for(queue_url, monkeypatch))
    # Then no row is failed yet: both messages are back in their queue for a last attempt
    [sent_back] = report["dead_letters"]
    assert (sent_back["retried"], sent_back["settled"], sent_back["rows_failed"]) == (2, 0, 0)
    assert dead_letters_waiting() == 0
    assert status(api, poisoned)["failed"] == 0
    # When a loop makes that attempt and the writes are still refused
    drain(bulk_env, queue_url, links_client=refusing_link_writes())
    # Then the job is done, each row failed with the reason of that last attempt, in input order
    job = status(api, poisoned)
    assert (job["status"], job["succeeded"], job["failed"]) == ("done", 0, 300)
    lines = results(api, poisoned)
    assert [int(line["row"]) for line in lines] == list(range(1, 301))
    reason = (
        "processing_failed: this row's message failed on every delivery and on its last attempt (ClientError)"
    )
    assert all(line["error"].startswith(reason) for line in lines), lines[0]
    assert all(line["url"] == f"https://example.com/{n}" and not line["code"] for n, line in enumerate(lines))
    # And the other job was not touched, and no message is left anywhere
    assert status(api, fine)["succeeded"] == 1
    assert dead_letters_waiting() == 0
    assert queue_is_empty(queue_url)


def test_a_dead_letter_whose_last_attempt_never_finished_has_its_rows_failed_by_the_restarter(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a 20-row job whose message was dead-lettered, sent back for its last attempt, and
    # dead-lettered again (every loop that took it died)
    queue_url = make_queue(monkeypatch, visibility_timeout=1, max_receive_count=1)
    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(20)]))
    drain(bulk_env, queue_url, until=lambda: dead_letters_waiting() == 1, links_client=refusing_link_writes())
    restarter = restarter_for(queue_url, monkeypatch)
    run_restarter(restarter)
    last_attempt_dies(queue_url)
    # When the restarter runs again
    report = run_restarter(restarter)
    # Then the rows are failed with the dead-letter reason, and counted
    job = status(api, job_id)
    assert (job["status"], job["succeeded"], job["failed"]) == ("done", 0, 20)
    assert all(
        line["error"].startswith("dead_letter: this row's message failed 1 times")
        for line in results(api, job_id)
    )
    [settled] = report["dead_letters"]
    assert (settled["settled"], settled["rows_failed"], settled["retried"]) == (1, 20, 0)
    assert dead_letters_waiting() == 0


def dead_lettered_job(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> tuple[str, str]:
    """(queue URL, job id) of a 20-row job whose one message SQS moved to the dead-letter queue
    on its first failed delivery, and again after its last attempt died with the loops."""
    queue_url = make_queue(monkeypatch, visibility_timeout=1, max_receive_count=1)
    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(20)]))
    drain(bulk_env, queue_url, until=lambda: dead_letters_waiting() == 1, links_client=refusing_link_writes())
    with pytest.MonkeyPatch.context() as first:
        restarter = restarter_for(queue_url, first)
        run_restarter(restarter)
    last_attempt_dies(queue_url)
    return queue_url, job_id


def test_a_dead_letter_settled_twice_or_after_a_late_success_is_counted_once(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a dead-lettered message of a job, whose settlement dies after recording it (before
    # the message is deleted)
    queue_url, job_id = dead_lettered_job(api, bulk_env, monkeypatch)
    # (a dead letter received and not deleted is visible again at once)
    sqs = boto3.client("sqs")
    sqs.set_queue_attributes(QueueUrl=dead_letter_queue_url(), Attributes={"VisibilityTimeout": "0"})
    [message] = sqs.receive_message(QueueUrl=dead_letter_queue_url(), WaitTimeSeconds=0)["Messages"]
    restarter = restarter_for(queue_url, monkeypatch)
    with pytest.MonkeyPatch.context() as dying:
        dying.setattr(BulkQueue, "delete", lambda *_: (_ for _ in ()).throw(RuntimeError("died")))
        with pytest.raises(RuntimeError):
            restarter_services.dead_letters().settle(restarter_services.scaler().targets()[0])
    assert dead_letters_waiting() == 1
    # When the next run settles it again, and a slow delivery of the same chunk then succeeds
    run_restarter(restarter)
    late = drain_message(message["Body"])
    # Then the rows are recorded once, as dead letters, and counted once; the late success stands
    # down (its links exist, but no row was given them)
    assert late.counted is False
    job = status(api, job_id)
    assert (job["status"], job["succeeded"], job["failed"]) == ("done", 0, 20)
    assert all(line["error"].startswith("dead_letter:") for line in results(api, job_id))
    assert dead_letters_waiting() == 0


def test_a_chunk_recorded_by_a_delivery_before_its_message_was_dead_lettered_keeps_its_codes(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a message whose delivery recorded and counted its rows, but which SQS moved to the
    # dead-letter queue anyway (its delete never got through)
    queue_url = make_queue(monkeypatch, visibility_timeout=1, max_receive_count=1)
    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(20)]))
    [message] = boto3.client("sqs").receive_message(QueueUrl=queue_url, WaitTimeSeconds=0)["Messages"]
    drain_message(message["Body"])
    codes = [line["code"] for line in results(api, job_id)]
    marked = ChunkMessage.model_validate_json(message["Body"]).model_copy(update={"last_attempt": True})
    boto3.client("sqs").send_message(QueueUrl=dead_letter_queue_url(), MessageBody=marked.model_dump_json())
    # When the restarter settles the dead-letter queue
    report = run_restarter(restarter_for(queue_url, monkeypatch))
    # Then the delivery's outcomes stand, counted once, and the message is gone
    assert [line["code"] for line in results(api, job_id)] == codes
    job = status(api, job_id)
    assert (job["status"], job["succeeded"], job["failed"]) == ("done", 20, 0)
    assert report["dead_letters"][0]["already_recorded"] == 1
    assert dead_letters_waiting() == 0


class RecordingJobsWorker:
    """The jobs worker by name; the results files asked of it are recorded (all instances share
    one list) instead of invoked, as moto runs no Lambda code."""

    requested: list[str] = []

    def __init__(self, function_name: str) -> None:
        self.function_name = function_name

    def request_results(self, job_id: str) -> None:
        RecordingJobsWorker.requested.append(job_id)


def test_a_job_completed_by_a_dead_letter_settlement_asks_for_its_results_file(
    api: ModuleType, bulk_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a job of one message that SQS moved to the dead-letter queue, and a restarter that
    # knows the jobs worker
    queue_url, job_id = dead_lettered_job(api, bulk_env, monkeypatch)
    monkeypatch.setenv("FILES_FUNCTION", "test-files")
    monkeypatch.setattr(RecordingJobsWorker, "requested", [])
    restarter = restarter_for(queue_url, monkeypatch)
    monkeypatch.setattr(restarter_services, "JobsWorker", RecordingJobsWorker)
    # When the scheduled restarter settles it (nobody reads the job's status)
    run_restarter(restarter)
    # Then the settlement that completed the job asked the jobs worker for its results file,
    # once, as the count of a delivery does
    assert RecordingJobsWorker.requested == [job_id]
    assert status(api, job_id)["status"] == "done"


def drain_message(body: str) -> Any:
    """Process one message body as a loop would (a delivery that arrives late)."""
    return chunk_processor().process(ChunkMessage.model_validate_json(body))


def test_a_job_shows_when_it_last_made_progress(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str
) -> None:
    # Given a job just uploaded
    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(300)]))
    queued = status(api, job_id)
    assert queued["updated_at"] == queued["created_at"]
    # When its chunks are processed
    drain(bulk_env, queue_url)
    # Then its status says when the last one was counted
    done = status(api, job_id)
    assert done["status"] == "done"
    assert done["updated_at"] > done["created_at"]


@pytest.mark.parametrize("first", ["dead letter", "delivery"])
def test_whichever_records_a_chunk_first_stands(tables: dict[str, str], first: str) -> None:
    # Given a chunk of two rows, with outcomes from a delivery and from the dead-letter settlement
    store = JobsStore(tables["JOBS_TABLE"])
    job_id = "a" * 32
    codes = [
        RowOutcome(row=1, url="https://a.example/", code="c1"),
        RowOutcome(row=2, url="https://b.example/", code="c2"),
    ]
    errors = [RowOutcome(row=n, url=o.url, error="dead_letter: failed") for n, o in enumerate(codes, start=1)]
    outcomes_of = {"dead letter": errors, "delivery": codes}

    def record(who: str) -> RecordedChunk:
        return store.record_outcomes(
            job_id,
            0,
            first_row=1,
            outcomes=outcomes_of[who],
            now=1,
            expires_at=9,
            dead_letter=who == "dead letter",
        )

    second = "delivery" if first == "dead letter" else "dead letter"
    # When both record it, one after the other
    stood = record(first)
    again = record(second)
    # Then the first one's outcomes and counts stand, and the second one is told them
    assert again == stood
    assert stood.dead_letter == (first == "dead letter")
    [(_, outcomes)] = list(store.iter_chunk_outcomes(job_id))
    assert outcomes == (errors if first == "dead letter" else codes)


def test_rows_to_a_blocked_host_are_row_errors(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str
) -> None:
    from shortener.access.blocklist import HostGuard
    from shortener.access.store_blocklist import BlocklistStore

    # Given evil.example is blocked
    HostGuard(BlocklistStore(bulk_env["BLOCKLIST_TABLE"])).block("evil.example", added_by="ops")
    # When rows to it (generated and custom-code), to a subdomain and to a fine host are uploaded
    text = csv_text(
        [
            ["https://evil.example/a", ""],
            ["https://www.evil.example/b", "evilcode"],
            ["https://fine.example/c", ""],
        ],
        header=("url", "code"),
    )
    job_id = upload(api, text)
    drain(bulk_env, queue_url)
    # Then the blocked rows are row errors saying why, and only the fine row has a link
    lines = results(api, job_id)
    assert [line["error"].split(":")[0] for line in lines] == ["blocked_host", "blocked_host", ""]
    assert "evil.example" in lines[0]["error"]
    assert lines[2]["code"]
    assert status(api, job_id)["status"] == "done"
    assert link_count(bulk_env) == 1


def test_bulk_never_overwrites_a_link_at_a_code_the_counter_produces(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str
) -> None:
    from datetime import UTC, datetime

    from shortener.links.model import Link

    # Given links already stored at the codes of ids 1 and 2 (made under an earlier code key, say,
    # or a deleted link's tombstone), and a counter that never handed those ids out
    generator = code_generator()
    store = LinksStore(bulk_env["LINKS_TABLE"])
    old = [
        Link(
            code=generator.encode(1), url="https://old.example/1", created_at=datetime(2020, 1, 1, tzinfo=UTC)
        ),
        Link(
            code=generator.encode(2),
            url="https://old.example/2",
            created_at=datetime(2020, 1, 1, tzinfo=UTC),
            status="deleted",
        ),
    ]
    store.put_generated_batch(old)
    # When a bulk job writes generated codes from id 1 on
    job_id = upload(api, csv_text([[f"https://new.example/{n}"] for n in range(5)]))
    drain(bulk_env, queue_url)
    # Then every row got a code, none of them the two taken ones, and the old links are untouched
    codes = [line["code"] for line in results(api, job_id)]
    assert all(codes)
    assert len(set(codes)) == 5
    assert not set(codes) & {link.code for link in old}
    assert store.get_many([link.code for link in old]) == {link.code: link for link in old}


def test_a_changed_code_key_leaves_bulk_rows_queued_and_writes_nothing(
    api: ModuleType, bulk_env: dict[str, str], queue_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shortener.settings import api_settings

    # Given a table whose counter was started under this stack's key, and a job queued under it
    monkeypatch.setenv("CODE_KEY", "stack-key-one")
    api_settings.cache_clear()
    poller_settings.cache_clear()
    api.links.cache_clear()
    first = post_json(api, {"url": "https://example.com/before"})
    assert first["statusCode"] == 201
    job_id = upload(api, csv_text([["https://example.com/queued"]]))
    # When the functions start under another key
    monkeypatch.setenv("CODE_KEY", "stack-key-two")
    api_settings.cache_clear()
    poller_settings.cache_clear()
    api.links.cache_clear()
    # Then a loop receives nothing and stops, leaving the row queued with its receive count untouched
    report = drain(bulk_env, queue_url)
    assert report.paused and not report.reinvoked
    assert status(api, job_id)["status"] == "queued"
    waiting = boto3.client("sqs").get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]["ApproximateNumberOfMessages"]
    assert waiting == "1"
    # And the API refuses to shorten or to take uploads, saying what changed and what to do
    for answer in (
        post_json(api, {"url": "https://example.com/after"}),
        call(
            api,
            api_event(
                "POST", "/bulk", body=b"url\nhttps://example.com/x\n", headers={"Content-Type": "text/csv"}
            ),
        ),
    ):
        assert answer["statusCode"] == 503
        problem = json.loads(answer["body"])
        assert problem["error"] == "code_key_changed"
        assert "CodeAlphabet" in problem["message"]
    assert link_count(bulk_env) == 1
    # And once the key is back, the queued row is shortened
    monkeypatch.setenv("CODE_KEY", "stack-key-one")
    api_settings.cache_clear()
    poller_settings.cache_clear()
    api.links.cache_clear()
    drain(bulk_env, queue_url)
    assert status(api, job_id)["status"] == "done"
