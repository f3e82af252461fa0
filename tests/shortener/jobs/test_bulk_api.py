"""POST /bulk under moto: what an upload accepts, refuses, and puts on the queue."""

import json
from types import ModuleType
from typing import Any

import boto3
import pytest

from shortener.jobs.message_model import ChunkMessage
from shortener.jobs.store import JobsStore
from shortener.settings import api_settings
from tests.support.api import call
from tests.support.bulk import BOUNDARY, create_bulk_queues, csv_text, multipart_body
from tests.support.events import api_event

pytestmark = pytest.mark.integration


@pytest.fixture
def queue_url(tables: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    url = create_bulk_queues()
    monkeypatch.setenv("BULK_QUEUE_URL", url)
    return url


@pytest.fixture
def api(queue_url: str) -> ModuleType:
    from functions.api import app

    app.links.cache_clear()
    return app


def upload(api: ModuleType, body: bytes, content_type: str = "text/csv") -> dict[str, Any]:
    return call(api, api_event("POST", "/bulk", body=body, headers={"Content-Type": content_type}))


def queued_messages(queue_url: str) -> list[ChunkMessage]:
    sqs = boto3.client("sqs")
    messages: list[ChunkMessage] = []
    while batch := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get(
        "Messages", []
    ):
        messages.extend(ChunkMessage.model_validate_json(message["Body"]) for message in batch)
    return sorted(messages, key=lambda message: message.chunk)


def job_items(tables: dict[str, str]) -> list[dict[str, Any]]:
    """The jobs table's job and chunk items (not the owners' daily quota counters, "#quota#...")."""
    items = boto3.client("dynamodb").scan(TableName=tables["JOBS_TABLE"])["Items"]
    return [item for item in items if not item["job_id"]["S"].startswith("#")]


def test_upload_is_accepted_with_a_job_id_and_rows_packed_many_to_a_message(
    api: ModuleType, queue_url: str
) -> None:
    # Given a CSV of 600 URLs
    body = csv_text([[f"https://example.com/{n}"] for n in range(600)]).encode()
    # When it is uploaded
    answer = upload(api, body)
    # Then the answer is 202 with the job id, the row count and where to follow it
    assert answer["statusCode"] == 202
    accepted = json.loads(answer["body"])
    assert accepted["total"] == 600
    assert accepted["status_url"] == f"https://sho.rt/jobs/{accepted['job_id']}"
    # And the rows went out 250 to a message, numbered in input order
    messages = queued_messages(queue_url)
    assert [len(message.rows) for message in messages] == [250, 250, 100]
    assert [message.first_row for message in messages] == [1, 251, 501]
    assert messages[2].rows[-1] == ("https://example.com/599", "")
    assert {message.job_id for message in messages} == {accepted["job_id"]}


def test_new_job_is_queued_until_a_loop_processes_it(api: ModuleType) -> None:
    accepted = json.loads(upload(api, b"url\nhttps://example.com/a\n")["body"])
    status = call(
        api,
        api_event(
            "GET",
            f"/jobs/{accepted['job_id']}",
            resource="/jobs/{job_id}",
            path_parameters={"job_id": accepted["job_id"]},
        ),
    )
    assert status["statusCode"] == 200
    body = json.loads(status["body"])
    assert (body["status"], body["total"], body["succeeded"], body["failed"]) == ("queued", 1, 0, 0)


def test_bom_quoted_commas_newlines_and_extra_columns_are_read(api: ModuleType, queue_url: str) -> None:
    # Given a spreadsheet export: a BOM, a 'URL' header in capitals, an extra column, a quoted URL
    # with a comma, a quoted note with a line break, and a custom code column
    text = (
        "note,URL,Code\r\n"
        '"first, with comma","https://example.com/a,b",promo\r\n'
        '"two\nlines",https://example.com/c,\r\n'
        "\r\n"
        "third,https://example.com/d,\r\n"
    )
    answer = upload(api, "\ufeff".encode() + text.encode())
    # Then three rows were read, each with its URL and code
    assert answer["statusCode"] == 202
    assert json.loads(answer["body"])["total"] == 3
    [message] = queued_messages(queue_url)
    assert message.rows == [
        ("https://example.com/a,b", "promo"),
        ("https://example.com/c", ""),
        ("https://example.com/d", ""),
    ]


def test_multipart_upload_from_the_page_is_read(api: ModuleType, queue_url: str) -> None:
    body = multipart_body(b"url\nhttps://example.com/x\nhttps://example.com/y\n")
    answer = upload(api, body, f"multipart/form-data; boundary={BOUNDARY}")
    assert answer["statusCode"] == 202
    [message] = queued_messages(queue_url)
    assert message.rows == [("https://example.com/x", ""), ("https://example.com/y", "")]


def test_a_multipart_uploads_file_name_is_shown_with_its_job(api: ModuleType, queue_url: str) -> None:
    # Given a file uploaded from the page's form
    body = multipart_body(b"url\nhttps://example.com/n\n", filename="spring flyers.csv")
    accepted = json.loads(upload(api, body, f"multipart/form-data; boundary={BOUNDARY}")["body"])
    # When its status is read
    path = {"job_id": accepted["job_id"]}
    status = call(
        api, api_event("GET", f"/jobs/{accepted['job_id']}", resource="/jobs/{job_id}", path_parameters=path)
    )
    # Then it names the file; a CSV sent as the body has no name
    assert json.loads(status["body"])["file_name"] == "spring flyers.csv"
    plain = json.loads(upload(api, b"url\nhttps://example.com/p\n")["body"])
    path = {"job_id": plain["job_id"]}
    shown = call(
        api, api_event("GET", f"/jobs/{plain['job_id']}", resource="/jobs/{job_id}", path_parameters=path)
    )
    assert json.loads(shown["body"])["file_name"] is None


def test_a_column_the_reader_does_not_know_is_listed_with_the_job(api: ModuleType, queue_url: str) -> None:
    # Given a file whose title column is misspelt
    accepted = json.loads(upload(api, b"url,titel\nhttps://example.com/t,Spring sale\n")["body"])
    # When its status is read
    path = {"job_id": accepted["job_id"]}
    status = call(
        api, api_event("GET", f"/jobs/{accepted['job_id']}", resource="/jobs/{job_id}", path_parameters=path)
    )
    # Then the column is named as ignored, and its cells went nowhere
    assert json.loads(status["body"])["ignored_columns"] == ["titel"]
    [message] = queued_messages(queue_url)
    assert message.rows == [("https://example.com/t", "")]


@pytest.mark.parametrize(
    ("body", "content_type", "status", "error"),
    [
        (b"name,code\nhttps://example.com/,x\n", "text/csv", 400, "invalid_csv"),
        (b"url\n", "text/csv", 400, "invalid_csv"),
        (b"url\n\n \n", "text/csv", 400, "invalid_csv"),
        (b"", "text/csv", 400, "invalid_csv"),
        # Only a file that is not text at all is refused whole: a workbook, UTF-16, binary bytes.
        (b"PK\x03\x04\x14\x00\x06\x00", "text/csv", 400, "invalid_csv"),
        ("url\nhttps://example.com/\n".encode("utf-16"), "text/csv", 400, "invalid_csv"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "text/csv", 400, "invalid_csv"),
        (b"url\nhttps://example.com/\n", "application/pdf", 415, "unsupported_media_type"),
    ],
)
def test_bad_uploads_are_a_clear_4xx_and_write_nothing(
    api: ModuleType,
    tables: dict[str, str],
    queue_url: str,
    body: bytes,
    content_type: str,
    status: int,
    error: str,
) -> None:
    answer = upload(api, body, content_type)
    assert answer["statusCode"] == status
    problem = json.loads(answer["body"])
    assert problem["error"] == error
    assert problem["message"]
    assert job_items(tables) == []
    assert queued_messages(queue_url) == []


def test_a_multipart_body_of_many_tiny_parts_is_refused_before_it_is_parsed(
    api: ModuleType, tables: dict[str, str], queue_url: str
) -> None:
    # Given a multipart body of 40,000 tiny parts (about 2 MB, under the size limit)
    parts = b"".join(
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="f{n}"\r\n\r\nx\r\n'.encode()
        for n in range(40_000)
    )
    body = parts + f"--{BOUNDARY}--\r\n".encode()
    # When it is uploaded
    answer = upload(api, body, f"multipart/form-data; boundary={BOUNDARY}")
    # Then it is a 400 that says why, and nothing was written
    assert answer["statusCode"] == 400
    assert "parts" in json.loads(answer["body"])["message"]
    assert job_items(tables) == []
    assert queued_messages(queue_url) == []


def test_upload_above_the_size_limit_is_413(
    api: ModuleType, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a limit of 1,000 bytes
    monkeypatch.setenv("MAX_UPLOAD_BYTES", "1000")
    from shortener.settings import api_settings

    api_settings.cache_clear()
    # When 1,001 bytes are uploaded
    body = ("url\n" + "https://example.com/" + "a" * 977).encode()
    assert len(body) == 1001
    answer = upload(api, body)
    # Then the answer is 413 and nothing was written
    assert answer["statusCode"] == 413
    assert json.loads(answer["body"])["error"] == "payload_too_large"
    assert job_items(tables) == []


@pytest.mark.parametrize("job_id", ["0" * 32, "not-a-job", "x" * 200])
def test_unknown_or_malformed_job_is_404(api: ModuleType, job_id: str) -> None:
    for path, resource in (
        (f"/jobs/{job_id}", "/jobs/{job_id}"),
        (f"/jobs/{job_id}/results", "/jobs/{job_id}/results"),
    ):
        answer = call(api, api_event("GET", path, resource=resource, path_parameters={"job_id": job_id}))
        assert answer["statusCode"] == 404
        assert json.loads(answer["body"])["error"] == "job_not_found"


def test_the_index_page_offers_a_csv_upload(api: ModuleType) -> None:
    page = call(api, api_event("GET", "/"))["body"]
    assert 'id="bulk-form"' in page
    assert 'type="file"' in page


@pytest.mark.parametrize("from_chunk", ["-1", "\u00b2", "1e3", "99999999"])
def test_a_malformed_results_page_cursor_is_400(api: ModuleType, from_chunk: str) -> None:
    accepted = json.loads(upload(api, b"url\nhttps://example.com/a\n")["body"])
    job_id = accepted["job_id"]
    event = api_event(
        "GET",
        f"/jobs/{job_id}/results",
        resource="/jobs/{job_id}/results",
        path_parameters={"job_id": job_id},
    )
    event["queryStringParameters"] = {"from_chunk": from_chunk}
    answer = call(api, event)
    assert answer["statusCode"] == 400
    assert json.loads(answer["body"])["error"] == "invalid_request"


def test_when_the_queue_is_unavailable_the_upload_is_503_and_no_job_remains(
    api: ModuleType, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a queue that does not exist (deleted, or a wrong setting)
    monkeypatch.setenv("BULK_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/missing")
    from shortener.settings import api_settings

    api_settings.cache_clear()
    # When a CSV is uploaded
    answer = upload(api, b"url\nhttps://example.com/a\n")
    # Then the answer says so, and no job was left behind to wait forever
    assert answer["statusCode"] == 503
    assert json.loads(answer["body"])["error"] == "queue_unavailable"
    assert job_items(tables) == []


def test_a_members_jobs_are_theirs_alone(api: ModuleType) -> None:
    from tests.support.api import ApiCaller

    # Given a job uploaded by alice
    alice, bob, admin = ApiCaller(api, "alice"), ApiCaller(api, "bob"), ApiCaller(api, "ops", role="admin")
    answer = alice.request(
        "POST", "/bulk", body=b"url\nhttps://example.com/a\n", headers={"Content-Type": "text/csv"}
    )
    job_id = json.loads(answer["body"])["job_id"]

    def job(caller: ApiCaller, suffix: str = "") -> dict[str, Any]:
        return caller.request(
            "GET",
            f"/jobs/{job_id}{suffix}",
            resource="/jobs/{job_id}" + suffix,
            path_parameters={"job_id": job_id},
        )

    # Then bob gets the 404 of an unknown job for its status and its results
    assert [job(bob)["statusCode"], job(bob, "/results")["statusCode"]] == [404, 404]
    assert json.loads(job(bob)["body"])["error"] == "job_not_found"
    # And alice and an admin see it, with its owner
    assert json.loads(job(alice)["body"])["owner"] == "alice"
    assert job(admin)["statusCode"] == 200


def test_the_callers_jobs_are_listed_newest_first(api: ModuleType) -> None:
    from freezegun import freeze_time

    from tests.support.api import ApiCaller

    alice, bob = ApiCaller(api, "alice"), ApiCaller(api, "bob")
    uploaded = []
    for n in range(3):
        with freeze_time(f"2026-05-01T10:00:0{n}Z"):
            answer = alice.request(
                "POST",
                "/bulk",
                body=f"url\nhttps://example.com/{n}\n".encode(),
                headers={"Content-Type": "text/csv"},
            )
        uploaded.append(json.loads(answer["body"])["job_id"])
    bob.request("POST", "/bulk", body=b"url\nhttps://example.com/b\n", headers={"Content-Type": "text/csv"})
    first = json.loads(alice.request("GET", "/jobs", query={"limit": "2"})["body"])
    second = json.loads(alice.request("GET", "/jobs", query={"cursor": first["next_cursor"]})["body"])
    assert [job["job_id"] for job in first["jobs"] + second["jobs"]] == uploaded[::-1]
    assert second["next_cursor"] is None
    assert all(job["status"] == "queued" for job in first["jobs"])
    # Without a key there is no listing: every keyless caller is the same anonymous owner
    assert ApiCaller(api, None).request("GET", "/jobs")["statusCode"] == 403


def test_the_page_uploads_large_files_straight_to_storage_and_links_the_whole_results_file(
    api: ModuleType,
) -> None:
    # The page speaks the API's own words: the direct upload route and its answer's fields, the
    # job's phases, and the results file link (never a first page of the results).
    page = call(api, api_event("GET", "/"))["body"]
    for contract in (
        '"bulk/uploads"',
        "upload.url",
        "upload.onprogress",
        "results_file_url",
        "results_ready",
    ):
        assert contract in page
    assert "SMALL_BODY_BYTES = 4000000" in page


TOPIC = "arn:aws:sns:us-east-1:123456789012:jobs-done"


def upload_naming_topic(api: ModuleType, topic: str) -> dict[str, Any]:
    event = api_event(
        "POST", "/bulk", body=b"url\nhttps://example.com/t\n", headers={"Content-Type": "text/csv"}
    )
    event["queryStringParameters"] = {"notify_topic": topic}
    event["multiValueQueryStringParameters"] = {"notify_topic": [topic]}
    return call(api, event)


def test_a_job_names_a_topic_only_where_the_stack_allows_it(
    api: ModuleType, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a stack that allows no job topics, a job naming one is refused, writing nothing
    refused = upload_naming_topic(api, TOPIC)
    assert refused["statusCode"] == 400, refused["body"]
    assert "AllowJobTopics" in json.loads(refused["body"])["message"]
    assert job_items(tables) == []
    # Given one that allows its own account and region's topics
    monkeypatch.setenv("JOB_TOPIC_PREFIX", "arn:aws:sns:us-east-1:123456789012:")
    from shortener.settings import api_settings

    api_settings.cache_clear()
    # Then a topic elsewhere is refused, and one there is kept on the job
    assert upload_naming_topic(api, "arn:aws:sns:eu-west-1:123456789012:x")["statusCode"] == 400
    accepted = upload_naming_topic(api, TOPIC)
    assert accepted["statusCode"] == 202, accepted["body"]
    job = JobsStore(api_settings().JOBS_TABLE).get_job(json.loads(accepted["body"])["job_id"])
    assert job is not None and job.notify_topic == TOPIC


def test_a_job_over_the_owners_daily_rows_is_429_and_writes_nothing(
    api: ModuleType, tables: dict[str, str], queue_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an owner's daily quota of 5 rows, 3 of them used by a first job
    monkeypatch.setenv("OWNER_DAILY_ROWS", "5")
    api_settings.cache_clear()
    assert upload(api, b"url\n" + b"https://example.com/a\n" * 3)["statusCode"] == 202
    jobs_before, messages_before = len(job_items(tables)), len(queued_messages(queue_url))
    # When a second job of 3 rows is sent
    answer = upload(api, b"url\n" + b"https://example.com/b\n" * 3)
    # Then it is refused, saying why, and nothing of it is written
    assert answer["statusCode"] == 429
    problem = json.loads(answer["body"])
    assert problem["error"] == "quota_exceeded" and "5 rows" in problem["message"]
    assert (len(job_items(tables)), len(queued_messages(queue_url))) == (jobs_before, 0)
    assert messages_before == 1
    # And a job that fits what is left is accepted
    assert upload(api, b"url\nhttps://example.com/c\nhttps://example.com/d\n")["statusCode"] == 202


def test_with_a_short_domain_the_apis_own_links_stay_on_the_host_the_request_came_to(
    api: ModuleType, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    request.addfinalizer(api_settings.cache_clear)
    # Given a short domain that is not the API's (behind the edge the domain is CloudFront's,
    # which passes no API key on), and a request to the API's own host
    monkeypatch.setenv("PUBLIC_BASE_URL", "https://go.example/")
    api_settings.cache_clear()
    api_host = {"Host": "abc123.execute-api.eu-west-1.amazonaws.com"}
    # When a job is uploaded, then followed, and a link is made
    event = api_event("POST", "/bulk", body=b"url\nhttps://example.com/a\n", headers=api_host)
    event["headers"]["Content-Type"] = "text/csv"
    event["requestContext"]["stage"] = "prod"
    accepted = json.loads(call(api, event)["body"])
    status_event = api_event(
        "GET",
        f"/jobs/{accepted['job_id']}",
        resource="/jobs/{job_id}",
        path_parameters={"job_id": accepted["job_id"]},
        headers=api_host,
    )
    status_event["requestContext"]["stage"] = "prod"
    job = json.loads(call(api, status_event)["body"])
    shortened = call(api, api_event("POST", "/", body=json.dumps({"url": "https://example.com/b"})))
    # Then the job's status and results URLs name the API's host and stage
    api_base = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/"
    assert accepted["status_url"] == f"{api_base}jobs/{accepted['job_id']}"
    assert job["results_url"] == f"{api_base}jobs/{accepted['job_id']}/results"
    # (kept with the job for its job-ended event's links, and its short URLs' base beside it)
    stored = JobsStore(api_settings().JOBS_TABLE).get_job(accepted["job_id"])
    assert stored is not None and (stored.api_url, stored.base_url) == (api_base, "https://go.example/")
    # And the short URL names the short domain
    assert json.loads(shortened["body"])["short_url"].startswith("https://go.example/")
