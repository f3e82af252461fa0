"""Owners and link management through the API handler under moto: listing, showing, changing,
disabling and deleting links, each as the authorizer's caller; tombstones and 410 Gone."""

from types import ModuleType
from typing import Any

import boto3
import pytest
from freezegun import freeze_time

from shortener.links.store_items import CLAIM_PREFIX
from shortener.links.urls import url_key
from tests.support.api import ApiCaller, body, response_header

pytestmark = pytest.mark.integration


@pytest.fixture
def alice(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "alice")


@pytest.fixture
def bob(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "bob")


@pytest.fixture
def admin(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "ops", role="admin")


def test_links_are_listed_newest_first_in_pages(alice: ApiCaller, bob: ApiCaller) -> None:
    # Given 7 links of alice created one after another, and one of bob
    codes = []
    for n in range(7):
        with freeze_time(f"2026-05-01T10:00:0{n}Z"):
            codes.append(alice.shorten(f"https://example.com/a/{n}")["code"])
    bob.shorten("https://example.com/bob")
    # When alice lists them 3 at a time, following the cursor
    seen, cursor, pages = [], None, 0
    while True:
        page = body(alice.list_links(limit="3", **({"cursor": cursor} if cursor else {})))
        seen += [link["code"] for link in page["links"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    # Then she sees exactly her links, newest first, in three pages
    assert seen == codes[::-1]
    assert pages == 3


def test_links_are_filtered_by_tag_and_by_part_of_the_url(alice: ApiCaller) -> None:
    alice.shorten("https://shop.example/spring/shoes", tags=["spring", "shoes"])
    alice.shorten("https://shop.example/spring/hats", tags=["spring"])
    alice.shorten("https://blog.example/autumn", tags=["blog"])
    by_tag = [link["url"] for link in body(alice.list_links(tag="spring"))["links"]]
    by_url = [link["url"] for link in body(alice.list_links(q="blog.example"))["links"]]
    assert sorted(by_tag) == ["https://shop.example/spring/hats", "https://shop.example/spring/shoes"]
    assert by_url == ["https://blog.example/autumn"]


def test_a_search_finds_links_by_part_of_their_title_too(alice: ApiCaller) -> None:
    # Given links with and without titles
    alice.shorten("https://shop.example/a", title="Spring flyer")
    alice.shorten("https://shop.example/b", title="Autumn poster")
    alice.shorten("https://shop.example/flyer-c")
    # When she searches for a word
    found = [link["url"] for link in body(alice.list_links(q="flyer"))["links"]]
    # Then the links with it in their title or in their URL are found, and no other
    assert sorted(found) == ["https://shop.example/a", "https://shop.example/flyer-c"]


def test_one_link_is_shown_with_its_details(alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/shown", title="Shown", tags=["x"])["code"]
    shown = body(alice.link("GET", code))
    assert shown["code"] == code
    assert shown["url"] == "https://example.com/shown"
    assert (shown["title"], shown["tags"], shown["status"], shown["owner"]) == (
        "Shown",
        ["x"],
        "active",
        "alice",
    )
    assert shown["short_url"] == f"https://sho.rt/{code}"
    assert shown["created_at"]


def test_another_members_link_is_404_for_every_route_and_stays_unchanged(
    alice: ApiCaller, bob: ApiCaller
) -> None:
    # Given a link of alice
    code = alice.shorten("https://example.com/alice-only")["code"]
    # When bob reads, changes or deletes it
    answers = [
        bob.link("GET", code),
        bob.link("PATCH", code, {"url": "https://evil.example/"}),
        bob.link("DELETE", code),
    ]
    # Then each answer is the 404 an unknown code gets (never 403: bob learns nothing)
    unknown = bob.link("GET", "nosuchcode")
    assert [answer["statusCode"] for answer in answers] == [404, 404, 404]
    assert {body(answer)["error"] for answer in answers} == {body(unknown)["error"]}
    # And bob's listing does not contain it, nor may he list alice's
    assert body(bob.list_links())["links"] == []
    assert bob.list_links(owner="alice")["statusCode"] == 403
    # And the link is unchanged
    assert response_header(alice.follow(code), "Location") == "https://example.com/alice-only"


def test_an_admin_sees_and_changes_any_link(alice: ApiCaller, admin: ApiCaller) -> None:
    code = alice.shorten("https://example.com/for-admin")["code"]
    assert body(admin.link("GET", code))["owner"] == "alice"
    assert [link["code"] for link in body(admin.list_links(owner="alice"))["links"]] == [code]
    assert admin.link("PATCH", code, {"status": "disabled"})["statusCode"] == 200
    assert alice.follow(code)["statusCode"] == 410


def test_without_a_key_links_cannot_be_managed(api: ModuleType, alice: ApiCaller) -> None:
    # Without a key every caller is the same anonymous owner: managing would be managing everyone's.
    code = alice.shorten("https://example.com/keyless")["code"]
    anonymous = ApiCaller(api, None)
    anonymous.shorten("https://example.com/anonymous")
    for answer in (anonymous.list_links(), anonymous.link("GET", code), anonymous.link("DELETE", code)):
        assert answer["statusCode"] == 403
        assert "API key" in body(answer)["message"]


def test_changing_the_target_keeps_the_code_and_releases_the_old_url(alice: ApiCaller) -> None:
    # Given a generated link (find-if-exists claims its URL)
    code = alice.shorten("https://example.com/old")["code"]
    # When its target changes
    changed = alice.link("PATCH", code, {"url": "https://example.com/new", "title": "New", "tags": ["t"]})
    # Then the code is the same and now leads to the new target
    assert changed["statusCode"] == 200
    assert (body(changed)["code"], body(changed)["url"], body(changed)["title"]) == (
        code,
        "https://example.com/new",
        "New",
    )
    assert response_header(alice.follow(code), "Location") == "https://example.com/new"
    # And shortening the old URL again no longer hands out this code
    assert alice.shorten("https://example.com/old")["code"] != code


def test_a_change_of_title_or_tags_alone_keeps_the_target(alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/titled")["code"]
    assert alice.link("PATCH", code, {"title": "Campaign"})["statusCode"] == 200
    assert body(alice.link("GET", code))["title"] == "Campaign"
    assert response_header(alice.follow(code), "Location") == "https://example.com/titled"


@pytest.mark.parametrize(
    ("patch", "status", "error"),
    [
        ({}, 422, "invalid_request"),
        ({"disabled": True}, 422, "invalid_request"),
        ({"status": "deleted"}, 422, "invalid_request"),
        ({"tags": ["has space"]}, 422, "invalid_request"),
        ({"url": "javascript:alert(1)"}, 400, "invalid_url"),
        ({"url": "https://sho.rt/abcd"}, 400, "invalid_url"),
    ],
)
def test_a_bad_change_is_a_clear_4xx_and_changes_nothing(
    alice: ApiCaller, patch: dict[str, Any], status: int, error: str
) -> None:
    code = alice.shorten("https://example.com/unchanged")["code"]
    answer = alice.link("PATCH", code, patch)
    assert answer["statusCode"] == status
    assert body(answer)["error"] == error
    assert body(alice.link("GET", code))["url"] == "https://example.com/unchanged"


def test_a_disabled_link_is_gone_until_enabled_again(alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/paused")["code"]
    assert body(alice.link("PATCH", code, {"status": "disabled"}))["status"] == "disabled"
    gone = alice.follow(code)
    assert gone["statusCode"] == 410
    assert body(gone)["error"] == "gone"
    assert response_header(gone, "Cache-Control") == "no-store"
    # It stays listed (with its status) and can be enabled again
    assert body(alice.list_links())["links"][0]["status"] == "disabled"
    alice.link("PATCH", code, {"status": "active"})
    assert alice.follow(code)["statusCode"] == 301


def test_a_deleted_link_is_410_for_browsers_and_programs(alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/deleted")["code"]
    deleted = alice.link("DELETE", code)
    assert deleted["statusCode"] == 200
    assert body(deleted)["status"] == "deleted"
    as_json = alice.follow(code)
    as_html = alice.follow(code, headers={"Accept": "text/html"})
    assert (as_json["statusCode"], body(as_json)["error"]) == (410, "gone")
    assert as_html["statusCode"] == 410
    assert "<html" in as_html["body"]
    # Managing it further says it is gone, and it leaves the listing
    assert alice.link("GET", code)["statusCode"] == 410
    assert alice.link("DELETE", code)["statusCode"] == 410
    assert body(alice.list_links())["links"] == []


def test_a_deleted_code_is_never_given_out_again(
    alice: ApiCaller, bob: ApiCaller, tables: dict[str, str]
) -> None:
    # Given a deleted custom code and a deleted generated code
    custom = alice.shorten("https://example.com/custom", code="spring-sale")["code"]
    generated = alice.shorten("https://example.com/generated")["code"]
    alice.link("DELETE", custom)
    alice.link("DELETE", generated)
    # Then the custom code cannot be taken again, for any URL, by anyone
    for caller, url in ((alice, "https://example.com/custom"), (bob, "https://example.com/other")):
        again = caller.request("POST", "/", body={"url": url, "code": "spring-sale"})
        assert again["statusCode"] == 409
        assert "never given out again" in body(again)["message"]
    # And find-if-exists no longer returns the generated one: the URL gets a new code
    assert alice.shorten("https://example.com/generated")["code"] != generated
    # And its claim is gone with it
    claim = boto3.client("dynamodb").get_item(
        TableName=tables["LINKS_TABLE"],
        Key={"code": {"S": CLAIM_PREFIX + url_key("https://example.com/generated", "alice")}},
    )
    assert claim["Item"]["target"]["S"] != generated
    # And the tombstone stays in the table
    assert alice.follow(generated)["statusCode"] == 410


def test_find_if_exists_is_per_owner(alice: ApiCaller, bob: ApiCaller) -> None:
    # One owner's link is never handed to another, who could not manage it.
    first = alice.shorten("https://example.com/shared")
    second = bob.shorten("https://example.com/shared")
    assert first["code"] != second["code"]
    assert alice.shorten("https://example.com/shared")["code"] == first["code"]


def test_a_malformed_cursor_or_limit_is_400(alice: ApiCaller) -> None:
    for query in (
        {"cursor": "not-a-cursor"},
        {"cursor": "eyJiZWZvcmUiOiAxfQ"},
        {"limit": "0"},
        {"limit": "²"},
    ):
        answer = alice.list_links(**query)
        assert answer["statusCode"] == 400, query
        assert body(answer)["error"] == "invalid_request"


def test_filtered_pages_followed_to_the_end_give_every_match_once_in_order(alice: ApiCaller) -> None:
    # Given 30 links over the owner's index shards, every third one tagged
    tagged = []
    for n in range(30):
        with freeze_time(f"2026-05-01T10:00:{n:02d}Z"):
            link = alice.shorten(f"https://example.com/f/{n}", tags=["odd-one"] if n % 3 == 0 else [])
        if n % 3 == 0:
            tagged.append(link["code"])
    # When the tag's pages of 2 are followed (DynamoDB filters after its Limit, so pages can be short)
    seen, cursor = [], None
    for _ in range(40):
        page = body(alice.list_links(tag="odd-one", limit="2", **({"cursor": cursor} if cursor else {})))
        assert len(page["links"]) <= 2
        seen += [link["code"] for link in page["links"]]
        if (cursor := page["next_cursor"]) is None:
            break
    # Then every tagged link came exactly once, newest first
    assert seen == tagged[::-1]


def test_links_written_under_fewer_index_shards_still_list(
    alice: ApiCaller, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from shortener.links import store_items as link_items

    # Given 12 links of alice written when the ByOwner index had 4 shards per owner, then 12 more
    codes = []
    with monkeypatch.context() as earlier:
        earlier.setattr(link_items, "LIST_SHARDS", 4)
        for n in range(12):
            with freeze_time(f"2026-05-01T10:00:{n:02d}Z"):
                codes.append(alice.shorten(f"https://example.com/old/{n}")["code"])
    for n in range(12, 24):
        with freeze_time(f"2026-05-01T10:00:{n:02d}Z"):
            codes.append(alice.shorten(f"https://example.com/new/{n}")["code"])
    # (some of the earlier ones sit in a shard that today's count would not put them in)
    items = boto3.client("dynamodb").scan(TableName=tables["LINKS_TABLE"])["Items"]
    shards = {item["code"]["S"]: item["list_pk"]["S"] for item in items if "list_pk" in item}
    moved = [code for code in codes[:12] if shards[code] != f"alice#{link_items.shard_of(code)}"]
    assert moved
    # When she lists them 5 at a time, following the cursor
    seen, cursor = [], None
    for _ in range(10):
        page = body(alice.list_links(limit="5", **({"cursor": cursor} if cursor else {})))
        seen += [link["code"] for link in page["links"]]
        if (cursor := page["next_cursor"]) is None:
            break
    # Then every link came once, newest first: no migration was needed
    assert seen == codes[::-1]


def test_a_takedown_reaches_a_container_that_cached_the_link(
    alice: ApiCaller, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shortener.exceptions import LinkGoneError
    from shortener.services.links import link_service
    from shortener.settings import api_settings

    # Given another container that has followed a link (and keeps it in its memory)
    monkeypatch.setenv("REDIRECT_CACHE_CHECK_SECONDS", "0")
    api_settings.cache_clear()
    code = alice.shorten("https://example.com/cached-elsewhere")["code"]
    elsewhere = link_service(api_settings())
    assert elsewhere.resolve(code).url == "https://example.com/cached-elsewhere"
    assert elsewhere.resolve(code).from_cache
    # When the link is deleted through this container
    alice.link("DELETE", code)
    # Then the other container no longer serves it from memory
    with pytest.raises(LinkGoneError):
        elsewhere.resolve(code)


def make_links(caller: ApiCaller, count: int, path: str = "p") -> None:
    for start in range(0, count, 25):
        links = [{"url": f"https://example.com/{path}/{n}"} for n in range(start, min(start + 25, count))]
        assert caller.request("POST", "/links/bulk", body={"links": links})["statusCode"] == 200


def test_links_come_100_a_page_unless_asked_for_up_to_1000(alice: ApiCaller) -> None:
    # Given 130 links
    make_links(alice, 130)
    # When the first page is asked for without a limit, it has 100 and a cursor to the other 30
    first = body(alice.list_links())
    assert len(first["links"]) == 100 and first["next_cursor"]
    rest = body(alice.list_links(cursor=first["next_cursor"]))
    assert len(rest["links"]) == 30 and rest["next_cursor"] is None
    # And a page of up to 1,000 may be asked for, not more
    assert len(body(alice.list_links(limit="1000"))["links"]) == 130
    too_many = alice.list_links(limit="1001")
    assert (too_many["statusCode"], body(too_many)["error"]) == (400, "invalid_request")


def test_a_page_of_long_urls_ends_before_lambdas_6_mb_and_goes_on_from_there(
    alice: ApiCaller, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a stack that takes URLs of up to 32,768 characters (MaxUrlLength), and 200 links of
    # 30,000-character URLs (6 MB of URLs)
    from shortener.settings import api_settings

    monkeypatch.setenv("MAX_URL_LENGTH", "32768")
    api_settings.cache_clear()
    long_path = "x" * 30_000
    for start in range(0, 200, 25):
        links = [{"url": f"https://example.com/{n}/{long_path}"} for n in range(start, start + 25)]
        answer = alice.request("POST", "/links/bulk", body={"links": links})
        assert {outcome["status"] for outcome in body(answer)["links"]} == {201}
    # When they are listed 1,000 a page
    pages, cursor = [], None
    while True:
        answer = alice.list_links(limit="1000", **({"cursor": cursor} if cursor else {}))
        assert answer["statusCode"] == 200
        assert len(answer["body"]) < 5_500_000
        pages.append(body(answer)["links"])
        cursor = body(answer)["next_cursor"]
        if not cursor:
            break
    # Then the first page ends early, and the pages hold every link once
    assert len(pages) >= 2 and len(pages[0]) < 200
    codes = [link["code"] for page in pages for link in page]
    assert len(codes) == len(set(codes)) == 200
