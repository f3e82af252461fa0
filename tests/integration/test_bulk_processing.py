"""Bulk jobs end to end inside one process under moto: upload through the API handler, drain the
queue with a loop (real stores, real queue semantics), read status and results through the API."""

import json
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import boto3
import pytest

from shortener.dal import aws as aws_clients
from shortener.dal.jobs import JobsStore
from shortener.dal.links import LinksStore
from shortener.dal.loops import LoopsStore
from shortener.dal.queue import BulkQueue
from shortener.logic.bulk import ChunkProcessor
from shortener.logic.codes import code_generator, hash_code_candidates
from shortener.logic.poller import LoopOptions, LoopReport, PollLoop
from shortener.models.loops import LoopInvocation
from shortener.services import link_service
from shortener.settings import poller_settings
from tests.support.api import call, get_code, post_json
from tests.support.bulk import (
    PollerContext,
    create_bulk_queues,
    csv_text,
    dead_letter_queue_url,
    parse_results,
    throttle,
)
from tests.support.events import api_event


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
    from functions.api import app, bulk

    app.links.cache_clear()
    bulk.jobs.cache_clear()
    bulk.queue.cache_clear()
    return app


def a_loop(tables: dict[str, str], queue_url: str) -> LoopInvocation:
    token = LoopsStore(tables["TOKENS_TABLE"]).create(queue_url)
    return token.invocation()


def drain(
    tables: dict[str, str],
    queue_url: str,
    *,
    seconds: float = 2.5,
    queue: BulkQueue | None = None,
    links_client: Any = None,
) -> LoopReport:
    """Run one loop invocation of ``seconds`` over the queue, composed as the poller composes it."""
    from shortener.observability import metrics  # after the fixtures set the metrics namespace

    settings = poller_settings()
    processor = ChunkProcessor(
        LinksStore(settings.LINKS_TABLE, client=links_client),
        JobsStore(settings.JOBS_TABLE, client=links_client),
        link_service(settings),
        code_generator(settings.CODE_ALPHABET),
        settings.url_policy(),
        strategy=settings.CODE_STRATEGY,
        find_if_exists=settings.FIND_IF_EXISTS,
    )
    loop = PollLoop(
        LoopsStore(tables["TOKENS_TABLE"]),
        queue or BulkQueue(),
        RecordingStarter(),
        processor,
        metrics=metrics,
        options=LoopOptions(reinvoke_margin_seconds=1, receive_wait_seconds=0, error_pause_seconds=0.1),
    )
    invocation = a_loop(tables, queue_url)
    context = PollerContext(budget_seconds=seconds + 1)
    return loop.run(
        invocation,
        context.function_name,
        lambda: context.get_remaining_time_in_millis() / 1000,
    )


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
    report = drain(bulk_env, queue_url, seconds=0.5, queue=crashing)
    assert report.errors == 1
    first = status(api, job_id)
    codes_before = [line["code"] for line in results(api, job_id)]
    # When the message is redelivered (its visibility timeout ended) and processed again
    crashing.redeliver_now(queue_url)
    report = drain(bulk_env, queue_url, seconds=2.5)
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
    drain(bulk_env, queue_url, seconds=0.5, queue=queue)
    assert status(api, job_id)["succeeded"] == 0
    # When the message comes back (its visibility timeout ended) and is processed again
    queue.redeliver_now(queue_url)
    drain(bulk_env, queue_url, seconds=2.5)
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
    # When the loop runs long enough for the poison message to be received twice
    report = drain(bulk_env, queue_url, seconds=3.5)
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
    drain(bulk_env, queue_url, seconds=8, links_client=client)
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
    from functions.api import bulk

    job_id = upload(api, csv_text([[f"https://example.com/{n}"] for n in range(600)]))
    drain(bulk_env, queue_url)
    monkeypatch.setattr(bulk, "RESULTS_PAGE_BYTES", 10_000)
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
    assert codes == [next(hash_code_candidates(line["url"])) for line in lines]
    assert status(api, job_id)["succeeded"] == 30
    assert link_count(bulk_env) == 30
