"""Bulk rows with link attributes under moto: the ``expires_at``, ``max_clicks``, ``title`` and
``tags`` columns of a file, the job's defaults for them (query parameters of ``POST /bulk``),
invalid cells as row errors, and invalid defaults refused before anything is queued."""

import json
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import boto3
import pytest
from freezegun import freeze_time

from shortener.jobs.bulk import BulkOptions, JobOrigin, create_upload_job
from shortener.jobs.store import JobsStore
from shortener.jobs.tasks_model import SplitRequest
from shortener.jobs.view_model import DirectUploadRequest
from shortener.links.store import LinksStore
from tests.shortener.jobs.test_bulk_files import World
from tests.shortener.jobs.test_processing import api, bulk_env, drain, queue_url, results  # noqa: F401
from tests.support.api import ApiCaller, call
from tests.support.bulk import create_bulk_bucket, csv_text
from tests.support.events import api_event

pytestmark = pytest.mark.integration

NOW = "2026-06-01T12:00:00Z"


def upload(handler: ModuleType, text: str, **query: str) -> dict[str, Any]:
    event = api_event("POST", "/bulk", body=text.encode(), headers={"Content-Type": "text/csv"})
    if query:
        event["queryStringParameters"] = query
        event["multiValueQueryStringParameters"] = {name: [value] for name, value in query.items()}
    return call(handler, event)


def stored(tables: dict[str, str], code: str) -> Any:
    link = LinksStore(tables["LINKS_TABLE"]).get(code, consistent=True)
    assert link is not None
    return link


@pytest.mark.parametrize("find_if_exists", ["true", "false"])
def test_attribute_columns_and_job_defaults_make_links_with_them(
    api: ModuleType,  # noqa: F811
    queue_url: str,  # noqa: F811
    bulk_env: dict[str, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    find_if_exists: str,
) -> None:
    monkeypatch.setenv("FIND_IF_EXISTS", find_if_exists)
    api.links.cache_clear()
    text = csv_text(
        [
            ("https://example.com/a", "", "", "1", "Flyer A", "print,spring"),
            ("https://example.com/b", "promo-b", "2026-06-30T00:00:00+02:00", "", "", ""),
            ("https://example.com/c", "", "", "", "", ""),
            ("https://example.com/d", "", "2020-01-01T00:00:00Z", "", "", ""),
            ("https://example.com/e", "", "", "0", "", ""),
            ("https://example.com/f", "", "tomorrow", "", "", ""),
        ],
        header=("url", "code", "expires_at", "max_clicks", "title", "tags"),
    )
    with freeze_time(NOW, tick=True):
        # Given a file whose rows set some attributes, uploaded with a job-wide click limit and tag
        answer = upload(api, text, max_clicks="5", tags="campaign")
        assert answer["statusCode"] == 202, answer["body"]
        job_id = json.loads(answer["body"])["job_id"]
        # When the job is processed
        drain(bulk_env, queue_url)
        rows = results(api, job_id)
    # Then each row's cells win over the defaults, and invalid cells are row errors saying why
    codes = [row["code"] for row in rows]
    a, b, c = (stored(bulk_env, code) for code in codes[:3])
    assert (a.max_clicks, a.title, a.tags, a.expires_at) == (1, "Flyer A", ("print", "spring"), None)
    assert (b.code, b.max_clicks, b.tags) == ("promo-b", 5, ("campaign",))
    assert b.expires_at == datetime(2026, 6, 29, 22, tzinfo=UTC)
    assert (c.max_clicks, c.tags, c.title) == (5, ("campaign",), "")
    assert rows[3]["error"].startswith("invalid_request: expires_at: must be in the future")
    assert rows[4]["error"].startswith(
        "invalid_request: max_clicks: Input should be greater than or equal to 1"
    )
    assert rows[5]["error"].startswith("invalid_request: expires_at: Input should be a valid datetime")
    assert [row["code"] == "" for row in rows] == [False, False, False, True, True, True]
    # And a link of the job redirects as often as its limit allows
    caller = ApiCaller(api, None)
    assert [caller.follow(a.code)["statusCode"] for _ in range(2)] == [301, 410]


def test_a_limited_row_never_takes_the_urls_plain_link(
    api: ModuleType,  # noqa: F811
    queue_url: str,  # noqa: F811
    bulk_env: dict[str, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given find-if-exists and a URL that has a plain link already
    monkeypatch.setenv("FIND_IF_EXISTS", "true")
    api.links.cache_clear()
    plain = ApiCaller(api, None).shorten("https://example.com/same")["code"]
    # When a job shortens it once with a click limit and once without
    text = csv_text(
        [("https://example.com/same", "3"), ("https://example.com/same", "")], ("url", "max_clicks")
    )
    job_id = json.loads(upload(api, text)["body"])["job_id"]
    drain(bulk_env, queue_url)
    limited_row, plain_row = results(api, job_id)
    # Then the limited row has a link of its own, and the plain row the URL's one link
    assert limited_row["code"] != plain
    assert stored(bulk_env, limited_row["code"]).max_clicks == 3
    assert plain_row["code"] == plain


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ({"max_clicks": "0"}, "max_clicks: Input should be greater than or equal to 1"),
        ({"expires_at": "2020-01-01T00:00:00Z"}, "expires_at: must be in the future"),
        ({"expires_at": "2099-01-01T00:00:00"}, "expires_at: Input should have timezone info"),
        ({"tags": "not a tag!"}, "tags.0: String should match pattern"),
    ],
)
def test_invalid_job_defaults_are_422_and_queue_nothing(
    api: ModuleType,  # noqa: F811
    queue_url: str,  # noqa: F811
    query: dict[str, str],
    problem: str,
) -> None:
    answer = upload(api, csv_text([("https://example.com/x",)]), **query)
    assert answer["statusCode"] == 422
    assert json.loads(answer["body"])["error"] == "invalid_request"
    assert json.loads(answer["body"])["message"].startswith(problem)
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"


def test_a_direct_uploads_defaults_and_columns_reach_every_message(tables: dict[str, str]) -> None:
    # Given a job for a direct upload with a default expiry, whose file sets titles on some rows
    world = World(tables)
    data = (
        "url,title\n" + "".join(f"https://example.com/{n},{'T' if n % 2 else ''}\n" for n in range(150))
    ).encode()
    defaults = {"expires_at": "2099-01-01T00:00:00+00:00"}
    job, _ = create_upload_job(
        DirectUploadRequest(file_name="links.csv", size=len(data)),
        jobs=world.jobs,
        files=world.files,
        origin=JobOrigin(base_url="https://sho.rt/", bucket=world.bucket),
        options=BulkOptions(),
        url_seconds=600,
        defaults=defaults,
    )
    assert job.upload is not None
    assert world.job(job.job_id).upload.defaults == defaults  # type: ignore[union-attr]
    etag = boto3.client("s3").put_object(Bucket=world.bucket, Key=job.upload.key, Body=data)["ETag"]
    # When its file is split
    world.splitter.split(
        SplitRequest(job_id=job.job_id, bucket=world.bucket, key=job.upload.key, etag=etag.strip('"')),
        "invocation-1",
        lambda: 600.0,
    )
    # Then every message carries the defaults, and the rows with a title their cell
    messages = world.queued()
    assert [message.defaults for message in messages] == [defaults, defaults]
    titled = [message.first_row + index for message in messages for index in message.attributes]
    assert titled == [n + 1 for n in range(150) if n % 2]


def test_direct_upload_defaults_are_validated_with_the_request(
    tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions.api import app

    monkeypatch.setenv("BULK_BUCKET", create_bulk_bucket())
    app.links.cache_clear()

    def post(payload: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        return call(app, api_event("POST", "/bulk/uploads", body=json.dumps(payload), headers=headers))

    bad = post({"size": 100, "max_clicks": 0})
    good = post({"size": 100, "max_clicks": 4, "tags": ["flyer"]})
    assert bad["statusCode"] == 422
    assert json.loads(bad["body"])["message"].startswith(
        "max_clicks: Input should be greater than or equal to 1"
    )
    assert good["statusCode"] == 201, good["body"]
    job = JobsStore(tables["JOBS_TABLE"]).get_job(json.loads(good["body"])["job_id"])
    assert job is not None and job.upload is not None
    assert job.upload.defaults == {"max_clicks": "4", "tags": "flyer"}
