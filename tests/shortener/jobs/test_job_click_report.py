"""GET /jobs/{job_id}/clicks under moto for a job too large to answer inline: 202 with Retry-After
while its report file is built (one build asked for, however often the caller asks), then 303 to
the file; a file older than an hour is built again. Another owner's job is a 404."""

import json
from types import ModuleType
from typing import Any

import boto3
import pytest
from freezegun import freeze_time

from shortener.jobs.click_reports import report_key
from shortener.services.worker import click_report_writer
from tests.support.api import ApiCaller, response_header
from tests.support.bulk import create_bulk_bucket, create_bulk_queues, csv_text

pytestmark = pytest.mark.integration


class RecordingFiles:
    def __init__(self) -> None:
        self.reports: list[str] = []

    def request_click_report(self, job_id: str) -> None:
        self.reports.append(job_id)


@pytest.fixture
def api(tables: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("BULK_QUEUE_URL", create_bulk_queues())
    monkeypatch.setenv("BULK_BUCKET", create_bulk_bucket())
    monkeypatch.setenv("INLINE_RESULTS_ROWS", "2")
    from functions.api import app
    from shortener.services import api as api_services

    app.links.cache_clear()
    recorder = RecordingFiles()
    monkeypatch.setattr(api_services, "_jobs_worker", lambda: recorder)
    api_services.job_queries.cache_clear()
    app.recorder = recorder  # type: ignore[attr-defined]
    return app


def report(caller: ApiCaller, job_id: str) -> dict[str, Any]:
    return caller.request(
        "GET", f"/jobs/{job_id}/clicks", resource="/jobs/{job_id}/clicks", path_parameters={"job_id": job_id}
    )


def test_a_large_jobs_report_is_built_once_on_request_then_redirected_to(api: ModuleType) -> None:
    alice, bob = ApiCaller(api, "alice"), ApiCaller(api, "bob")
    body = csv_text([[f"https://example.com/{n}"] for n in range(5)])
    accepted = alice.request("POST", "/bulk", body=body, headers={"Content-Type": "text/csv"})
    job_id = json.loads(accepted["body"])["job_id"]
    with freeze_time("2026-11-26T10:00:00Z") as frozen:
        # When the report of a job larger than the inline limit is asked for, twice
        first, second = report(alice, job_id), report(alice, job_id)
        # Then both are 202 with Retry-After, and one build was asked of the jobs worker
        assert [first["statusCode"], second["statusCode"]] == [202, 202]
        assert response_header(first, "Retry-After") == "5"
        assert json.loads(first["body"])["error"] == "report_not_ready"
        assert api.recorder.reports == [job_id]
        # When the jobs worker has built it
        click_report_writer.cache_clear()
        written = click_report_writer().write(job_id)
        assert written == report_key(job_id)
        # Then the next ask is a 303 to the file, whose first line is the report's header
        done = report(alice, job_id)
        assert done["statusCode"] == 303
        assert response_header(done, "Location") == json.loads(done["body"])["report_file_url"]
        stored = boto3.client("s3").get_object(Bucket=create_bulk_bucket(), Key=report_key(job_id))
        assert stored["Body"].read().decode().splitlines()[0] == (
            "row,url,code,short_url,clicks,humans,first_click,last_click,destinations"
        )
        # And an hour later the file is built again
        frozen.tick(3601)
        assert report(alice, job_id)["statusCode"] == 202
        assert api.recorder.reports == [job_id, job_id]
    # Another owner's job is a 404
    assert report(bob, job_id)["statusCode"] == 404
