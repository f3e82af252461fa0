"""Campaign links through the API handler under moto: ``expires_at`` and ``max_clicks`` on
``POST /`` and ``PATCH /links/{code}``, 410 ``expired`` after either, exact click counts under
concurrent followers, and links without limits keeping their one-read redirect."""

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest
from freezegun import freeze_time

from shortener.links.store import LinksStore
from tests.support.api import ApiCaller, body, response_header

pytestmark = pytest.mark.integration


@pytest.fixture
def alice(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "alice")


def test_a_link_with_max_clicks_redirects_that_often_then_answers_410_expired(alice: ApiCaller) -> None:
    # Given a link allowed two clicks
    created = alice.request("POST", "/", body={"url": "https://example.com/twice", "max_clicks": 2})
    assert created["statusCode"] == 201
    code = body(created)["code"]
    # When it is followed three times
    answers = [alice.follow(code) for _ in range(3)]
    # Then the first two redirect, never to be stored by browsers, and the third is 410 expired
    assert [answer["statusCode"] for answer in answers] == [301, 301, 410]
    assert response_header(answers[0], "Cache-Control") == "private, no-store"
    assert body(answers[2])["error"] == "expired"
    assert "message" in body(answers[2])
    # And a browser gets the expired page
    page = alice.follow(code, headers={"Accept": "text/html"})
    assert (page["statusCode"], "<html" in page["body"], "expired" in page["body"]) == (410, True, True)
    # And the link shows it has no click left
    shown = body(alice.link("GET", code))
    assert (shown["max_clicks"], shown["clicks_left"], shown["expired"]) == (2, 0, True)


def test_a_head_request_does_not_use_up_a_click(alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/once", max_clicks=1)["code"]
    assert alice.follow(code, method="HEAD")["statusCode"] == 301
    assert alice.follow(code)["statusCode"] == 301
    assert alice.follow(code, method="HEAD")["statusCode"] == 410


@pytest.fixture
def shared_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    """Invocations run at once in one process share Powertools' Metrics, which is not made for it
    (in Lambda each runs alone in its environment): two flushes at once can find the set non-empty
    and then empty ("Must contain at least one metric"). Its writes take turns here."""
    from shortener.observability import metrics

    # Metrics hands every call to its provider, whose log_metrics decorator flushes itself.
    provider = metrics.provider
    turn = threading.RLock()
    for name in ("add_metric", "add_dimension", "add_metadata", "flush_metrics"):
        original = getattr(provider, name)

        def in_turn(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            with turn:
                return _original(*args, **kwargs)

        monkeypatch.setattr(provider, name, in_turn)


@pytest.mark.usefixtures("shared_metrics")
def test_concurrent_followers_get_exactly_max_clicks_redirects(alice: ApiCaller) -> None:
    # Given a link allowed three clicks
    code = alice.shorten("https://example.com/three", max_clicks=3)["code"]
    # When sixteen followers follow it at once
    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda _: alice.follow(code)["statusCode"], range(16)))
    # Then exactly three were redirected and the others told it expired
    assert sorted(statuses) == [301] * 3 + [410] * 13


def test_a_link_with_expires_at_redirects_until_then_and_is_410_after(alice: ApiCaller) -> None:
    with freeze_time("2026-06-01T12:00:00Z") as frozen:
        created = alice.request(
            "POST", "/", body={"url": "https://example.com/sale", "expires_at": "2026-06-01T14:00:30+02:00"}
        )
        code = body(created)["code"]
        shown = body(alice.link("GET", code))
        assert shown["expires_at"] == "2026-06-01T12:00:30Z"
        assert (shown["max_clicks"], shown["clicks_left"], shown["expired"]) == (None, None, False)
        followed = alice.follow(code)
        assert followed["statusCode"] == 301
        # A browser keeps the redirect no longer than the link lives
        assert response_header(followed, "Cache-Control") == "private, max-age=30"
        frozen.tick(timedelta(seconds=31))
        # The container remembers the link, and still answers 410 at once
        expired = alice.follow(code)
        assert (expired["statusCode"], body(expired)["error"]) == (410, "expired")


def test_a_link_without_limits_keeps_one_read_and_no_write(
    alice: ApiCaller, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = alice.shorten("https://example.com/plain")["code"]
    calls: list[str] = []
    original_get, original_take = LinksStore.get, LinksStore.take_click

    def counting_get(self: LinksStore, *args: Any, **kwargs: Any) -> Any:
        calls.append("get")
        return original_get(self, *args, **kwargs)

    def counting_take(self: LinksStore, *args: Any, **kwargs: Any) -> Any:
        calls.append("take_click")
        return original_take(self, *args, **kwargs)

    monkeypatch.setattr(LinksStore, "get", counting_get)
    monkeypatch.setattr(LinksStore, "take_click", counting_take)
    assert alice.follow(code, headers={"Cache-Control": "no-cache"})["statusCode"] == 301
    assert calls == ["get"]
    assert response_header(alice.follow(code), "Cache-Control") == "private, max-age=90"


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"expires_at": "2020-01-01T00:00:00Z"}, "expires_at: must be in the future"),
        ({"expires_at": "2099-01-01T00:00:00"}, "expires_at: Input should have timezone info"),
        ({"expires_at": 4102444800}, "expires_at: must be an ISO 8601"),
        ({"expires_at": "next week"}, "expires_at: Input should be a valid datetime"),
        ({"max_clicks": 0}, "max_clicks: Input should be greater than or equal to 1"),
        ({"max_clicks": -3}, "max_clicks: Input should be greater than or equal to 1"),
        ({"max_clicks": True}, "max_clicks: must be a whole number"),
        ({"max_clicks": 1.5}, "max_clicks: Input should be a valid integer"),
    ],
)
def test_invalid_limits_are_422_saying_what_is_wrong_and_write_nothing(
    alice: ApiCaller, fields: dict[str, Any], problem: str
) -> None:
    answer = alice.request("POST", "/", body={"url": "https://example.com/bad-limits", **fields})
    assert answer["statusCode"] == 422
    assert body(answer)["error"] == "invalid_request"
    assert body(answer)["message"].startswith(problem)
    assert body(alice.list_links())["links"] == []
    # And PATCH refuses them the same way
    code = alice.shorten("https://example.com/patched")["code"]
    patched = alice.link("PATCH", code, fields)
    assert (patched["statusCode"], body(patched)["error"]) == (422, "invalid_request")
    assert body(alice.link("GET", code))["max_clicks"] is None


def test_limits_are_set_changed_and_removed_with_patch(alice: ApiCaller) -> None:
    # Given a plain link
    code = alice.shorten("https://example.com/campaign")["code"]
    assert alice.follow(code)["statusCode"] == 301
    # When it gets a limit of one click, which is used
    limited = body(alice.link("PATCH", code, {"max_clicks": 1}))
    assert (limited["max_clicks"], limited["clicks_left"]) == (1, 1)
    assert alice.follow(code)["statusCode"] == 301
    assert alice.follow(code)["statusCode"] == 410
    # Then raising the limit gives the difference back
    raised = body(alice.link("PATCH", code, {"max_clicks": 3}))
    assert (raised["clicks_left"], raised["expired"]) == (2, False)
    assert alice.follow(code)["statusCode"] == 301
    # And removing the limit (null) makes it a plain link again
    plain = body(alice.link("PATCH", code, {"max_clicks": None}))
    assert (plain["max_clicks"], plain["clicks_left"]) == (None, None)
    assert [alice.follow(code)["statusCode"] for _ in range(3)] == [301] * 3


def test_an_expired_link_lives_again_with_a_later_expires_at(alice: ApiCaller) -> None:
    with freeze_time("2026-06-01T12:00:00Z") as frozen:
        code = alice.shorten("https://example.com/extended", expires_at="2026-06-01T12:01:00Z")["code"]
        frozen.tick(timedelta(minutes=2))
        assert alice.follow(code)["statusCode"] == 410
        later = (datetime(2026, 6, 1, 13, tzinfo=UTC)).isoformat()
        assert body(alice.link("PATCH", code, {"expires_at": later}))["expired"] is False
        assert alice.follow(code)["statusCode"] == 301
        assert body(alice.link("PATCH", code, {"expires_at": None}))["expires_at"] is None


def test_a_link_with_limits_is_never_the_one_find_if_exists_returns(alice: ApiCaller) -> None:
    plain = alice.shorten("https://example.com/shared")
    limited = alice.shorten("https://example.com/shared", max_clicks=5)
    again = alice.shorten("https://example.com/shared")
    assert limited["code"] != plain["code"]
    assert again["code"] == plain["code"]


def test_a_custom_code_asked_again_with_other_limits_is_409(alice: ApiCaller) -> None:
    first = alice.request(
        "POST", "/", body={"url": "https://example.com/c", "code": "flyer", "max_clicks": 2}
    )
    same = alice.request("POST", "/", body={"url": "https://example.com/c", "code": "flyer", "max_clicks": 2})
    other = alice.request(
        "POST", "/", body={"url": "https://example.com/c", "code": "flyer", "max_clicks": 9}
    )
    assert (first["statusCode"], same["statusCode"], other["statusCode"]) == (201, 200, 409)


def test_disabling_a_limited_link_is_gone_not_expired(alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/off", max_clicks=5)["code"]
    alice.link("PATCH", code, {"status": "disabled"})
    gone = alice.follow(code)
    assert (gone["statusCode"], body(gone)["error"]) == (410, "gone")
    alice.link("PATCH", code, {"status": "active"})
    assert body(alice.link("GET", code))["clicks_left"] == 5
