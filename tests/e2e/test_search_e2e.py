"""GET /links filtered end to end on the local stack, over HTTP with the stack's key: a search and
a tag find a link made before 300 newer ones in the first answer, in any letter case; an old job's
links page through that job's links only; a batch by tag over 300 tagged links among 3,000 ends;
a link tagged before the tag index is listed by its tag after the restarter's backfill.
One stack for the module: each test makes links no other test's filter matches."""

import json
import time
import urllib.parse
from typing import Any

import pytest

from local_stack.events.schedules import scheduled_event
from shortener.links.store_backfill import MIGRATIONS_KEY
from shortener.links.store_items import tag_key
from tests.e2e.conftest import RunningStack
from tests.e2e.test_campaign_links_e2e import wait_for_batch
from tests.e2e.test_links_e2e import wait_for_job


def make_links(stack: RunningStack, links: list[dict[str, Any]]) -> list[str]:
    """POST /links/bulk (up to 1,000): the new links' codes in order."""
    answer = stack.post_json("links/bulk", {"links": links})
    assert answer.status == 200, answer.text
    outcomes = answer.json()["links"]
    assert {outcome["status"] for outcome in outcomes} == {201}, outcomes[:3]
    return [outcome["code"] for outcome in outcomes]


def listing(stack: RunningStack, **query: str) -> Any:
    answer = stack.request("GET", "links?" + urllib.parse.urlencode(query))
    assert answer.status == 200, answer.text
    return answer.json()


@pytest.mark.e2e_timeout(240)
def test_a_search_and_a_tag_find_a_link_made_before_300_newer_ones(stack: RunningStack) -> None:
    # Given a titled, tagged link, then 300 newer links
    old = stack.post_json(
        "/", {"url": "https://Old.example/Spring-Sale/shoes", "title": "Needle flyer", "tags": ["e2e-needle"]}
    )
    assert old.status == 201, old.text
    code = old.json()["code"]
    make_links(stack, [{"url": f"https://newer.example/search/{n}"} for n in range(300)])
    # When the owner searches for it by a word or a word's start in another letter case
    for words in ("nEEDLE", "spring-SA", "OLD.example/spr", "E2E-need", code.swapcase()):
        page = listing(stack, q=words)
        # Then the first answer holds it, and only it
        assert [link["code"] for link in page["links"]] == [code], words
    # And the tag finds it in the first answer too
    assert [link["code"] for link in listing(stack, tag="e2e-needle")["links"]] == [code]


@pytest.mark.e2e_timeout(300)
def test_an_old_jobs_links_page_through_that_jobs_links_only(stack: RunningStack) -> None:
    # Given three done jobs, the oldest first, with links of the owner's between them
    jobs = []
    for job in range(3):
        rows = "".join(f"https://jobs.example/e2e-job{job}/{n}\n" for n in range(25))
        accepted = stack.request("POST", "bulk", "url\n" + rows, {"Content-Type": "text/csv"})
        assert accepted.status == 202, accepted.text
        jobs.append(accepted.json()["job_id"])
        assert wait_for_job(stack, jobs[-1], 120)["status"] == "done"
        make_links(stack, [{"url": f"https://between.example/e2e-job{job}/{n}"} for n in range(100)])
    # When the oldest job's links are listed 10 at a time
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = listing(stack, job_id=jobs[0], limit="10", **({"cursor": cursor} if cursor else {}))
        # Then every page is full until the last, and holds that job's links only
        assert {link["job_id"] for link in page["links"]} == {jobs[0]}
        seen += [link["url"] for link in page["links"]]
        if (cursor := page["next_cursor"]) is None:
            break
        assert len(page["links"]) == 10
    assert sorted(seen) == sorted(f"https://jobs.example/e2e-job0/{n}" for n in range(25))


@pytest.mark.e2e_timeout(600)
def test_a_batch_by_tag_over_300_tagged_links_among_3000_finishes(stack: RunningStack) -> None:
    # Given 3,000 links, every tenth tagged
    tagged = []
    for call in range(3):
        links = [
            {
                "url": f"https://batch.example/e2e/{call}/{n}",
                **({"tags": ["e2e-batch"]} if n % 10 == 0 else {}),
            }
            for n in range(1000)
        ]
        codes = make_links(stack, links)
        tagged += [code for n, code in enumerate(codes) if n % 10 == 0]
    # When they are disabled by their tag in one batch
    started = time.monotonic()
    answer = stack.post_json("links/batch", {"action": "disable", "tag": "e2e-batch"})
    assert answer.status == 202, answer.text
    batch = wait_for_batch(stack, answer.json()["batch_id"], 480)
    # Then the batch ends with the 300 changed, and the tag's links all show as disabled
    assert (batch["status"], batch["changed"], batch["failed"]) == ("done", 300, 0), json.dumps(batch)
    shown = listing(stack, tag="e2e-batch", status="disabled", limit="1000")["links"]
    assert sorted(link["code"] for link in shown) == sorted(tagged)
    print(f"batch by tag over 300 of 3,000 links: done in {time.monotonic() - started:.1f} s")


@pytest.mark.e2e_timeout(300)
def test_a_batch_by_tag_changes_exactly_the_tagged_links_read_from_the_tag_index(stack: RunningStack) -> None:
    # Given 300 untagged links with 12 tagged ones among them
    links = [
        {"url": f"https://index.example/e2e/{n}", **({"tags": ["e2e-index"]} if n % 25 == 0 else {})}
        for n in range(300)
    ]
    codes = make_links(stack, links)
    tagged = sorted(code for n, code in enumerate(codes) if n % 25 == 0)
    # When they are disabled by their tag in one batch
    answer = stack.post_json("links/batch", {"action": "disable", "tag": "e2e-index"})
    assert answer.status == 202, answer.text
    batch = wait_for_batch(stack, answer.json()["batch_id"], 240)
    # Then exactly the tagged ones changed
    assert (batch["status"], batch["changed"], batch["failed"]) == ("done", 12, 0), json.dumps(batch)
    shown = listing(stack, q="index.example", status="disabled", limit="1000")["links"]
    assert sorted(link["code"] for link in shown) == tagged
    # And the tag pages through them only, 5 at a time
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = listing(stack, tag="e2e-index", limit="5", **({"cursor": cursor} if cursor else {}))
        seen += [link["code"] for link in page["links"]]
        if (cursor := page["next_cursor"]) is None:
            break
    assert sorted(seen) == tagged


@pytest.mark.e2e_timeout(270)
def test_a_link_tagged_before_the_tag_index_is_listed_once_the_restarter_backfills(
    stack: RunningStack,
) -> None:
    # Given a tagged link whose tag index entry is removed (the shape of a link made before the
    # index), and an upgrade whose wait is over (the backfill starts its scan afresh)
    made = stack.post_json("/", {"url": "https://old.example/backfill", "tags": ["e2e-backfill"]})
    assert made.status == 201, made.text
    code = made.json()["code"]
    client = stack.boto3_client("dynamodb")
    table = stack.resources["LinksTable"]
    client.delete_item(TableName=table, Key=tag_key("e2e-backfill", code))
    assert listing(stack, tag="e2e-backfill")["links"] == []
    client.put_item(
        TableName=table,
        Item={"code": {"S": MIGRATIONS_KEY}, "tag_index_since": {"S": "2000-01-01T00:00:00+00:00"}},
    )

    # When the restarter runs as its schedule runs it (every minute; invoked here rather than
    # waited for) until the backfill says it is done (its entries are written before its progress
    # is saved, so the tag may list the link first)
    def backfill_state() -> Any:
        key = {"code": {"S": MIGRATIONS_KEY}}
        return client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]

    restarter = stack.boto3_client("lambda")
    deadline = time.monotonic() + 180
    while backfill_state().get("tag_index", {}).get("S") != "done" and time.monotonic() < deadline:
        event = scheduled_event("arn:aws:events:::rule/e2e", stack.region)
        ran = restarter.invoke(FunctionName=stack.resources["RestarterFunction"], Payload=json.dumps(event))
        assert "FunctionError" not in ran, ran["Payload"].read()
    # Then the backfill is done, and the tag lists the link
    assert backfill_state().get("tag_index", {}).get("S") == "done", backfill_state()
    assert [link["code"] for link in listing(stack, tag="e2e-backfill")["links"]] == [code]
