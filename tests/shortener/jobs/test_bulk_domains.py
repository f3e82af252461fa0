"""Bulk files on several domains (docs/domains.md): a ``domain`` column puts each row's link on
its domain, a job default covers the rows without one, a row on a domain the stack does not serve
or the uploader may not use is a row error, and each result's short URL is on its row's domain."""

import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest

from shortener.exceptions import DomainNotAllowedError, UnknownDomainError
from shortener.jobs.bulk import BulkOptions, JobOrigin, create_upload_job, results_csv
from shortener.jobs.model import RowOutcome
from shortener.jobs.store.chunk_records import decode_outcomes, encode_outcomes
from shortener.jobs.tasks_model import SplitRequest
from shortener.jobs.view_model import DirectUploadRequest
from shortener.links.domains import JobDomains, ShortUrls
from shortener.links.model import ATTRIBUTE_COLUMNS, attributes_of
from shortener.links.store import LinksStore
from shortener.settings import api_settings
from tests.shortener.jobs.test_bulk_files import World
from tests.shortener.jobs.test_processing import api, bulk_env, drain, queue_url  # noqa: F401
from tests.shortener.links.test_domains import member
from tests.support.api import as_caller, call
from tests.support.bulk import csv_text, parse_results
from tests.support.events import api_event

URLS = ShortUrls(
    "https://sho.rt/",
    "sho.rt",
    {"go.example": "https://go.example/", "shop.example": "https://shop.example/"},
)


def test_domain_is_a_bulk_column_and_a_job_default() -> None:
    assert "domain" in ATTRIBUTE_COLUMNS
    attributes = attributes_of({"domain": "go.example"}, {"domain": "Shop.Example"})
    assert attributes is not None and attributes.domain == "shop.example"
    # An empty cell takes the job's default
    attributes = attributes_of({"domain": "go.example"}, {"domain": " "})
    assert attributes is not None and attributes.domain == "go.example"


def test_a_jobs_domains_judge_each_row_as_post_does_for_its_uploader() -> None:
    # Given the domains of a job whose uploader may use the default domain and go.example
    domains = JobDomains.of(URLS, member("sho.rt,go.example"))
    assert domains.allowed == ("sho.rt", "go.example")
    # Then a row names its domain in any case, the default one stored as None
    assert domains.for_row("GO.example") == "go.example"
    assert domains.for_row("sho.rt") is None
    assert domains.for_row(None) is None
    # And a forbidden or unknown one is refused, naming it and what is allowed
    with pytest.raises(DomainNotAllowedError, match=r"shop\.example; you may use sho\.rt, go\.example"):
        domains.for_row("shop.example")
    with pytest.raises(UnknownDomainError, match=r"'other\.example'; its domains are: sho\.rt, go\.example"):
        domains.for_row("other.example")
    # An uploader limited to domains without the default one gets their first when naming none
    assert JobDomains.of(URLS, member("shop.example")).for_row(None) == "shop.example"
    # And an unlimited one keeps no list
    assert JobDomains.of(URLS, member()).allowed is None


def test_each_results_short_url_is_on_its_rows_domain_and_outcomes_keep_it() -> None:
    outcomes = [
        RowOutcome(row=1, url="https://example.com/a", code="a1", domain="go.example"),
        RowOutcome(row=2, url="https://example.com/b", code="b2"),
        RowOutcome(row=3, url="https://example.com/c", error="unknown_domain: no"),
        RowOutcome(row=4, url="https://example.com/d", code="d4", domain="shop.example"),
    ]
    assert decode_outcomes(1, encode_outcomes(outcomes)) == outcomes
    rows = parse_results(results_csv(outcomes, URLS))
    assert [row["short_url"] for row in rows] == [
        "https://go.example/a1",
        "https://sho.rt/b2",
        "",
        "https://shop.example/d4",
    ]


@pytest.fixture
def api_with_domains(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:  # noqa: F811
    monkeypatch.setenv("DOMAINS", "go.example,shop.example")
    api_settings.cache_clear()
    yield api
    api_settings.cache_clear()


def as_uploader(event: dict[str, Any], domains: str) -> dict[str, Any]:
    as_caller(event, "ann")
    event["requestContext"]["authorizer"]["domains"] = domains
    return event


def upload(handler: ModuleType, text: str, domains: str = "", **query: str) -> dict[str, Any]:
    event = api_event("POST", "/bulk", body=text.encode(), headers={"Content-Type": "text/csv"})
    if query:
        event["queryStringParameters"] = query
        event["multiValueQueryStringParameters"] = {name: [value] for name, value in query.items()}
    return call(handler, as_uploader(event, domains))


def results(handler: ModuleType, job_id: str) -> list[dict[str, str]]:
    event = api_event(
        "GET",
        f"/jobs/{job_id}/results",
        resource="/jobs/{job_id}/results",
        path_parameters={"job_id": job_id},
    )
    answer = call(handler, as_uploader(event, ""))
    assert answer["statusCode"] == 200, answer["body"]
    return parse_results(answer["body"])


def domain_of(tables: dict[str, str], code: str) -> str | None:
    link = LinksStore(tables["LINKS_TABLE"]).get(code, consistent=True)
    assert link is not None
    return link.domain


def queued_messages(queue_url: str) -> str:  # noqa: F811
    return boto3.client("sqs").get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]["ApproximateNumberOfMessages"]


@pytest.mark.integration
def test_a_domain_column_puts_each_rows_link_on_its_domain(
    api_with_domains: ModuleType,
    queue_url: str,  # noqa: F811
    bulk_env: dict[str, str],  # noqa: F811
) -> None:
    # Given an uploader who may use the default domain and go.example, and a file naming domains
    text = csv_text(
        [
            ("https://example.com/a", "", "go.example"),
            ("https://example.com/b", "promo-b", "GO.EXAMPLE"),
            ("https://example.com/c", "", ""),
            ("https://example.com/d", "", "shop.example"),
            ("https://example.com/e", "promo-e", "other.example"),
            ("https://example.com/f", "", "sho.rt"),
        ],
        header=("url", "code", "domain"),
    )
    answer = upload(api_with_domains, text, domains="sho.rt,go.example")
    assert answer["statusCode"] == 202, answer["body"]
    # When the job is processed
    drain(bulk_env, queue_url)
    rows = results(api_with_domains, json.loads(answer["body"])["job_id"])
    # Then each made link is on its row's domain, and its short URL says so
    a, b, c, d, e, f = rows
    assert domain_of(bulk_env, a["code"]) == "go.example"
    assert (b["code"], domain_of(bulk_env, "promo-b")) == ("promo-b", "go.example")
    assert domain_of(bulk_env, c["code"]) is None
    assert domain_of(bulk_env, f["code"]) is None
    assert [row["short_url"] for row in (a, b, c, f)] == [
        f"https://go.example/{a['code']}",
        "https://go.example/promo-b",
        f"https://sho.rt/{c['code']}",
        f"https://sho.rt/{f['code']}",
    ]
    # And a row on a forbidden or an unknown domain is a row error naming it, with no link
    assert (d["code"], e["code"]) == ("", "")
    assert (
        d["error"]
        == "domain_not_allowed: You may not make links on shop.example; you may use sho.rt, go.example."
    )
    assert e["error"].startswith(
        "unknown_domain: This stack has no domain 'other.example'; its domains are: "
    )
    assert LinksStore(bulk_env["LINKS_TABLE"]).get("promo-e", consistent=True) is None


@pytest.mark.integration
def test_a_job_default_domain_covers_the_rows_without_one(
    api_with_domains: ModuleType,
    queue_url: str,  # noqa: F811
    bulk_env: dict[str, str],  # noqa: F811
) -> None:
    text = csv_text([("https://example.com/a", ""), ("https://example.com/b", "sho.rt")], ("url", "domain"))
    answer = upload(api_with_domains, text, domain="Shop.Example")
    assert answer["statusCode"] == 202, answer["body"]
    drain(bulk_env, queue_url)
    a, b = results(api_with_domains, json.loads(answer["body"])["job_id"])
    assert a["short_url"] == f"https://shop.example/{a['code']}"
    assert b["short_url"] == f"https://sho.rt/{b['code']}"
    assert (domain_of(bulk_env, a["code"]), domain_of(bulk_env, b["code"])) == ("shop.example", None)


@pytest.mark.integration
def test_an_uploader_kept_from_the_default_domain_gets_their_first(
    api_with_domains: ModuleType,
    queue_url: str,  # noqa: F811
    bulk_env: dict[str, str],  # noqa: F811
) -> None:
    answer = upload(api_with_domains, csv_text([("https://example.com/a",)]), domains="shop.example")
    drain(bulk_env, queue_url)
    (row,) = results(api_with_domains, json.loads(answer["body"])["job_id"])
    assert row["short_url"] == f"https://shop.example/{row['code']}"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("domain", "status", "error"),
    [("other.example", 422, "unknown_domain"), ("shop.example", 403, "domain_not_allowed")],
)
def test_a_job_default_domain_the_uploader_cannot_use_is_refused_at_once(
    api_with_domains: ModuleType,
    queue_url: str,  # noqa: F811
    domain: str,
    status: int,
    error: str,
) -> None:
    answer = upload(
        api_with_domains, csv_text([("https://example.com/x",)]), domains="go.example", domain=domain
    )
    assert answer["statusCode"] == status
    assert json.loads(answer["body"])["error"] == error
    assert domain in json.loads(answer["body"])["message"]
    assert queued_messages(queue_url) == "0"


@pytest.mark.integration
def test_a_direct_upload_takes_a_default_domain_and_keeps_the_uploaders_domains(
    api_with_domains: ModuleType,
    tables: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from shortener.jobs.store import JobsStore
    from tests.support.bulk import create_bulk_bucket

    monkeypatch.setenv("BULK_BUCKET", create_bulk_bucket())
    api_settings.cache_clear()
    api_with_domains.links.cache_clear()

    def post(payload: dict[str, Any]) -> dict[str, Any]:
        event = api_event(
            "POST", "/bulk/uploads", body=json.dumps(payload), headers={"Content-Type": "application/json"}
        )
        return call(api_with_domains, as_uploader(event, "go.example"))

    assert post({"size": 100, "domain": "shop.example"})["statusCode"] == 403
    assert post({"size": 100, "domain": "nope.example"})["statusCode"] == 422
    good = post({"size": 100, "domain": "GO.example"})
    assert good["statusCode"] == 201, good["body"]
    job = JobsStore(tables["JOBS_TABLE"]).get_job(json.loads(good["body"])["job_id"])
    assert job is not None and job.upload is not None and job.domains is not None
    assert job.upload.defaults == {"domain": "go.example"}
    assert job.domains.allowed == ("go.example",)
    assert job.domains.others == {
        "go.example": "https://go.example/",
        "shop.example": "https://shop.example/",
    }


@pytest.mark.integration
def test_a_direct_uploads_messages_carry_the_jobs_domains(tables: dict[str, str]) -> None:
    # Given a direct upload's job with the uploader's domains, and its file naming domains
    world = World(tables)
    data = b"url,domain\nhttps://example.com/a,go.example\nhttps://example.com/b,\n"
    domains = JobDomains.of(URLS, member("go.example"))
    job, _ = create_upload_job(
        DirectUploadRequest(file_name="links.csv", size=len(data)),
        jobs=world.jobs,
        files=world.files,
        origin=JobOrigin(base_url="https://sho.rt/", bucket=world.bucket, domains=domains),
        options=BulkOptions(),
        url_seconds=600,
    )
    assert job.upload is not None
    etag = boto3.client("s3").put_object(Bucket=world.bucket, Key=job.upload.key, Body=data)["ETag"]
    # When its file is split
    world.splitter.split(
        SplitRequest(job_id=job.job_id, bucket=world.bucket, key=job.upload.key, etag=etag.strip('"')),
        "invocation-1",
        lambda: 600.0,
    )
    # Then its message carries the domains and the rows' cells, for the loops to check
    (message,) = world.queued()
    assert message.domains == domains
    assert message.attributes == {0: {"domain": "go.example"}}
