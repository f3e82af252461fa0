"""GET /links/{code}/clicks under moto: counters written by the collector (from access log batches
as the local stack delivers them), read back per range and interval, owner-scoped."""

import json
from types import ModuleType
from typing import Any

import pytest
from freezegun import freeze_time

from shortener.settings import api_settings
from tests.shortener.clicks.test_collector import deliveries, follow
from tests.shortener.clicks.test_counting import SAFARI_IPHONE as IPHONE
from tests.support.api import ApiCaller
from tests.support.loops import LambdaContext

pytestmark = pytest.mark.integration

T0 = 1_764_133_200_000  # 2025-11-26T05:00:00Z
HOUR = 3_600_000


@pytest.fixture
def collected(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("CLICK_RETENTION_DAYS", "30")
    from functions.collector import app

    monkeypatch.setattr(app.metrics, "namespace", "BulkShortenerTests")
    return app


def clicks(caller: ApiCaller, code: str, **query: str) -> dict[str, Any]:
    return caller.request(
        "GET",
        f"/links/{code}/clicks",
        resource="/links/{code}/clicks",
        path_parameters={"code": code},
        query=query or None,
    )


@freeze_time("2025-11-27T12:00:00Z")
def test_a_links_clicks_by_day_and_by_hour_owner_scoped(api: ModuleType, collected: ModuleType) -> None:
    alice, bob = ApiCaller(api, "alice"), ApiCaller(api, "bob")
    code = alice.shorten("https://example.com/report", code="report")["code"]
    records = [
        follow(code, at=T0),
        follow(code, at=T0 + 10),
        follow(code, IPHONE, at=T0 + 2 * HOUR),
        follow(code, "Twitterbot/1.0", at=T0 + 24 * HOUR),
    ]
    for event in deliveries(records):
        collected.lambda_handler(event, LambdaContext("collector"))
    # By day (the default interval), over the last 30 days (the default range)
    answer = clicks(alice, code)
    assert answer["statusCode"] == 200, answer["body"]
    report = json.loads(answer["body"])
    assert (report["code"], report["total"], report["humans"], report["bots"]) == (code, 4, 3, 1)
    assert report["interval"] == "day" and len(report["series"]) == 31
    by_day = {
        point["start"][:10]: (point["clicks"], point["humans"])
        for point in report["series"]
        if point["clicks"]
    }
    assert by_day == {"2025-11-26": (3, 3), "2025-11-27": (1, 0)}
    assert report["countries"] == [{"value": "US", "clicks": 4}]
    assert report["devices"] == [
        {"value": "desktop", "clicks": 2},
        {"value": "bot", "clicks": 1},
        {"value": "mobile", "clicks": 1},
    ]
    assert {"value": "iOS", "clicks": 1} in report["os"] and report["referrers"] == []
    assert report["all_time"]["clicks"] == 4
    # By hour over one day
    hourly = json.loads(
        clicks(
            alice, code, **{"from": "2025-11-26T00:00:00Z", "to": "2025-11-26T23:59:59Z", "interval": "hour"}
        )["body"]
    )
    assert len(hourly["series"]) == 24 and hourly["total"] == 3
    assert [p["clicks"] for p in hourly["series"] if p["clicks"]] == [2, 1]
    # Another owner's link is a 404, as for every link route
    assert clicks(bob, code)["statusCode"] == 404


@pytest.mark.parametrize(
    "query",
    [
        {"from": "yesterday"},
        {"interval": "week"},
        {"from": "2025-11-20", "to": "2025-11-01"},
        {"from": "2025-01-01", "to": "2025-11-01", "interval": "hour"},
    ],
)
def test_a_bad_range_is_a_400_naming_the_problem(api: ModuleType, query: dict[str, str]) -> None:
    alice = ApiCaller(api, "alice")
    code = alice.shorten("https://example.com/range")["code"]
    answer = clicks(alice, code, **query)
    assert answer["statusCode"] == 400
    assert set(json.loads(answer["body"])) == {"error", "message"}


@freeze_time("2025-11-27T12:00:00Z")
def test_the_callers_top_links_are_their_own_most_followed_first(
    api: ModuleType, collected: ModuleType
) -> None:
    alice, bob = ApiCaller(api, "alice"), ApiCaller(api, "bob")
    one = alice.shorten("https://example.com/one", code="one")["code"]
    two = alice.shorten("https://example.com/two", code="two")["code"]
    bobs = bob.shorten("https://example.com/bob", code="bobs")["code"]
    records = [
        follow(one),
        *(follow(two, at=T0 + n) for n in range(3)),
        follow(two, "Twitterbot/1.0"),
        follow(bobs),
    ]
    for event in deliveries(records):
        collected.lambda_handler(event, LambdaContext("collector"))
    answer = alice.request("GET", "/clicks", resource="/clicks")
    assert answer["statusCode"] == 200, answer["body"]
    top = json.loads(answer["body"])
    assert (top["total"], top["humans"]) == (5, 4)
    assert [(link["code"], link["clicks"], link["humans"]) for link in top["links"]] == [
        (two, 4, 3),
        (one, 1, 1),
    ]
    assert top["links"][0]["short_url"].endswith("/two")
    # A range without those days has none; a range too long is a 400
    later = alice.request("GET", "/clicks", resource="/clicks", query={"from": "2025-11-27"})
    assert json.loads(later["body"])["links"] == []
    assert (
        alice.request("GET", "/clicks", resource="/clicks", query={"from": "2025-01-01"})["statusCode"] == 400
    )
    assert [
        link["code"]
        for link in json.loads(bob.request("GET", "/clicks", resource="/clicks")["body"])["links"]
    ] == [bobs]


@freeze_time("2025-11-27T12:00:00Z")
def test_each_top_link_has_the_short_url_of_its_own_domain(
    api: ModuleType, collected: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a stack with another domain, a link on it and one on the default domain, both followed
    monkeypatch.setenv("DOMAINS", "go.example")
    api_settings.cache_clear()
    alice = ApiCaller(api, "alice")
    on_go = alice.shorten("https://example.com/go", code="ongo", domain="go.example")["code"]
    plain = alice.shorten("https://example.com/plain", code="plain")["code"]
    for event in deliveries([follow(on_go), follow(on_go, at=T0 + 1), follow(plain)]):
        collected.lambda_handler(event, LambdaContext("collector"))
    # When the caller asks for their top links
    top = json.loads(alice.request("GET", "/clicks", resource="/clicks")["body"])
    # Then each short URL is on its link's own domain
    assert [(link["code"], link["short_url"]) for link in top["links"]] == [
        (on_go, "https://go.example/ongo"),
        (plain, "https://sho.rt/plain"),
    ]


@freeze_time("2025-11-27T12:00:00Z")
def test_the_daily_clicks_of_a_list_of_links_in_one_answer(api: ModuleType, collected: ModuleType) -> None:
    # Given two of alice's links, one followed twice, and one of bob's
    alice, bob = ApiCaller(api, "alice"), ApiCaller(api, "bob")
    followed = alice.shorten("https://example.com/series/1", code="series-one")["code"]
    quiet = alice.shorten("https://example.com/series/2", code="series-two")["code"]
    others = bob.shorten("https://example.com/series/3", code="series-bob")["code"]
    for event in deliveries([follow(followed, at=T0), follow(followed, IPHONE, at=T0 + 24 * HOUR)]):
        collected.lambda_handler(event, LambdaContext("collector"))

    def series(caller: ApiCaller, codes: str) -> dict[str, Any]:
        return caller.request("GET", "/clicks/series", resource="/clicks/series", query={"codes": codes})

    # When alice asks for both (the quiet one first, and a code twice)
    answer = series(alice, f"{quiet},{followed},{quiet}")
    # Then each is answered once, in the order asked, with its total and a point per day of 30
    assert answer["statusCode"] == 200, answer["body"]
    body = json.loads(answer["body"])
    assert [(link["code"], link["total"]) for link in body["links"]] == [(quiet, 0), (followed, 2)]
    assert body["interval"] == "day" and all(len(link["series"]) == 31 for link in body["links"])
    assert sum(point["clicks"] for point in body["links"][1]["series"]) == 2
    # And another owner's code is a 404, no codes or more than 50 a 400
    assert series(alice, f"{followed},{others}")["statusCode"] == 404
    assert series(alice, "")["statusCode"] == 400
    too_many = json.loads(series(alice, ",".join(f"c{n:03d}" for n in range(51)))["body"])
    assert too_many["error"] == "invalid_request" and "codes" in too_many["message"]
