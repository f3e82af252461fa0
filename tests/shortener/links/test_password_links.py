"""Password and preview links through the API handler under moto: the password page, the form's
right and wrong answers, the wrong tries counted per link and client in the clicks table, click
limits taken only by the right password, previews for crawlers, and the fields in views and PATCH."""

from types import ModuleType
from typing import Any
from urllib.parse import urlencode

import pytest

from shortener.links.protection import MAX_WRONG_TRIES
from shortener.links.store import LinksStore
from tests.support.api import ApiCaller, body, call, response_header
from tests.support.events import api_event

pytestmark = pytest.mark.integration

FACEBOOK = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
PREVIEW = {"title": "Spring <sale>", "description": "Flowers & more", "image": "https://cdn.example/s.png"}


@pytest.fixture
def alice(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "alice")


def send_password(
    api: ModuleType, code: str, password: str, address: str = "198.51.100.7", html: bool = True
) -> dict[str, Any]:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if html:
        headers["Accept"] = "text/html,application/xhtml+xml"
    event = api_event(
        "POST",
        f"/{code}",
        body=urlencode({"password": password}),
        headers=headers,
        path_parameters={"code": code},
        resource="/{code}",
    )
    event["requestContext"]["identity"]["sourceIp"] = address
    return call(api, event)


def test_a_password_link_answers_its_form_and_no_location(alice: ApiCaller) -> None:
    # Given a link with a password
    code = alice.shorten("https://example.com/secret", password="open sesame")["code"]
    # When it is followed
    page = alice.follow(code)
    # Then the answer is the page with a form posting password to the link, kept by no cache
    assert page["statusCode"] == 200
    assert response_header(page, "Location") is None
    assert response_header(page, "Cache-Control") == "private, no-store"
    assert response_header(page, "Content-Type").startswith("text/html")
    assert f'<form method="post" action="{code}">' in page["body"]
    assert 'name="password"' in page["body"]
    assert "script-src 'none'" in response_header(page, "Content-Security-Policy")
    # And HEAD answers the same without a body
    head = alice.follow(code, method="HEAD")
    assert (head["statusCode"], head["body"], response_header(head, "Location")) == (200, "", None)


def test_the_right_password_redirects_and_a_wrong_one_shows_the_page_again(
    api: ModuleType, alice: ApiCaller
) -> None:
    code = alice.shorten("https://example.com/secret", password="open sesame")["code"]
    wrong = send_password(api, code, "open sesame!")
    assert wrong["statusCode"] == 401
    assert "not the link" in wrong["body"] and 'name="password"' in wrong["body"]
    assert response_header(wrong, "Cache-Control") == "private, no-store"
    right = send_password(api, code, "open sesame")
    assert right["statusCode"] == 302
    assert response_header(right, "Location") == "https://example.com/secret"
    assert response_header(right, "Cache-Control") == "private, no-store"
    # And a client that takes no HTML gets the JSON error
    assert body(send_password(api, code, "nope", html=False))["error"] == "wrong_password"


def test_too_many_wrong_tries_answer_429_with_retry_after_for_that_client_only(
    api: ModuleType, alice: ApiCaller
) -> None:
    code = alice.shorten("https://example.com/secret", password="pw")["code"]
    statuses = [send_password(api, code, "guess")["statusCode"] for _ in range(MAX_WRONG_TRIES)]
    assert statuses == [401] * MAX_WRONG_TRIES
    blocked = send_password(api, code, "pw")
    assert blocked["statusCode"] == 429
    assert 0 < int(response_header(blocked, "Retry-After") or "0") <= 15 * 60 + 1
    # Another client still gets in
    assert send_password(api, code, "pw", address="203.0.113.9")["statusCode"] == 302


def test_only_the_right_passwords_redirect_takes_a_click(api: ModuleType, alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/once", password="pw", max_clicks=1)["code"]
    assert [alice.follow(code)["statusCode"] for _ in range(3)] == [200, 200, 200]
    assert send_password(api, code, "wrong")["statusCode"] == 401
    assert send_password(api, code, "pw")["statusCode"] == 302
    assert send_password(api, code, "pw")["statusCode"] == 410


def test_a_post_to_a_link_without_password_is_405_and_to_no_link_404(
    api: ModuleType, alice: ApiCaller
) -> None:
    code = alice.shorten("https://example.com/plain")["code"]
    assert body(send_password(api, code, "x", html=False))["error"] == "method_not_allowed"
    assert send_password(api, code, "x")["statusCode"] == 405
    assert send_password(api, "nosuchcode", "x", html=False)["statusCode"] == 404


def test_views_say_has_password_never_the_password_and_patch_sets_or_clears_it(alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/plain")["code"]
    assert body(alice.link("GET", code))["has_password"] is False
    assert alice.link("PATCH", code, {"password": "pw"})["statusCode"] == 200
    shown = body(alice.link("GET", code))
    assert shown["has_password"] is True
    assert "pw" not in str(shown) and "password_hash" not in shown
    assert alice.follow(code)["statusCode"] == 200
    assert alice.link("PATCH", code, {"password": None})["statusCode"] == 200
    assert body(alice.link("GET", code))["has_password"] is False
    assert alice.follow(code)["statusCode"] == 301


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"password": ""}, "password"),
        ({"password": "   "}, "password"),
        ({"preview": {"title": "T", "image": "http://cdn.example/a.png"}}, "preview.image"),
        ({"preview": {"title": "T", "image": "/a.png"}}, "preview.image"),
        ({"preview": {"description": "no title"}}, "preview.title"),
    ],
)
def test_an_empty_password_or_a_bad_preview_is_422_naming_the_field(
    alice: ApiCaller, fields: dict[str, Any], named: str
) -> None:
    answer = alice.request("POST", "/", body={"url": "https://example.com/x", **fields})
    assert answer["statusCode"] == 422
    assert named in body(answer)["message"]


def test_a_preview_link_answers_crawlers_with_its_preview_and_people_with_the_redirect(
    alice: ApiCaller,
) -> None:
    code = alice.shorten("https://example.com/spring", preview=PREVIEW)["code"]
    assert body(alice.link("GET", code))["preview"] == PREVIEW
    shown = alice.follow(code, headers={"User-Agent": FACEBOOK})
    assert shown["statusCode"] == 200
    assert response_header(shown, "Cache-Control") == "private, no-store"
    assert '<meta property="og:title" content="Spring &lt;sale&gt;">' in shown["body"]
    assert '<meta property="og:description" content="Flowers &amp; more">' in shown["body"]
    assert '<meta property="og:image" content="https://cdn.example/s.png">' in shown["body"]
    assert f'<meta property="og:url" content="https://sho.rt/{code}">' in shown["body"]
    assert '<meta name="twitter:card" content="summary_large_image">' in shown["body"]
    person = alice.follow(code, headers={"User-Agent": FIREFOX})
    assert person["statusCode"] == 302
    assert response_header(person, "Location") == "https://example.com/spring"
    assert response_header(person, "Cache-Control") == "private, no-store"


def test_a_crawler_of_a_password_link_gets_its_preview_else_the_password_page(alice: ApiCaller) -> None:
    with_preview = alice.shorten("https://example.com/a", password="pw", preview=PREVIEW)["code"]
    without = alice.shorten("https://example.com/b", password="pw")["code"]
    assert "og:title" in alice.follow(with_preview, headers={"User-Agent": FACEBOOK})["body"]
    assert 'name="password"' in alice.follow(without, headers={"User-Agent": FACEBOOK})["body"]
    assert 'name="password"' in alice.follow(with_preview, headers={"User-Agent": FIREFOX})["body"]


def test_a_password_link_is_never_the_link_found_for_its_url(alice: ApiCaller) -> None:
    plain = alice.shorten("https://example.com/same")["code"]
    guarded = alice.request("POST", "/", body={"url": "https://example.com/same", "password": "pw"})
    assert guarded["statusCode"] == 201
    assert body(guarded)["code"] != plain


def test_links_of_one_bulk_call_sharing_a_password_share_one_hash(
    alice: ApiCaller, tables: dict[str, str]
) -> None:
    # Given a POST /links/bulk call whose links share a password
    items = [{"url": f"https://example.com/{n}", "password": "pw"} for n in range(3)]
    answer = alice.request("POST", "/links/bulk", body={"links": items})
    codes = [outcome["code"] for outcome in body(answer)["links"]]
    # Then the password was hashed once for the call
    stored = [LinksStore(tables["LINKS_TABLE"]).get(code) for code in codes]
    assert len({link.password_hash for link in stored if link is not None}) == 1
    assert all(alice.follow(code)["statusCode"] == 200 for code in codes)
