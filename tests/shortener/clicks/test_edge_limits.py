"""A click-limited link through the edge, under moto: the edge never stores its redirect (no-store),
so every follow reaches the function through the edge's origin (an HTTP API, no cache), which spends the limit
there, once per redirect; the collector then counts the edge's records as clicks and never adds them
to the limit again (a cached stage's access log lines still do: shortener.clicks.limits)."""

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest

from shortener.clicks.counting import ClickCollector
from shortener.clicks.limits import count_limited_clicks
from shortener.clicks.model import LimitOutcome
from shortener.clicks.store import ClicksStore
from shortener.clicks.store_limits import ClickLimitStore
from shortener.links.model import Link
from shortener.links.store import LinksStore
from shortener.settings import api_settings
from tests.shortener.clicks.test_counting import CHROME_WINDOWS, line
from tests.shortener.clicks.test_edge_records import record
from tests.support.api import ApiCaller, call, response_header
from tests.support.events import api_event, http_api_event

pytestmark = pytest.mark.integration

EDGE_SECRET = "edge-limits-secret"


@pytest.fixture(autouse=True)
def edge_origin_secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("EDGE_ORIGIN_SECRET", EDGE_SECRET)
    api_settings.cache_clear()
    yield
    api_settings.cache_clear()


def through_the_edge(api: ModuleType, code: str) -> dict[str, Any]:
    """GET /{code} as CloudFront's origin request reaches the function through the edge's origin
    (an HTTP API, payload format 1.0, with the edge's header)."""
    event = api_event(
        "GET",
        f"/{code}",
        resource="/{code}",
        path_parameters={"code": code},
        headers={
            "User-Agent": CHROME_WINDOWS,
            "Via": "2.0 abc.cloudfront.net (CloudFront)",
            "X-Shortener-Edge": EDGE_SECRET,
        },
    )
    return call(api, http_api_event(event))


def test_a_click_limit_is_spent_once_per_redirect_through_the_edge(
    api: ModuleType, tables: dict[str, str]
) -> None:
    # Given a link allowed two clicks
    code = ApiCaller(api, "alice").shorten("https://example.com/edge-twice", max_clicks=2)["code"]
    # When it is followed three times through the edge
    answers = [through_the_edge(api, code) for _ in range(3)]
    # Then the function spent the limit itself: two redirects the edge may not store, then 410
    assert [answer["statusCode"] for answer in answers] == [301, 301, 410]
    assert response_header(answers[0], "Cache-Control") == "private, no-store"
    # When the edge's two redirect records (and its 410) reach the collector of a cached stage
    links_table, clicks_table = tables["LINKS_TABLE"], tables["CLICKS_TABLE"]
    limit_store = ClickLimitStore(links_table)
    refreshed: list[str] = []

    def limits(clicks: Any, limited: Any) -> LimitOutcome:
        return count_limited_clicks(limit_store, lambda c: refreshed.append(c) or 410, clicks, limited)

    links = LinksStore(links_table)
    collector = ClickCollector(ClicksStore(clicks_table), links.get_many, limits)
    edge = collector.collect(
        "edge-batch",
        [
            record(**{"cs-uri-stem": f"/{code}", "x-edge-request-id": "e1", "x-edge-result-type": "Miss"}),
            record(**{"cs-uri-stem": f"/{code}", "x-edge-request-id": "e2", "x-edge-result-type": "Miss"}),
            record(**{"cs-uri-stem": f"/{code}", "x-edge-request-id": "e3", "sc-status": "410"}),
        ],
    )
    # Then they are two clicks, and the limit is untouched (no "served" count, no refresh)
    assert (edge.clicks, edge.limits) == (2, None)
    item = boto3.client("dynamodb").get_item(TableName=links_table, Key={"code": {"S": code}})["Item"]
    assert "served" not in item
    assert item["clicks"]["N"] == "2"
    assert refreshed == []
    # And a line of the edge stage in an access log would not count at all
    stray = collector.collect("stray", [line(path=f"/{code}", stage="edge")])
    assert (stray.clicks, stray.skipped) == (0, {"edge_stage": 1})


def test_a_cached_stages_access_log_still_counts_toward_the_limit(
    api: ModuleType, tables: dict[str, str]
) -> None:
    # Given a click-limited link with one click left, answered once by the prod stage's cache
    code = ApiCaller(api, "alice").shorten("https://example.com/cached-once", max_clicks=1)["code"]
    limit_store = ClickLimitStore(tables["LINKS_TABLE"])
    counted: list[dict[str, int]] = []

    def limits(clicks: Any, limited: dict[str, Link]) -> LimitOutcome:
        counted.append(dict(clicks))
        return count_limited_clicks(limit_store, lambda c: 410, clicks, limited)

    collector = ClickCollector(
        ClicksStore(tables["CLICKS_TABLE"]), LinksStore(tables["LINKS_TABLE"]).get_many, limits
    )
    # When the access log line of that cached redirect arrives
    outcome = collector.collect("prod-batch", [line(path=f"/{code}", stage="prod")])
    # Then it is added to the limit, which ends the link
    assert counted == [{code: 1}]
    assert outcome.limits is not None and outcome.limits.ended == [code]
