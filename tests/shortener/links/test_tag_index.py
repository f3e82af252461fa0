"""The tag index under moto: an entry per tag of an owned link, written with the link on every
create path and kept in step by every change, read by ``GET /links?tag=`` (and so by a member's
batch by tag) instead of the owner's whole index."""

import os
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import boto3
import pytest
from freezegun import freeze_time

from shortener.jobs.store.batches import TaggedLinks
from shortener.links.model import Link
from shortener.links.store import LinksStore
from shortener.links.store_items import TAG_PREFIX, tag_items
from tests.support.api import ApiCaller, body

pytestmark = pytest.mark.integration


@pytest.fixture
def alice(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "alice")


def entries() -> list[dict[str, Any]]:
    items = boto3.client("dynamodb").scan(TableName=os.environ["LINKS_TABLE"])["Items"]
    return [item for item in items if item["code"]["S"].startswith(TAG_PREFIX)]


def tagged(caller: ApiCaller, tag: str) -> list[str]:
    codes: list[str] = []
    cursor = None
    for _ in range(50):
        page = body(caller.list_links(tag=tag, limit="2", **({"cursor": cursor} if cursor else {})))
        codes += [link["code"] for link in page["links"]]
        if (cursor := page["next_cursor"]) is None:
            return codes
    raise AssertionError("the listing did not end")


def test_every_create_path_writes_the_entries_and_the_listing_reads_them(alice: ApiCaller) -> None:
    # Given links made one at a time, in bulk, tagged and not, and bob's link with the same tag
    with freeze_time("2026-05-01T09:00:00Z"):
        one = alice.shorten("https://example.com/one", tags=["spring", "sale"])["code"]
        custom = alice.shorten("https://example.com/custom", code="my-spring", tags=["spring"])["code"]
        alice.shorten("https://example.com/plain")
    answer = alice.request(
        "POST",
        "/links/bulk",
        body={"links": [{"url": f"https://example.com/b/{n}", "tags": ["spring"]} for n in range(5)]},
    )
    bulk = [outcome["code"] for outcome in body(answer)["links"]]
    ApiCaller(alice.api, "bob").shorten("https://example.com/bob", tags=["spring"])
    # Then the table holds one entry per tag of each tagged link (bob's included), nothing for
    # the untagged one
    assert len(entries()) == 2 + 1 + 5 + 1
    # And her tag lists exactly her tagged links, newest first, page after page
    assert tagged(alice, "spring") == [*reversed(bulk), custom, one]
    assert tagged(alice, "sale") == [one]
    assert tagged(alice, "none") == []


def test_a_change_keeps_the_entries_in_step(alice: ApiCaller) -> None:
    # Given three tagged links
    codes = [alice.shorten(f"https://example.com/{n}", tags=["spring"])["code"] for n in range(3)]
    # When one loses the tag, one is deleted, and one gains another tag
    assert alice.link("PATCH", codes[0], {"tags": ["autumn"]})["statusCode"] == 200
    assert alice.link("DELETE", codes[1])["statusCode"] in (200, 204)
    assert alice.link("PATCH", codes[2], {"tags": ["spring", "sale"]})["statusCode"] == 200
    # Then each tag lists what has it now, and no entry is left for what lost it
    assert tagged(alice, "spring") == [codes[2]]
    assert tagged(alice, "autumn") == [codes[0]]
    assert tagged(alice, "sale") == [codes[2]]
    assert len(entries()) == 3


def test_a_stale_entry_is_never_listed_and_a_repeated_bulk_write_changes_nothing(
    alice: ApiCaller, tables: dict[str, str]
) -> None:
    # Given a tagged link, an entry whose link is gone, and one whose link lost the tag
    kept = alice.shorten("https://example.com/kept", tags=["spring"])["code"]
    untagged = alice.shorten("https://example.com/untagged")
    client = boto3.client("dynamodb")
    for link in (
        Link(
            code="gone1",
            url="https://example.com/gone",
            owner="alice",
            tags=("spring",),
            created_at=datetime.now(UTC),
        ),
        Link(
            code=untagged["code"],
            url=untagged["url"],
            owner="alice",
            tags=("spring",),
            created_at=datetime.now(UTC),
        ),
    ):
        for item in tag_items(link):
            client.put_item(TableName=os.environ["LINKS_TABLE"], Item=item)
    # Then the listing shows only the link that has the tag
    assert tagged(alice, "spring") == [kept]
    # And a bulk write delivered twice leaves one entry per tag
    store = LinksStore(os.environ["LINKS_TABLE"])
    link = Link(
        code="twice1",
        url="https://example.com/twice",
        owner="alice",
        tags=("a", "b"),
        created_at=datetime.now(UTC),
    )
    before = len(entries())
    store.put_generated_batch([link])
    store.put_generated_batch([link])
    assert len(entries()) == before + 2
    assert tagged(alice, "a") == ["twice1"]


def test_an_admin_reads_every_owners_links_with_the_tag(alice: ApiCaller) -> None:
    # Given tagged links of alice and bob, and an untagged one
    bob = ApiCaller(alice.api, "bob")
    codes = {
        caller.shorten(f"https://example.com/{caller.owner}/{n}", tags=["spring"])["code"]
        for caller in (alice, bob)
        for n in range(3)
    }
    alice.shorten("https://example.com/plain")
    # When an admin's batch reads the tag two links at a time
    found: list[str] = []
    start = None
    tagged_links = TaggedLinks(os.environ["LINKS_TABLE"])
    for _ in range(20):
        links, start = tagged_links.page("spring", start, limit=2)
        found += [link.code for link in links]
        if start is None:
            break
    # Then it reads each owner's tagged links once
    assert sorted(found) == sorted(codes)
