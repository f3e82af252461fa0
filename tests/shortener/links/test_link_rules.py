"""Links with rules through the API handler under moto: made, shown, changed and cleared; each
visitor sent where the rules say, with a 302 no cache keeps; invalid rules refused naming the
field, with nothing written; plain links keep their redirect as it was."""

from types import ModuleType

import pytest

from tests.support.api import ApiCaller, body, response_header

pytestmark = pytest.mark.integration

IPHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148"
ANDROID = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36"
DESKTOP = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36"
RULES = {
    "ios_url": "https://apps.apple.com/app/id1",
    "android_url": "https://play.google.com/store/apps/details?id=x",
    "geo": {"DE": "https://example.de/"},
    "utm": {"source": "sms", "campaign": "spring"},
}


@pytest.fixture
def alice(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "alice")


def _location(alice: ApiCaller, code: str, **headers: str) -> str:
    answer = alice.follow(code, headers=headers)
    assert answer["statusCode"] == 302, answer
    assert response_header(answer, "Cache-Control") == "private, no-store"
    return str(response_header(answer, "Location"))


def test_each_visitor_goes_where_the_rules_say(alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/landing?ref=a", **RULES)["code"]
    assert _location(alice, code, **{"User-Agent": IPHONE}) == (
        "https://apps.apple.com/app/id1?utm_source=sms&utm_campaign=spring"
    )
    assert _location(alice, code, **{"User-Agent": ANDROID}).startswith(
        "https://play.google.com/store/apps/details?id=x&utm_source=sms"
    )
    assert _location(alice, code, **{"User-Agent": DESKTOP, "CloudFront-Viewer-Country": "DE"}).startswith(
        "https://example.de/?utm_source=sms"
    )
    assert _location(alice, code, **{"User-Agent": DESKTOP}) == (
        "https://example.com/landing?ref=a&utm_source=sms&utm_campaign=spring"
    )


def test_the_rules_are_shown_changed_and_cleared(alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/shown", **RULES)["code"]
    shown = body(alice.link("GET", code))
    assert shown["ios_url"] == RULES["ios_url"] and shown["geo"] == RULES["geo"]
    assert (
        shown["utm"]["campaign"] == "spring" and shown["variants"] is None and shown["forward_query"] is False
    )
    listed = body(alice.list_links())["links"]
    assert next(link for link in listed if link["code"] == code)["android_url"] == RULES["android_url"]
    # When the variants are set and the device rules cleared
    variants = [{"url": "https://a.example/", "weight": 50}, {"url": "https://b.example/", "weight": 50}]
    changed = alice.link(
        "PATCH", code, {"variants": variants, "ios_url": None, "android_url": None, "geo": None}
    )
    assert changed["statusCode"] == 200, changed
    shown = body(alice.link("GET", code))
    assert (shown["ios_url"], shown["geo"], shown["variants"]) == (None, None, variants)
    # Then an iPhone draws a variant too
    assert _location(alice, code, **{"User-Agent": IPHONE}).split("?")[0] in {
        "https://a.example/",
        "https://b.example/",
    }
    # And with every rule but utm cleared, the link answers as a plain link again (utm is the same for all)
    alice.link("PATCH", code, {"variants": None})
    answer = alice.follow(code, headers={"User-Agent": IPHONE})
    assert answer["statusCode"] == 301
    assert (
        response_header(answer, "Location") == "https://example.com/shown?utm_source=sms&utm_campaign=spring"
    )
    alice.link("PATCH", code, {"utm": None})
    assert response_header(alice.follow(code), "Location") == "https://example.com/shown"


def test_forward_query_passes_the_short_urls_query_on(alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/fq", forward_query=True)["code"]
    answer = alice.request(
        "GET", f"/{code}", resource="/{code}", path_parameters={"code": code}, query={"gclid": "abc"}
    )
    assert (answer["statusCode"], response_header(answer, "Location")) == (
        302,
        "https://example.com/fq?gclid=abc",
    )


@pytest.mark.parametrize(
    ("fields", "status", "named"),
    [
        ({"geo": {"ZZ": "https://a.example/"}}, 422, "geo"),
        ({"variants": [{"url": "https://a.example/", "weight": 40}]}, 422, "variants"),
        ({"ios_url": "javascript:alert(1)"}, 400, "ios_url"),
        ({"geo": {"DE": "https://user:pw@a.example/"}}, 400, "geo.DE"),
    ],
)
def test_an_invalid_rule_is_refused_naming_the_field_and_writes_nothing(
    alice: ApiCaller, fields: dict, status: int, named: str
) -> None:
    answer = alice.request("POST", "/", body={"url": "https://example.com/refused", **fields})
    assert answer["statusCode"] == status, answer
    assert body(answer)["message"].startswith(f"{named}: ")
    assert body(alice.list_links())["links"] == []


def test_a_rule_link_is_its_own_link_never_the_urls_plain_one(alice: ApiCaller) -> None:
    plain = alice.shorten("https://example.com/same")
    ruled = alice.shorten("https://example.com/same", ios_url="https://apps.apple.com/app/id1")
    assert ruled["code"] != plain["code"]
    assert alice.shorten("https://example.com/same")["code"] == plain["code"]


def test_a_bulk_call_fails_only_the_item_whose_rule_is_invalid(alice: ApiCaller) -> None:
    answer = alice.request(
        "POST",
        "/links/bulk",
        body={
            "links": [
                {"url": "https://example.com/ok", "ios_url": "https://apps.apple.com/app/id1"},
                {"url": "https://example.com/bad", "android_url": "ftp://x.example/"},
            ]
        },
    )
    outcomes = body(answer)["links"]
    assert outcomes[0]["status"] == 201
    assert outcomes[1]["status"] == 400 and outcomes[1]["message"].startswith("android_url: ")
    assert _location(alice, outcomes[0]["code"], **{"User-Agent": IPHONE}) == "https://apps.apple.com/app/id1"


def test_a_plain_link_keeps_its_status_and_cache_control(alice: ApiCaller) -> None:
    code = alice.shorten("https://example.com/plain")["code"]
    answer = alice.follow(code, headers={"User-Agent": IPHONE, "CloudFront-Viewer-Country": "DE"})
    assert answer["statusCode"] == 301
    assert response_header(answer, "Cache-Control") != "private, no-store"
