"""``GET /links`` filtered under moto: a search, a tag or a status reads on through every shard of
the owner's index until its page is full, so an old match is on the first page."""

from types import ModuleType

import boto3
import pytest
from freezegun import freeze_time

from tests.support.api import ApiCaller, body

pytestmark = pytest.mark.integration


@pytest.fixture
def alice(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "alice")


def test_a_search_finds_an_old_link_on_its_first_page_in_any_letter_case(alice: ApiCaller) -> None:
    # Given a titled link and 40 newer links of alice, and a link of bob's with the same word
    with freeze_time("2026-05-01T09:00:00Z"):
        old = alice.shorten("https://Shop.example/Spring-Sale", title="Summer FLYER", tags=["Campaign"])
    for n in range(40):
        with freeze_time(f"2026-05-01T10:00:{n:02d}Z"):
            alice.shorten(f"https://example.com/newer/{n}")
    ApiCaller(alice.api, "bob").shorten("https://shop.example/spring-sale/bob")
    # When she searches, a page of 2 at a time, by a prefix of each part in another letter case
    for query in ("sPRING-s", "shop.EXAMPLE", "flyer summ", "campaign", old["code"].swapcase()[:4]):
        page = body(alice.list_links(q=query, limit="2"))
        # Then the first answer holds the link, and says there is nothing more
        assert [link["code"] for link in page["links"]] == [old["code"]], query
        assert page["next_cursor"] is None


def test_a_filtered_page_is_full_while_later_links_match(alice: ApiCaller) -> None:
    # Given 30 links, the oldest 5 tagged
    for n in range(30):
        with freeze_time(f"2026-05-01T10:00:{n:02d}Z"):
            alice.shorten(f"https://example.com/t/{n}", tags=["old"] if n < 5 else [])
    # When she lists the tag 2 at a time
    first = body(alice.list_links(tag="old", limit="2"))
    # Then the first page is full, and the pages together give the 5 once each
    assert len(first["links"]) == 2
    seen, cursor = [link["url"] for link in first["links"]], first["next_cursor"]
    while cursor:
        page = body(alice.list_links(tag="old", limit="2", cursor=cursor))
        assert page["links"] or page["next_cursor"] is None
        seen, cursor = seen + [link["url"] for link in page["links"]], page["next_cursor"]
    assert seen == [f"https://example.com/t/{n}" for n in range(4, -1, -1)]


def test_links_are_filtered_by_the_status_the_list_shows(alice: ApiCaller) -> None:
    enabled = alice.shorten("https://example.com/on")["code"]
    disabled = alice.shorten("https://example.com/off")["code"]
    assert alice.link("PATCH", disabled, {"status": "disabled"})["statusCode"] == 200
    with freeze_time("2026-05-01T10:00:00Z"):
        expired = alice.shorten("https://example.com/soon", expires_at="2026-05-02T00:00:00Z")["code"]
    with freeze_time("2026-05-03T10:00:00Z"):
        shown = {
            status: [link["code"] for link in body(alice.list_links(status=status))["links"]]
            for status in ("active", "disabled", "expired")
        }
    assert shown == {"active": [enabled], "disabled": [disabled], "expired": [expired]}
    answer = alice.list_links(status="enabled")
    assert answer["statusCode"] == 400


def test_a_link_stored_before_links_carried_their_words_is_still_found(
    alice: ApiCaller, tables: dict[str, str]
) -> None:
    # Given a link whose item has no words (written before this version), and one that has them
    old = alice.shorten("https://shop.example/legacy-Flyer")["code"]
    new = alice.shorten("https://shop.example/new-flyer")["code"]
    client = boto3.client("dynamodb")
    stored = client.get_item(TableName=tables["LINKS_TABLE"], Key={"code": {"S": new}})["Item"]
    assert {" flyer", " new", " shop", " example", " " + new.casefold()} <= {
        " " + w for w in stored["words"]["S"].split()
    }
    client.update_item(
        TableName=tables["LINKS_TABLE"], Key={"code": {"S": old}}, UpdateExpression="REMOVE words"
    )
    # When she searches for a word both have
    found = {link["code"] for link in body(alice.list_links(q="FLY"))["links"]}
    # Then both are found, and a word only the old one has finds it alone
    assert found == {old, new}
    assert [link["code"] for link in body(alice.list_links(q="legacy"))["links"]] == [old]
