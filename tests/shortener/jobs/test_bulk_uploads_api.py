"""Direct uploads, results files and job status through the API handler under moto."""

import json
from datetime import UTC, datetime
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest

from shortener.jobs.model import JobUsage, ReadPosition, ResultsFile
from shortener.jobs.store import JobsStore
from shortener.jobs.tasks_model import SplitRequest
from shortener.loops.queue_metrics import QueueMetrics
from shortener.loops.scaling import LoopBounds, LoopScaler, WorkStarter
from shortener.loops.scaling_model import LoopTarget
from shortener.loops.store import LoopsStore
from shortener.services import api as api_services
from shortener.settings import api_settings
from tests.support.api import call, response_header
from tests.support.bulk import BUCKET, create_bulk_bucket, create_bulk_queues
from tests.support.events import api_event
from tests.support.loops import RecordingStarter

pytestmark = pytest.mark.integration


class RecordingFiles:
    def __init__(self) -> None:
        self.splits: list[SplitRequest] = []
        self.results: list[str] = []

    def continue_split(self, request: SplitRequest) -> None:
        self.splits.append(request)

    def request_results(self, job_id: str) -> None:
        self.results.append(job_id)


@pytest.fixture
def api(tables: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("BULK_QUEUE_URL", create_bulk_queues())
    monkeypatch.setenv("BULK_BUCKET", create_bulk_bucket())
    from functions.api import app

    app.links.cache_clear()
    return app


@pytest.fixture
def files_function(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> RecordingFiles:
    recording = RecordingFiles()
    monkeypatch.setattr(api_services, "_jobs_worker", lambda: recording)
    api_services.job_queries.cache_clear()
    return recording


def post_upload(api: ModuleType, payload: Any, content_type: str = "application/json") -> dict[str, Any]:
    body = payload if isinstance(payload, str) else json.dumps(payload)
    return call(api, api_event("POST", "/bulk/uploads", body=body, headers={"Content-Type": content_type}))


def get(api: ModuleType, path: str, resource: str, job_id: str) -> dict[str, Any]:
    return call(api, api_event("GET", path, resource=resource, path_parameters={"job_id": job_id}))


def status(api: ModuleType, job_id: str) -> dict[str, Any]:
    answer = get(api, f"/jobs/{job_id}", "/jobs/{job_id}", job_id)
    assert answer["statusCode"] == 200
    return dict(json.loads(answer["body"]))


def results(api: ModuleType, job_id: str) -> dict[str, Any]:
    return get(api, f"/jobs/{job_id}/results", "/jobs/{job_id}/results", job_id)


def test_a_direct_upload_answers_a_job_and_a_presigned_put_of_exactly_the_declared_size(
    api: ModuleType,
) -> None:
    # When a client announces a 12 MB file
    answer = post_upload(api, {"filename": "C:\\exports\\spring links.csv", "size": 12_000_000})
    # Then the answer is 201 with the job, where to follow it, and one PUT to make
    assert answer["statusCode"] == 201
    accepted = json.loads(answer["body"])
    assert response_header(answer, "Location") == accepted["status_url"]
    upload = accepted["upload"]
    assert upload["method"] == "PUT" and upload["headers"] == {"Content-Length": "12000000"}
    # And the URL puts into the bucket's uploads, with the length signed (S3 refuses another size)
    url = urlsplit(upload["url"])
    query = parse_qs(url.query)
    assert url.path.endswith(f"/uploads/{accepted['job_id']}.csv") and BUCKET in upload["url"]
    assert query["X-Amz-SignedHeaders"] == ["content-length;host"]
    assert query["X-Amz-Expires"] == ["3600"]
    # And the job waits for its file, under the name the client gave (without its folders)
    job = status(api, accepted["job_id"])
    assert (job["status"], job["phase"], job["total"]) == ("queued", "awaiting_upload", 0)
    assert job["upload"] == {"file_name": "spring links.csv", "size": 12_000_000, "bytes_read": 0}
    assert job["cost"]["requests"]["dynamodb"] == 1


@pytest.mark.parametrize(
    ("payload", "content_type", "code", "error"),
    [
        ({"file_name": "a.csv", "size": 6 * 1024**3}, "application/json", 413, "payload_too_large"),
        ({"file_name": "a.csv", "size": 0}, "application/json", 422, "invalid_request"),
        ({"file_name": "a.csv"}, "application/json", 422, "invalid_request"),
        ("[1, 2]", "application/json", 400, "invalid_request"),
        ("not json", "application/json", 400, "invalid_request"),
        ("<file/>", "application/xml", 415, "unsupported_media_type"),
    ],
)
def test_a_bad_upload_announcement_is_a_clear_4xx_and_creates_no_job(
    api: ModuleType, tables: dict[str, str], payload: Any, content_type: str, code: int, error: str
) -> None:
    answer = post_upload(api, payload, content_type)
    assert answer["statusCode"] == code
    body = json.loads(answer["body"])
    assert body["error"] == error and body["message"]
    assert boto3.client("dynamodb").scan(TableName=tables["JOBS_TABLE"])["Items"] == []


def test_without_a_bucket_direct_uploads_are_503(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from shortener.settings import api_settings

    monkeypatch.setenv("BULK_BUCKET", "")
    api_settings.cache_clear()
    answer = post_upload(api, {"file_name": "a.csv", "size": 10})
    assert answer["statusCode"] == 503


def an_upload_job(api: ModuleType) -> str:
    return str(json.loads(post_upload(api, {"file_name": "a.csv", "size": 100})["body"])["job_id"])


def test_results_of_a_large_job_wait_for_the_file_and_then_redirect_to_it(
    api: ModuleType, tables: dict[str, str], files_function: RecordingFiles
) -> None:
    # Given an upload job whose file is split but not yet processed
    job_id = an_upload_job(api)
    jobs = JobsStore(tables["JOBS_TABLE"])
    assert jobs.claim_split(job_id, "split-1", etag="e", expected=ReadPosition(), now=0, lease_until=2**40)
    jobs.finish_split(
        job_id,
        "split-1",
        position=ReadPosition(offset=100, rows=2, lines=3),
        chunks=1,
        file_format=None,
        error=None,
        usage=JobUsage(),
    )
    # When its results are asked for before it is done
    early = results(api, job_id)
    # Then the answer says to come back, and when
    assert early["statusCode"] == 409
    assert json.loads(early["body"])["error"] == "results_not_ready"
    assert response_header(early, "Retry-After") == "5"
    # Given its rows processed and its file written
    jobs.count_chunk(job_id, 0, succeeded=2, failed=0, now=datetime.now(UTC))
    boto3.client("s3").put_object(Bucket=BUCKET, Key=f"results/{job_id}.csv", Body=b"row,url\n")
    jobs.record_results(
        job_id,
        ResultsFile(key=f"results/{job_id}.csv", size=8, rows=2, written_at=datetime.now(UTC)),
        JobUsage(),
    )
    # When they are asked for again
    late = results(api, job_id)
    # Then the answer is a 303 to a presigned download of the file, which the status also gives
    assert late["statusCode"] == 303
    location = response_header(late, "Location") or ""
    assert f"/results/{job_id}.csv" in location and "X-Amz-Signature=" in location
    assert "response-content-disposition=attachment" in location
    job = status(api, job_id)
    assert (job["status"], job["phase"], job["results_ready"]) == ("done", "done", True)
    assert job["results_file_url"].split("?")[0] == location.split("?")[0]


def test_a_split_whose_invocation_died_is_asked_for_again_when_its_status_is_read(
    api: ModuleType, tables: dict[str, str], files_function: RecordingFiles
) -> None:
    # Given a split whose lease ran out (its invocation died and was not retried)
    job_id = an_upload_job(api)
    jobs = JobsStore(tables["JOBS_TABLE"])
    assert jobs.claim_split(job_id, "split-1", etag="e1", expected=ReadPosition(), now=0, lease_until=1)
    # When its status is read
    job = status(api, job_id)
    # Then the split is asked for again, from the file it pinned
    assert job["phase"] == "splitting"
    assert [(request.job_id, request.etag, request.owner) for request in files_function.splits] == [
        (job_id, "e1", None)
    ]


def test_an_upload_whose_s3_event_was_lost_is_split_when_its_status_is_read(
    api: ModuleType, files_function: RecordingFiles
) -> None:
    from freezegun import freeze_time

    # Given an upload job whose file is in the bucket, but every invocation for its S3 event failed
    # before claiming the split (nothing recorded the file's arrival)
    with freeze_time("2026-05-01T10:00:00Z"):
        job_id = an_upload_job(api)
        # A status read while S3's event may still come leaves the bucket alone
        assert status(api, job_id)["phase"] == "awaiting_upload"
        assert files_function.splits == []
        put = boto3.client("s3").put_object(
            Bucket=BUCKET, Key=f"uploads/{job_id}.csv", Body=b"url\nhttps://a.example/\n"
        )
    # When its status is read after the grace
    with freeze_time("2026-05-01T10:00:31Z"):
        assert status(api, job_id)["phase"] == "awaiting_upload"
    # Then the split is asked for, of the file that is there (its ETag unquoted, as events give it)
    assert [(request.job_id, request.key, request.etag) for request in files_function.splits] == [
        (job_id, f"uploads/{job_id}.csv", put["ETag"].strip('"'))
    ]


def test_an_upload_not_yet_made_is_not_split_however_often_its_status_is_read(
    api: ModuleType, files_function: RecordingFiles
) -> None:
    from freezegun import freeze_time

    with freeze_time("2026-05-01T10:00:00Z"):
        job_id = an_upload_job(api)
    with freeze_time("2026-05-01T10:05:00Z"):
        assert status(api, job_id)["phase"] == "awaiting_upload"
    assert files_function.splits == []


def test_a_new_job_starts_the_loops_it_needs_itself(
    api: ModuleType, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no loop running (MinLoops 0) and the API able to start loops
    from shortener.settings import api_settings

    starter = RecordingStarter()
    queue_url = api_settings().BULK_QUEUE_URL
    scaler = LoopScaler(
        LoopsStore(tables["TOKENS_TABLE"]),
        starter,
        QueueMetrics(),
        {"test-BulkQueue": "poller"},
        LoopBounds(0, 3, 2),
    )
    target = LoopTarget(queue_name="test-BulkQueue", queue_url=queue_url, function_name="poller")
    monkeypatch.setattr(api_services, "_work_loops", lambda: WorkStarter(scaler, target))
    api_services.job_submissions.cache_clear()
    # When a job of 1,000 rows (4 messages) is accepted
    text = "url\n" + "".join(f"https://example.com/{n}\n" for n in range(1000))
    answer = call(api, api_event("POST", "/bulk", body=text.encode(), headers={"Content-Type": "text/csv"}))
    # Then its two loops were started before the answer, without an alarm
    assert answer["statusCode"] == 202
    assert starter.tokens == ["slot-000", "slot-001"]
    # And the job's cost line counts the requests of its acceptance
    job = status(api, json.loads(answer["body"])["job_id"])
    assert job["cost"]["requests"]["sqs"] >= 1 and job["cost"]["requests"]["dynamodb"] >= 3
    assert job["cost"]["usd"] > 0


def test_small_body_jobs_still_get_their_results_inline(api: ModuleType) -> None:
    answer = call(
        api,
        api_event(
            "POST", "/bulk", body=b"url\nhttps://example.com/a\n", headers={"Content-Type": "text/csv"}
        ),
    )
    job_id = json.loads(answer["body"])["job_id"]
    page = results(api, job_id)
    assert page["statusCode"] == 200
    assert response_header(
        page,
        "Content-Type",
    ).startswith("text/csv")  # type: ignore[union-attr]


@pytest.mark.parametrize("path", ["/bulk/uploads", "/bulk"])
def test_a_job_records_the_owner_of_the_key_that_created_it(
    api: ModuleType, tables: dict[str, str], path: str
) -> None:
    # Given a request the authorizer vouched for (its context names the key's owner)
    if path == "/bulk":
        event = api_event(
            "POST", path, body="url\nhttps://example.com/owned\n", headers={"Content-Type": "text/csv"}
        )
    else:
        event = api_event(
            "POST",
            path,
            body=json.dumps({"file_name": "a.csv", "size": 10}),
            headers={"Content-Type": "application/json"},
        )
    event["requestContext"]["authorizer"] = {
        "owner_id": "team-blue",
        "role": "member",
        "key_id": "k1",
        "key_name": "ci",
        "principalId": "team-blue",
    }
    # When it creates a job
    answer = call(api, event)
    assert answer["statusCode"] in (201, 202), answer
    # Then the job's record names that owner
    job = JobsStore(tables["JOBS_TABLE"]).get_job(json.loads(answer["body"])["job_id"])
    assert job is not None and job.owner == "team-blue"


def test_callers_without_a_key_may_upload_only_small_files_directly(
    api: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an open stack whose callers without a key may upload at most 1 MB directly
    monkeypatch.setenv("ANONYMOUS_MAX_UPLOAD_BYTES", "1000000")
    api_settings.cache_clear()
    # Then a larger file is 413, saying why; a small one gets its presigned upload
    refused = post_upload(api, {"filename": "big.csv", "size": 1_000_001})
    assert refused["statusCode"] == 413
    assert "without an API key" in json.loads(refused["body"])["message"]
    assert post_upload(api, {"filename": "small.csv", "size": 1_000_000})["statusCode"] == 201
