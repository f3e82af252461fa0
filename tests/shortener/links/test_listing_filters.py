"""``GET /links`` narrowed to one bulk job's links (``job_id``) under moto: the links a job made,
found among the owner's other links and jobs, page after page."""

import json
from types import ModuleType
from typing import Any

import pytest

from tests.shortener.jobs.test_processing import api, bulk_env, drain, queue_url  # noqa: F401
from tests.support.api import ApiCaller, as_caller, call
from tests.support.bulk import csv_text
from tests.support.events import api_event

pytestmark = pytest.mark.integration


def upload(handler: ModuleType, owner: str, urls: list[str]) -> str:
    text = csv_text([(url,) for url in urls], header=("url",))
    event = as_caller(
        api_event("POST", "/bulk", body=text.encode(), headers={"Content-Type": "text/csv"}), owner
    )
    answer = call(handler, event)
    assert answer["statusCode"] == 202, answer["body"]
    return str(json.loads(answer["body"])["job_id"])


def body(answer: dict[str, Any]) -> Any:
    assert answer["statusCode"] == 200, answer["body"]
    return json.loads(answer["body"])


def test_links_are_filtered_by_the_job_that_made_them(
    api: ModuleType,  # noqa: F811
    queue_url: str,  # noqa: F811
    bulk_env: dict[str, str],  # noqa: F811
) -> None:
    # Given two jobs of alice, a link she made alone, and a job of bob's
    alice = ApiCaller(api, "alice")
    first = upload(api, "alice", [f"https://example.com/first/{n}" for n in range(7)])
    second = upload(api, "alice", [f"https://example.com/second/{n}" for n in range(3)])
    upload(api, "bob", ["https://example.com/bob"])
    alice.shorten("https://example.com/alone")
    drain(bulk_env, queue_url)
    # When she lists the first job's links two at a time, following the cursor
    seen: list[str] = []
    cursor = None
    for _ in range(20):
        page = body(alice.list_links(job_id=first, limit="2", **({"cursor": cursor} if cursor else {})))
        assert len(page["links"]) <= 2
        seen += [link["url"] for link in page["links"]]
        assert {link["job_id"] for link in page["links"]} <= {first}
        if (cursor := page["next_cursor"]) is None:
            break
    # Then she gets exactly that job's links, each once
    assert sorted(seen) == sorted(f"https://example.com/first/{n}" for n in range(7))
    # And the other job's links are its own, while another owner's job gives her nothing
    other = body(alice.list_links(job_id=second))["links"]
    assert sorted(link["url"] for link in other) == [f"https://example.com/second/{n}" for n in range(3)]
    assert body(alice.list_links(job_id="no-such-job"))["links"] == []
