"""POST /links/bulk through the API function's handler under moto."""

import json
from types import ModuleType
from typing import Any

import pytest

from tests.support.api import ApiCaller

pytestmark = pytest.mark.integration


@pytest.fixture
def owner(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "ann")


@pytest.fixture
def admin(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "root", role="admin")


def bulk(caller: ApiCaller, links: Any) -> dict[str, Any]:
    return caller.request("POST", "/links/bulk", body={"links": links})


def outcomes(answer: dict[str, Any]) -> list[dict[str, Any]]:
    assert answer["statusCode"] == 200, answer["body"]
    return list(json.loads(answer["body"])["links"])


def test_each_link_gets_the_outcome_post_slash_gives_it_in_input_order(owner: ApiCaller) -> None:
    # Given a link the owner made before and a custom code another URL holds
    before = owner.shorten("https://example.com/before")
    owner.shorten("https://example.com/promo", code="promo")
    # When a bulk call mixes new links, duplicates, and links that cannot be made
    links = [
        {"url": "https://example.com/a", "title": "A", "tags": ["spring"]},
        {"url": "not a url"},
        {"url": "https://example.com/b", "code": "promo"},
        {"url": "https://example.com/before"},
        {"code": "nourl"},
        {"url": "https://example.com/a"},
        {"url": "https://example.com/c", "code": "my-c"},
        "https://example.com/not-an-object",
        {"url": "https://example.com/d", "expires_at": "2030-01-01T00:00:00Z", "max_clicks": 5},
    ]
    found = outcomes(bulk(owner, links))
    # Then each has its outcome in input order, with the status POST / answers for it
    assert [outcome["status"] for outcome in found] == [201, 400, 409, 200, 422, 200, 201, 422, 201]
    assert found[0]["short_url"] == "https://sho.rt/" + found[0]["code"]
    assert found[0]["url"] == "https://example.com/a"
    assert (found[1]["error"], found[2]["error"], found[4]["error"]) == (
        "invalid_url",
        "code_taken",
        "invalid_request",
    )
    assert "url" in found[4]["message"]
    # And a URL the owner already had, or one twice in the call, keeps one code
    assert found[3]["code"] == before["code"]
    assert found[5]["code"] == found[0]["code"]
    assert found[6]["code"] == "my-c"
    # And the new links are the owner's, with their titles and tags, and redirect
    shown = json.loads(owner.link("GET", found[0]["code"])["body"])
    assert (shown["owner"], shown["title"], shown["tags"]) == ("ann", "A", ["spring"])
    assert owner.follow(found[8]["code"])["statusCode"] == 301


def test_expiry_and_click_limits_are_kept_and_limited_links_are_their_own(owner: ApiCaller) -> None:
    # Given a link the owner already has for a URL
    before = owner.shorten("https://example.com/campaign")
    # When a bulk call asks for that URL with a click limit, with an expiry, and plainly, and has
    # a limit that is not valid
    links = [
        {"url": "https://example.com/campaign", "max_clicks": 1, "title": "Flyer", "tags": ["print"]},
        {"url": "https://example.com/campaign", "expires_at": "2030-01-01T00:00:00Z"},
        {"url": "https://example.com/campaign"},
        {"url": "https://example.com/other", "max_clicks": 0},
        {"url": "https://example.com/past", "expires_at": "2001-01-01T00:00:00Z"},
    ]
    found = outcomes(bulk(owner, links))
    # Then the limited links are new links of their own; the plain one is the owner's link
    assert [outcome["status"] for outcome in found] == [201, 201, 200, 422, 422]
    assert len({found[0]["code"], found[1]["code"], before["code"]}) == 3
    assert found[2]["code"] == before["code"]
    assert "max_clicks" in found[3]["message"]
    assert "expires_at" in found[4]["message"]
    # And each link keeps its limits as POST / would
    limited = json.loads(owner.link("GET", found[0]["code"])["body"])
    assert (limited["max_clicks"], limited["title"], limited["tags"]) == (1, "Flyer", ["print"])
    expiring = json.loads(owner.link("GET", found[1]["code"])["body"])
    assert expiring["expires_at"].startswith("2030-01-01T00:00:00")
    assert expiring["max_clicks"] is None
    # And the click-limited link answers its one click, then 410
    assert owner.follow(found[0]["code"])["statusCode"] == 301
    assert owner.follow(found[0]["code"])["statusCode"] == 410
    assert owner.follow(found[2]["code"])["statusCode"] == 301


def test_a_blocked_host_is_refused_per_link(owner: ApiCaller, admin: ApiCaller) -> None:
    # Given a blocked host
    assert (
        admin.request(
            "PUT",
            "/blocklist/evil.example",
            resource="/blocklist/{host}",
            path_parameters={"host": "evil.example"},
        )["statusCode"]
        == 200
    )
    # When a bulk call has a link to it and one elsewhere
    found = outcomes(bulk(owner, [{"url": "https://www.evil.example/x"}, {"url": "https://ok.example/"}]))
    # Then only that link is refused, as POST / refuses it
    assert [(outcome["status"], outcome.get("error")) for outcome in found] == [
        (400, "blocked_host"),
        (201, None),
    ]


def test_links_to_the_shortener_itself_are_refused(owner: ApiCaller) -> None:
    found = outcomes(bulk(owner, [{"url": "https://sho.rt/abcd"}]))
    assert (found[0]["status"], found[0]["error"]) == (400, "invalid_url")


@pytest.mark.parametrize(
    ("links", "status", "error"),
    [
        ([{"url": f"https://example.com/{n}"} for n in range(1001)], 413, "payload_too_large"),
        ([{"url": "https://example.com/" + "x" * 30_000}] * 34, 413, "payload_too_large"),
        ([], 422, "invalid_request"),
        ({"url": "https://example.com/"}, 422, "invalid_request"),
    ],
)
def test_calls_over_the_limits_or_without_a_list_are_refused_whole(
    owner: ApiCaller, links: Any, status: int, error: str
) -> None:
    answer = bulk(owner, links)
    assert answer["statusCode"] == status, answer["body"]
    assert json.loads(answer["body"])["error"] == error


def test_one_thousand_links_are_written_in_batches(owner: ApiCaller, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the links table's writes counted
    from shortener.links.store import LinksStore

    calls: dict[str, int] = {"batches": 0, "single": 0}
    original_batch = LinksStore.put_generated_batch
    original_insert_with_claim = LinksStore.insert_with_claim

    def counted_batch(self: LinksStore, links: Any) -> None:
        calls["batches"] += 1
        original_batch(self, links)

    def counted_single(self: LinksStore, *args: Any) -> Any:
        calls["single"] += 1
        return original_insert_with_claim(self, *args)

    monkeypatch.setattr(LinksStore, "put_generated_batch", counted_batch)
    monkeypatch.setattr(LinksStore, "insert_with_claim", counted_single)
    # When 1,000 new links are sent in one call
    found = outcomes(bulk(owner, [{"url": f"https://example.com/p/{n}"} for n in range(1000)]))
    # Then all are created with distinct codes, in 40 batch writes of 25 and no single writes
    assert [outcome["status"] for outcome in found] == [201] * 1000
    assert len({outcome["code"] for outcome in found}) == 1000
    assert calls == {"batches": 40, "single": 0}
