"""Bulk files on several domains (docs/domains.md): a ``domain`` column puts each row's link on
its domain, a job default covers the rows without one, a row on a domain the stack does not serve
or the uploader may not use is a row error, and each result's short URL is on its row's domain."""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import boto3
import pytest

from shortener.exceptions import DomainNotAllowedError, UnknownDomainError
from shortener.jobs.bulk import results_csv
from shortener.jobs.model import RowOutcome
from shortener.jobs.store.chunk_records import decode_outcomes, encode_outcomes
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


@dataclass(frozen=True)
class Stack:
    """The API with the domains sho.rt (the default), go.example and shop.example, its tables and
    its bulk queue, drained by a loop composed as the poller composes it."""

    api: ModuleType
    tables: dict[str, str]
    queue_url: str

    def upload(self, text: str, domains: str = "", **query: str) -> dict[str, Any]:
        """``POST /bulk`` by an owner limited to ``domains`` ("": every one)."""
        event = api_event("POST", "/bulk", body=text.encode(), headers={"Content-Type": "text/csv"})
        if query:
            event["queryStringParameters"] = query
            event["multiValueQueryStringParameters"] = {name: [value] for name, value in query.items()}
        return call(self.api, as_uploader(event, domains))

    def processed(self, text: str, domains: str = "", **query: str) -> list[dict[str, str]]:
        """The results of a job for ``text``, uploaded by an owner limited to ``domains``."""
        answer = self.upload(text, domains, **query)
        assert answer["statusCode"] == 202, answer["body"]
        drain(self.tables, self.queue_url)
        job_id = json.loads(answer["body"])["job_id"]
        event = api_event(
            "GET",
            f"/jobs/{job_id}/results",
            resource="/jobs/{job_id}/results",
            path_parameters={"job_id": job_id},
        )
        results = call(self.api, as_uploader(event, ""))
        assert results["statusCode"] == 200, results["body"]
        return parse_results(results["body"])

    def domain_of(self, code: str) -> str | None:
        link = LinksStore(self.tables["LINKS_TABLE"]).get(code, consistent=True)
        assert link is not None
        return link.domain


@pytest.fixture
def stack(
    api: ModuleType,  # noqa: F811
    bulk_env: dict[str, str],  # noqa: F811
    queue_url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Stack]:
    monkeypatch.setenv("DOMAINS", "go.example,shop.example")
    api_settings.cache_clear()
    yield Stack(api, bulk_env, queue_url)
    api_settings.cache_clear()


def as_uploader(event: dict[str, Any], domains: str) -> dict[str, Any]:
    as_caller(event, "ann")
    event["requestContext"]["authorizer"]["domains"] = domains
    return event


@pytest.mark.integration
def test_a_domain_column_puts_each_rows_link_on_its_domain(stack: Stack) -> None:
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
    # When the job is processed
    a, b, c, d, e, f = stack.processed(text, domains="sho.rt,go.example")
    # Then each made link is on its row's domain, and its short URL says so
    assert stack.domain_of(a["code"]) == "go.example"
    assert (b["code"], stack.domain_of("promo-b")) == ("promo-b", "go.example")
    assert stack.domain_of(c["code"]) is None
    assert stack.domain_of(f["code"]) is None
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
    assert LinksStore(stack.tables["LINKS_TABLE"]).get("promo-e", consistent=True) is None


@pytest.mark.integration
def test_a_job_default_domain_covers_the_rows_without_one(stack: Stack) -> None:
    text = csv_text([("https://example.com/a", ""), ("https://example.com/b", "sho.rt")], ("url", "domain"))
    a, b = stack.processed(text, domain="Shop.Example")
    assert a["short_url"] == f"https://shop.example/{a['code']}"
    assert b["short_url"] == f"https://sho.rt/{b['code']}"
    assert (stack.domain_of(a["code"]), stack.domain_of(b["code"])) == ("shop.example", None)


@pytest.mark.integration
def test_an_uploader_kept_from_the_default_domain_gets_their_first(stack: Stack) -> None:
    (row,) = stack.processed(csv_text([("https://example.com/a",)]), domains="shop.example")
    assert row["short_url"] == f"https://shop.example/{row['code']}"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("domain", "status", "error"),
    [("other.example", 422, "unknown_domain"), ("shop.example", 403, "domain_not_allowed")],
)
def test_a_job_default_domain_the_uploader_cannot_use_is_refused_at_once(
    stack: Stack, domain: str, status: int, error: str
) -> None:
    answer = stack.upload(csv_text([("https://example.com/x",)]), domains="go.example", domain=domain)
    assert answer["statusCode"] == status
    assert json.loads(answer["body"])["error"] == error
    assert domain in json.loads(answer["body"])["message"]
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=stack.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"


@pytest.mark.integration
def test_a_direct_upload_takes_a_default_domain_and_keeps_the_uploaders_domains(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shortener.jobs.store import JobsStore
    from tests.support.bulk import create_bulk_bucket

    monkeypatch.setenv("BULK_BUCKET", create_bulk_bucket())
    api_settings.cache_clear()
    stack.api.links.cache_clear()

    def post(payload: dict[str, Any]) -> dict[str, Any]:
        event = api_event(
            "POST", "/bulk/uploads", body=json.dumps(payload), headers={"Content-Type": "application/json"}
        )
        return call(stack.api, as_uploader(event, "go.example"))

    assert post({"size": 100, "domain": "shop.example"})["statusCode"] == 403
    assert post({"size": 100, "domain": "nope.example"})["statusCode"] == 422
    good = post({"size": 100, "domain": "GO.example"})
    assert good["statusCode"] == 201, good["body"]
    job = JobsStore(stack.tables["JOBS_TABLE"]).get_job(json.loads(good["body"])["job_id"])
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
    # When its file is split
    world.splitter.split(world.upload(data, domains=domains), "invocation-1", lambda: 600.0)
    # Then its message carries the domains and the rows' cells, for the loops to check
    (message,) = world.queued()
    assert message.domains == domains
    assert message.attributes == {0: {"domain": "go.example"}}
