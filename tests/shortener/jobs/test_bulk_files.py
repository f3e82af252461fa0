"""Direct uploads under moto: an uploaded file split into queued rows (checkpointed, continued in a
next invocation, never split twice), its rows processed, and the results file written once."""

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from shortener.aws_usage import Meter
from shortener.jobs.bucket import MIN_PART_BYTES, BulkFiles, FileChangedError
from shortener.jobs.bulk import BulkOptions, ChunkProcessor, JobOrigin, create_upload_job
from shortener.jobs.message_model import ChunkMessage
from shortener.jobs.model import Job
from shortener.jobs.quotas import DailyQuota
from shortener.jobs.results import ResultsWriter
from shortener.jobs.split import SplitOptions, Splitter
from shortener.jobs.store import JobsStore
from shortener.jobs.store.quotas import DailyQuotaStore
from shortener.jobs.tasks_model import S3Event, SplitRequest
from shortener.jobs.view_model import DirectUploadRequest
from shortener.links.codes import code_generator
from shortener.links.domains import JobDomains
from shortener.links.store import LinksStore
from shortener.loops.queue import BulkQueue
from shortener.services.links import link_service
from shortener.settings import poller_settings
from tests.support.bulk import create_bulk_bucket, create_bulk_queues, parse_results
from tests.support.lambda_context import FakeLambdaContext

pytestmark = pytest.mark.integration

S3_PUT_EVENT = json.loads((Path(__file__).parents[2] / "support" / "s3_put.json").read_text())


class Successor:
    """Records the continuations and results requests instead of invoking the jobs worker."""

    def __init__(self) -> None:
        self.continued: list[SplitRequest] = []
        self.results: list[str] = []

    def continue_split(self, request: SplitRequest) -> None:
        self.continued.append(request)

    def request_results(self, job_id: str) -> None:
        self.results.append(job_id)


class Loops:
    def __init__(self) -> None:
        self.started: list[int] = []

    def start_for(self, messages: int) -> None:
        self.started.append(messages)


class World:
    """Real stores over moto (jobs table, bucket, queue); the successor and loops recorded."""

    def __init__(
        self, tables: dict[str, str], *, checkpoint_messages: int = 4, quota: DailyQuota | None = None
    ) -> None:
        self.bucket = create_bulk_bucket()
        self.queue_url = create_bulk_queues()
        self.jobs = JobsStore(tables["JOBS_TABLE"])
        self.files = BulkFiles()
        self.queue = BulkQueue()
        self.successor = Successor()
        self.loops = Loops()
        self.splitter = Splitter(
            self.jobs,
            self.files,
            self.queue,
            self.queue_url,
            self.successor,
            loops=self.loops,
            quota=quota,
            options=SplitOptions(
                rows_per_message=100, checkpoint_messages=checkpoint_messages, handover_seconds=10
            ),
            is_file_changed=lambda exc: isinstance(exc, FileChangedError),
        )

    def upload(
        self, data: bytes, own_hosts: tuple[str, ...] = (), domains: JobDomains | None = None
    ) -> SplitRequest:
        """A job waiting for its file, then the file put where its presigned URL points."""
        job, _ = create_upload_job(
            DirectUploadRequest(file_name="links.csv", size=len(data)),
            jobs=self.jobs,
            files=self.files,
            origin=JobOrigin(
                base_url="https://sho.rt/", bucket=self.bucket, own_hosts=own_hosts, domains=domains
            ),
            options=BulkOptions(),
            url_seconds=600,
        )
        assert job.upload is not None
        etag = boto3.client("s3").put_object(Bucket=self.bucket, Key=job.upload.key, Body=data)["ETag"]
        return SplitRequest(job_id=job.job_id, bucket=self.bucket, key=job.upload.key, etag=etag.strip('"'))

    def job(self, job_id: str) -> Job:
        job = self.jobs.get_job(job_id)
        assert job is not None
        return job

    def queued(self) -> list[ChunkMessage]:
        sqs = boto3.client("sqs")
        messages: list[ChunkMessage] = []
        while batch := sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        ).get("Messages", []):
            messages += [ChunkMessage.model_validate_json(message["Body"]) for message in batch]
            sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(batch)],
            )
        return sorted(messages, key=lambda message: message.chunk)


def plenty() -> float:
    return 600.0


def csv_bytes(rows: int, header: str = "url") -> bytes:
    return (header + "\n" + "".join(f"https://example.com/p/{n}\n" for n in range(rows))).encode()


@pytest.fixture
def world(tables: dict[str, str]) -> World:
    return World(tables)


def test_an_uploaded_file_is_queued_as_it_is_read_and_its_loops_started(world: World) -> None:
    # Given an uploaded file of 1,234 rows in a semicolon-separated export
    data = ("Long URL;Short code\n" + "".join(f"https://example.com/{n};\n" for n in range(1234))).encode()
    request = world.upload(data)
    # When it is split
    report = world.splitter.split(request, "invocation-1", plenty)
    # Then the rows went to the queue in order, 100 to a message, each row once
    messages = world.queued()
    assert report.outcome == "split"
    assert [message.chunk for message in messages] == list(range(13))
    assert [message.first_row for message in messages] == [1 + 100 * n for n in range(13)]
    assert [url for message in messages for url, _ in message.rows] == [
        f"https://example.com/{n}" for n in range(1234)
    ]
    # And the job is fully split, with its total, its file read to the end and its loops started
    job = world.job(request.job_id)
    assert (job.split_done, job.total, job.chunks) == (True, 1234, 13)
    assert job.split is not None and job.split.position.offset == len(data)
    assert job.phase == "processing" and job.status == "running"
    assert world.loops.started and world.loops.started[0] >= 13


def test_a_split_that_runs_out_of_time_continues_in_the_next_invocation_exactly_where_it_stopped(
    world: World,
) -> None:
    # Given a file of 2,500 rows and an invocation whose time runs out after a few messages
    request = world.upload(csv_bytes(2500))
    calls = iter(range(1000))

    def running_out() -> float:
        return 600.0 if next(calls) < 8 else 5.0

    # When it is split, and the continuation it asked for runs
    first = world.splitter.split(request, "invocation-1", running_out)
    assert first.outcome == "continued"
    (continuation,) = world.successor.continued
    assert continuation.owner == "invocation-1"
    middle = world.job(request.job_id)
    second = world.splitter.split(continuation, "invocation-2", plenty)
    # Then the first stopped at a checkpoint part-way, and the second finished from there
    assert second.outcome == "split"
    assert 0 < middle.total < 2500 and not middle.split_done
    assert first.rows + second.rows == 2500
    # And every row was queued exactly once, in numbered messages with no gap or repeat
    messages = world.queued()
    assert [message.chunk for message in messages] == list(range(25))
    rows = [url for message in messages for url, _ in message.rows]
    assert rows == [f"https://example.com/p/{n}" for n in range(2500)]


def test_a_duplicated_s3_event_while_the_split_is_held_does_nothing(world: World) -> None:
    # Given a split held by one invocation (its lease has time left)
    request = world.upload(csv_bytes(300))
    job = world.job(request.job_id)
    assert job.split is not None
    assert world.jobs.claim_split(
        request.job_id,
        "invocation-1",
        etag=request.etag,
        expected=job.split.position,
        now=0,
        lease_until=2**40,
    )
    # When the same event is delivered again to another invocation
    report = world.splitter.split(request, "invocation-2", plenty)
    # Then it queues nothing
    assert report.outcome == "busy"
    assert world.queued() == []


def test_a_finished_split_is_never_split_again(world: World) -> None:
    request = world.upload(csv_bytes(300))
    world.splitter.split(request, "invocation-1", plenty)
    world.queued()
    # When the event comes again after the split is done
    report = world.splitter.split(request, "invocation-2", plenty)
    # Then nothing is queued a second time
    assert report.outcome == "already_split"
    assert world.queued() == []


class DiesAfterSending(BulkQueue):
    """Sends, then dies on the ``fatal``-th send (after the messages left, before a checkpoint)."""

    def __init__(self, fatal: int) -> None:
        super().__init__()
        self.sends = 0
        self.fatal = fatal

    def send_all(self, queue_url: str, bodies: Any) -> int:
        calls = super().send_all(queue_url, bodies)
        self.sends += 1
        if self.sends == self.fatal:
            raise RuntimeError("the invocation died")
        return calls


def test_a_split_that_died_after_sending_is_redone_from_its_checkpoint_with_identical_messages(
    world: World,
) -> None:
    # Given an invocation that dies after its third send (the first two are checkpointed)
    request = world.upload(csv_bytes(4000))
    world.splitter._queue = DiesAfterSending(fatal=3)
    with pytest.raises(RuntimeError):
        world.splitter.split(request, "invocation-1", plenty)
    # When Lambda retries it (the failed invocation gave its lease up)
    world.splitter._queue = world.queue
    retry = world.splitter.split(request, "invocation-2", plenty)
    # Then the retry finished, and the messages sent twice are the same messages
    assert retry.outcome == "split"
    messages = world.queued()
    by_chunk: dict[int, list[str]] = {}
    for message in messages:
        by_chunk.setdefault(message.chunk, []).append(message.model_dump_json())
    assert sorted(by_chunk) == list(range(40))
    assert all(len(set(bodies)) == 1 for bodies in by_chunk.values())
    assert sum(len(bodies) for bodies in by_chunk.values()) == 50  # the third send's ten went twice
    assert world.job(request.job_id).total == 4000


def test_a_first_line_that_is_no_header_ends_the_job_with_the_reason(world: World) -> None:
    request = world.upload(b"Name;Phone\nAda;123\n")
    report = world.splitter.split(request, "invocation-1", plenty)
    job = world.job(request.job_id)
    # The job is not done until its (empty) results file can be fetched
    assert report.outcome == "split" and job.phase == "writing_results" and job.status == "running"
    assert job.error is not None and job.error.error == "invalid_csv"
    assert "'Name', 'Phone'" in job.error.message and job.total == 0
    assert world.queued() == []
    # And its (empty) results are asked for, so the job ends like any other
    assert world.successor.results == [request.job_id]


def test_a_line_that_is_not_utf8_mid_file_is_read_with_the_fallback_and_the_split_goes_on(
    world: World,
) -> None:
    # Given a UTF-8 file with a Latin-1 line, a line that no encoding reads, and a blank line
    data = (
        csv_bytes(250)
        + b"https://example.com/caf\xe9\n"
        + b"https://example.com/\x81\n\n"
        + csv_bytes(10)[4:]
    )
    request = world.upload(data)
    # When it is split
    world.splitter.split(request, "invocation-1", plenty)
    # Then every line but the blank one is a row, numbered by its line, and the split read to the end
    job = world.job(request.job_id)
    assert job.split_done and job.error is None and job.total == 262
    assert job.encoding is not None and job.encoding.fallback_lines == 1
    rows = [row for message in world.queued() for row in message.bulk_rows()]
    assert [row.row for row in rows] == [*range(1, 253), *range(254, 264)]
    assert rows[250].url == "https://example.com/café" and not rows[250].problem
    assert rows[251].problem == f"line 253 is neither UTF-8 nor cp1252 (byte {data.index(b'\x81'):,})."


def test_an_event_for_a_replaced_file_is_not_mixed_into_the_split(world: World) -> None:
    request = world.upload(csv_bytes(300))
    world.splitter.split(request, "invocation-1", plenty)
    # When a second upload to the same key sends its own event
    replaced = request.model_copy(update={"etag": "another"})
    assert world.splitter.split(replaced, "invocation-2", plenty).outcome in ("already_split", "replaced")


def split_processed_results(
    world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch, request: SplitRequest
) -> list[dict[str, str]]:
    """The lines of the results file of the upload ``request`` once split and processed."""
    world.splitter.split(request, "invocation-1", plenty)
    process_all(world, tables, monkeypatch)
    results = ResultsWriter(world.jobs, world.files).write(request.job_id, owner="writer-1")
    assert results is not None
    body = boto3.client("s3").get_object(Bucket=world.bucket, Key=results.key)["Body"].read()
    return parse_results(body.decode())


def process_all(world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIND_IF_EXISTS", "false")
    settings = poller_settings()
    processor = ChunkProcessor(
        LinksStore(tables["LINKS_TABLE"]),
        world.jobs,
        link_service(settings),
        code_generator(settings.CODE_ALPHABET),
        settings.url_policy(),
        results=world.successor,
    )
    for message in world.queued():
        processor.process(message)


def test_the_count_that_completes_a_job_asks_for_its_results_file_once(
    world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an uploaded file, split
    request = world.upload(csv_bytes(450))
    world.splitter.split(request, "invocation-1", plenty)
    # When its messages are processed
    process_all(world, tables, monkeypatch)
    # Then the job is complete and its results were asked for once, by the last count
    job = world.job(request.job_id)
    assert job.complete and job.succeeded == 450
    assert world.successor.results == [request.job_id]


def test_a_direct_uploads_rows_are_checked_against_the_apis_own_hosts_as_body_rows_are(
    world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a direct upload accepted on the API's execute-api host, whose file links back to it
    api_host = "abc123.execute-api.us-east-1.amazonaws.com"
    data = f"url\nhttps://example.com/fine\nhttps://{api_host}/Prod/xyz\n".encode()
    request = world.upload(data, own_hosts=(api_host,))
    # When it is split and processed
    world.splitter.split(request, "invocation-1", plenty)
    process_all(world, tables, monkeypatch)
    # Then the row that links back to the API failed, the other succeeded
    job = world.job(request.job_id)
    assert job.own_hosts == [api_host]
    assert (job.succeeded, job.failed) == (1, 1)


def test_the_results_file_is_written_once_and_holds_every_row(
    world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a complete job of 450 rows, one of them with a NUL in its URL
    data = csv_bytes(449) + b"https://exa\x00mple.com/nul\n"
    request = world.upload(data)
    world.splitter.split(request, "invocation-1", plenty)
    process_all(world, tables, monkeypatch)
    writer = ResultsWriter(world.jobs, world.files)
    # When the file is written, and asked for again
    first = writer.write(request.job_id, owner="writer-1")
    again = writer.write(request.job_id, owner="writer-2")
    # Then it holds a line per row in input order, recorded on the job, and the second asking
    # found it written
    assert first is not None and again == first
    body = boto3.client("s3").get_object(Bucket=world.bucket, Key=first.key)["Body"].read()
    lines = parse_results(body.decode())
    assert [int(line["row"]) for line in lines] == list(range(1, 451))
    assert lines[0]["short_url"].startswith("https://sho.rt/")
    # And no control character reached the file raw
    assert b"\x00" not in body and "exa%00mple" in lines[-1]["url"]
    assert world.job(request.job_id).results == first


def test_a_second_writer_waits_while_the_first_holds_the_results(
    world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    request = world.upload(csv_bytes(120))
    world.splitter.split(request, "invocation-1", plenty)
    process_all(world, tables, monkeypatch)
    assert world.jobs.claim_results(request.job_id, "writer-1", now=0, lease_until=2**40)
    assert ResultsWriter(world.jobs, world.files).write(request.job_id, owner="writer-2") is None


def test_a_file_larger_than_one_part_is_written_in_parts(world: World) -> None:
    # Given blocks adding up to more than one S3 part
    block = b"x" * (1024 * 1024)
    blocks: Iterator[bytes] = iter([block] * (MIN_PART_BYTES // len(block) + 3))
    # When they are written
    size = world.files.write(
        world.bucket, "results/big.csv", blocks, content_type="text/csv", file_name="big.csv"
    )
    # Then the object is whole, from a multipart upload
    head = boto3.client("s3").head_object(Bucket=world.bucket, Key="results/big.csv")
    assert size == head["ContentLength"] == MIN_PART_BYTES + 3 * len(block)
    assert head["ETag"].strip('"').endswith("-2")


def test_the_requests_of_metered_work_are_counted_in_its_threads_too(world: World) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from shortener import aws
    from shortener.jobs.metering import map_in_context

    dynamodb = aws.dynamodb()
    table = world.jobs.table_name
    with ThreadPoolExecutor(4) as pool, Meter(memory_mb=1024) as meter:
        dynamodb.put_item(
            TableName=table, Item={"job_id": {"S": "m"}, "sk": {"S": "x"}, "pad": {"S": "x" * 2000}}
        )
        list(
            map_in_context(
                pool,
                lambda n: dynamodb.get_item(TableName=table, Key={"job_id": {"S": "m"}, "sk": {"S": str(n)}}),
                range(3),
            )
        )
        usage = meter.take()
    # Outside any meter nothing is counted
    dynamodb.get_item(TableName=table, Key={"job_id": {"S": "m"}, "sk": {"S": "y"}})
    assert (usage.dynamodb_requests, usage.read_units, usage.write_units) == (4, 3, 2)


def s3_event(request: SplitRequest) -> dict[str, Any]:
    """The event S3 sends for an uploaded file (the shape of `sam local generate-event s3 put`)."""
    event = copy.deepcopy(S3_PUT_EVENT)
    record = event["Records"][0]
    record["s3"]["bucket"]["name"] = request.bucket
    record["s3"]["bucket"]["arn"] = f"arn:aws:s3:::{request.bucket}"
    record["s3"]["object"]["key"] = request.key
    record["s3"]["object"]["eTag"] = request.etag
    return event


def test_the_files_function_splits_the_file_an_s3_event_names(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the jobs worker's environment and an uploaded file
    monkeypatch.setenv("BULK_QUEUE_URL", world.queue_url)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "test-files")
    from functions.worker import app

    app.splitter.cache_clear()
    request = world.upload(csv_bytes(42))
    # When S3's event for it arrives
    answer = app.lambda_handler(s3_event(request), FakeLambdaContext(function_name="test-files"))
    # Then its rows are queued
    assert answer == {"splits": [{"job_id": request.job_id, "outcome": "split", "rows": 42}]}
    assert len(world.queued()[0].rows) == 42


@pytest.mark.parametrize(
    ("key", "event_name", "wanted"),
    [
        ("uploads/{id}.csv", "ObjectCreated:Put", True),
        ("uploads/{id}.csv", "ObjectCreated:CompleteMultipartUpload", True),
        ("results/{id}.csv", "ObjectCreated:Put", False),
        ("uploads/{id}.csv", "ObjectRemoved:Delete", False),
        ("uploads/not-a-job.csv", "ObjectCreated:Put", False),
    ],
)
def test_only_created_uploads_are_split(key: str, event_name: str, wanted: bool) -> None:
    job_id = uuid.uuid4().hex
    event = copy.deepcopy(S3_PUT_EVENT)
    event["Records"][0]["eventName"] = event_name
    event["Records"][0]["s3"]["object"]["key"] = key.format(id=job_id)
    request = S3Event.model_validate(event).Records[0].split_request()
    assert (request is not None) == wanted
    assert request is None or request.job_id == job_id


def test_unreadable_lines_are_row_errors_and_blank_lines_keep_their_numbers_in_the_results(
    world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a file with a blank line, a cp1252 line, a line no encoding reads and broken quoting
    data = (
        b"url\nhttps://example.com/a\n\n"
        + "https://example.com/€uro\n".encode("cp1252")
        + b"https://example.com/\x81\n"
        + b'"https://example.com/x"y\n'
        + b"https://example.com/b\n"
    )
    request = world.upload(data)
    # When it is split, its rows processed and its results written
    lines = split_processed_results(world, tables, monkeypatch, request)
    # Then every row but the blank line has one outcome, numbered by its line after the header
    assert [int(line["row"]) for line in lines] == [1, 3, 4, 5, 6]
    assert lines[1]["url"] == "https://example.com/%E2%82%ACuro" and lines[1]["code"]
    assert lines[2]["error"].startswith("invalid_row: line 5 is neither UTF-8 nor cp1252")
    assert lines[3]["error"].startswith("invalid_row: line 6 is not valid CSV")
    job = world.job(request.job_id)
    assert (job.succeeded, job.failed, job.ended_early) == (3, 2, False)


def test_a_quote_left_open_50_lines_before_the_end_gives_every_row_its_outcome(
    world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a file of 200 URLs in classic Mac line endings, the 150th opening a quote never closed
    urls = [f"https://example.com/q/{n}" for n in range(1, 201)]
    urls[149] = '"' + urls[149]
    request = world.upload(("url\r" + "\r".join(urls) + "\r").encode())
    # When it is split, its rows processed and its results written
    lines = split_processed_results(world, tables, monkeypatch, request)
    # Then every line has its outcome: 199 codes and one row error on the line with the quote
    assert [int(line["row"]) for line in lines] == list(range(1, 201))
    assert [line["row"] for line in lines if line["error"]] == ["150"]
    assert lines[149]["error"].startswith("invalid_row: line 151 opens a quoted cell that is not closed")
    job = world.job(request.job_id)
    assert (job.total, job.succeeded, job.failed, job.ended_early) == (200, 199, 1, False)


def test_an_uploaded_files_columns_the_reader_does_not_know_are_listed_with_its_job(world: World) -> None:
    # Given a direct upload whose header misspells the title column
    request = world.upload(b"url,titel,code\nhttps://example.com/t,Spring sale,\n")
    # When it is split
    world.splitter.split(request, "invocation-1", plenty)
    # Then the job lists the column as read for nothing
    assert world.job(request.job_id).ignored_columns == ["titel"]


def test_the_results_of_a_job_that_ended_early_say_so_in_their_last_line(world: World) -> None:
    # Given a job whose file could not be read (its first line is no header and no URL)
    request = world.upload(b"Name;Phone\nAda;123\n")
    world.splitter.split(request, "invocation-1", plenty)
    # When its results file is written
    results = ResultsWriter(world.jobs, world.files).write(request.job_id, owner="writer-1")
    assert results is not None
    body = boto3.client("s3").get_object(Bucket=world.bucket, Key=results.key)["Body"].read()
    # Then it ends with a line without a row number whose error says the job ended early, and why
    [line] = parse_results(body.decode())
    assert line["row"] == "" and line["error"].startswith("ended_early: invalid_csv: The first line holds")
    assert world.job(request.job_id).ended_early


def test_a_file_that_passes_its_owners_daily_rows_mid_way_ends_with_its_read_rows_failed(
    tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an owner's daily quota of 1,500 rows, and a file of 2,500
    quota = DailyQuota(DailyQuotaStore(tables["JOBS_TABLE"]), max_rows=1_500, max_bytes=10**9)
    world = World(tables, quota=quota)
    request = world.upload(csv_bytes(2_500))
    # When it is split and processed
    world.splitter.split(request, "invocation-1", plenty)
    process_all(world, tables, monkeypatch)
    # Then the rows within the quota were shortened, the rows read after it failed quota_exceeded,
    # the rest not read, and the job ended early, saying why: done once its results file is written
    job = world.job(request.job_id)
    assert job.complete and job.status == "running" and job.ended_early
    assert ResultsWriter(world.jobs, world.files).write(request.job_id, owner="writer-1") is not None
    job = world.job(request.job_id)
    assert job.status == "done" and job.ended_early
    assert job.error is not None and job.error.error == "quota_exceeded"
    assert job.succeeded == 1_000 and job.failed > 0 and job.total == job.processed < 2_500
    # And only the rows queued count: 500 more fit the owner's day, 501 do not
    assert not quota.reserve(None, rows=501, size=0)
    assert quota.reserve(None, rows=500, size=0)
