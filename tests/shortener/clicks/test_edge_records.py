"""Clicks from the edge's standard logs (v2, JSON, AWS's field names): what is a click, its country
(CloudFront's), its referrer's host, the URL-encoded user agent, what is skipped, and that a batch of
edge records delivered again, under other event ids, counts once (shortener.clicks.counting)."""

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from hypothesis import assume, given
from hypothesis import strategies as st

from shortener.clicks.counting import (
    ClickCollector,
    click_of,
    edge_batch_key,
    events_of,
    parse_line,
    referrer_host,
)
from shortener.clicks.events import visitor_id
from shortener.clicks.model import UNKNOWN, Click, EdgeLogRecord, HourCounts, OwnerDay
from tests.shortener.clicks.test_counting import CHROME_WINDOWS, SAFARI_IPHONE, T0, line


def record(**changes: Any) -> str:
    """One record as CloudFront's standard logging (v2) writes it in JSON: every value a string,
    "-" for none, the user agent and referrer URL-encoded."""
    fields: dict[str, Any] = {
        "timestamp(ms)": str(T0),
        "date": "2025-11-26",
        "time": "05:00:00",
        "c-ip": "203.0.113.7",
        "cs-method": "GET",
        "x-host-header": "d111111abcdef8.cloudfront.net",
        "cs-uri-stem": "/abc",
        "cs-uri-query": "-",
        "sc-status": "301",
        "cs(Referer)": quote("https://News.Example.com:8443/story?id=1", safe="/:"),
        "cs(User-Agent)": quote(CHROME_WINDOWS, safe="/;()"),
        "x-edge-result-type": "Hit",
        "x-edge-request-id": "req-1",
        "c-country": "DE",
        "time-taken": "0.001",
    }
    fields.update(changes)
    return json.dumps(fields)


def edge_click(**changes: Any) -> Click | str:
    parsed = parse_line(record(**changes))
    assert isinstance(parsed, EdgeLogRecord)
    return click_of(parsed)


def test_an_edge_redirect_is_a_click_with_cloudfronts_country_and_the_referrers_host() -> None:
    found = edge_click()
    assert isinstance(found, Click)
    assert (found.code, found.at) == ("abc", datetime(2025, 11, 26, 5, tzinfo=UTC))
    assert (found.country, found.referrer) == ("DE", "news.example.com")
    assert (found.bot, found.device, found.browser, found.os) == (False, "desktop", "Chrome", "Windows")
    assert found.from_edge


def test_the_viewers_address_is_read_only_for_the_visitor_hash_and_kept_nowhere() -> None:
    parsed = parse_line(record())
    assert isinstance(parsed, EdgeLogRecord) and parsed.ip == "203.0.113.7"
    click = click_of(parsed)
    assert isinstance(click, Click) and "203.0.113.7" not in repr(click)
    [event] = events_of([(click, parsed)], {}, lambda day: bytes(32))
    assert "203.0.113.7" not in event.model_dump_json()
    assert event.visitor == visitor_id(bytes(32), "203.0.113.7", parsed.user_agent)
    assert event.request_id == parsed.request_id


def test_date_and_time_stand_in_for_a_missing_timestamp() -> None:
    found = edge_click(**{"timestamp(ms)": "-", "date": "2025-11-26", "time": "06:30:15"})
    assert isinstance(found, Click)
    assert found.at == datetime(2025, 11, 26, 6, 30, 15, tzinfo=UTC)


def test_no_referrer_and_no_country_are_none_and_unknown() -> None:
    found = edge_click(**{"cs(Referer)": "-", "c-country": "-"})
    assert isinstance(found, Click)
    assert (found.referrer, found.country) == (None, UNKNOWN)


def test_the_user_agent_is_decoded_as_cloudfront_encodes_it() -> None:
    found = edge_click(**{"cs(User-Agent)": quote(SAFARI_IPHONE, safe="")})
    assert isinstance(found, Click)
    assert (found.device, found.os) == ("mobile", "iOS")


def test_what_the_access_log_skips_the_edge_skips_too() -> None:
    assert edge_click(**{"cs-method": "HEAD"}) == "not_a_follow"
    assert edge_click(**{"cs-method": "POST", "sc-status": "401"}) == "not_a_redirect"  # a wrong password
    assert edge_click(**{"sc-status": "404"}) == "not_a_redirect"
    assert edge_click(**{"sc-status": "410"}) == "not_a_redirect"
    assert edge_click(**{"sc-status": "000"}) == "not_a_redirect"
    assert edge_click(**{"cs-uri-stem": "/"}) == "not_a_follow"
    assert edge_click(**{"cs-uri-stem": "/.well-known/apple-app-site-association"}) == "not_a_follow"
    assert edge_click(**{"cs-uri-stem": "/links/abc"}) == "not_a_follow"
    assert edge_click(**{"cs-uri-stem": "/bulk"}) == "not_a_follow"  # a reserved word, never a code


def test_a_password_links_redirect_after_its_form_is_a_click() -> None:
    found = edge_click(**{"cs-method": "POST", "sc-status": "302"})
    assert isinstance(found, Click)


def test_a_bots_edge_click_is_a_bots() -> None:
    found = edge_click(
        **{"cs(User-Agent)": quote("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)")}
    )
    assert isinstance(found, Click) and found.bot


def test_a_malformed_record_is_none() -> None:
    assert parse_line(record(**{"x-edge-request-id": ""})) is None
    assert parse_line(record(**{"sc-status": "abc"})) is None
    assert parse_line(record(**{"timestamp(ms)": "-", "date": "-", "time": "-"})) is None
    assert parse_line(record(**{"timestamp(ms)": "-", "date": "yesterday", "time": "noon"})) is None
    missing = json.loads(record())
    del missing["cs-uri-stem"]
    assert parse_line(json.dumps(missing)) is None


def test_an_access_log_line_of_the_edge_stage_is_never_counted() -> None:
    parsed = parse_line(line(stage="edge"))
    assert parsed is not None
    assert click_of(parsed) == "edge_stage"
    counted = parse_line(line(stage="prod"))
    assert counted is not None and isinstance(click_of(counted), Click)


@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FFF), max_size=300))
def test_any_url_encoded_user_agent_decodes_to_itself(agent: str) -> None:
    # A user agent that is "-" itself is logged as CloudFront logs a missing one: nothing tells them apart.
    assume(agent != "-")
    parsed = parse_line(record(**{"cs(User-Agent)": quote(agent, safe="") or "-"}))
    assert isinstance(parsed, EdgeLogRecord)
    assert parsed.user_agent == (agent or None)


@given(
    st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\.[a-z0-9]{1,10}){1,3}", fullmatch=True),
    st.sampled_from(["http", "https"]),
    st.booleans(),
    st.text(alphabet="abc/?=&%#", max_size=20),
)
def test_the_referrer_is_its_host_lower_case(host: str, scheme: str, upper: bool, rest: str) -> None:
    referer = f"{scheme}://{host.upper() if upper else host}/{rest}"
    parsed = parse_line(record(**{"cs(Referer)": quote(referer, safe="")}))
    assert isinstance(parsed, EdgeLogRecord)
    assert referrer_host(parsed.referer) == host[:64]


def test_a_referrer_without_a_host_is_none() -> None:
    assert referrer_host("-") is None
    assert referrer_host("not a url") is None
    assert referrer_host("") is None


class Counter:
    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.hours: list[HourCounts] = []

    def add(
        self, batch_key: str, hours: Sequence[HourCounts], owner_days: Sequence[OwnerDay] = ()
    ) -> int | None:
        if batch_key in self.keys:
            return None
        self.keys.add(batch_key)
        self.hours += hours
        return len(hours)


def test_edge_records_delivered_again_under_other_event_ids_count_once() -> None:
    counter = Counter()
    collector = ClickCollector(counter)
    batch = [record(**{"x-edge-request-id": f"req-{n}"}) for n in range(3)]
    first = collector.collect("event-ids-of-the-first-delivery", batch)
    again = collector.collect("event-ids-of-another-delivery", list(reversed(batch)))
    assert (first.clicks, first.already_counted, again.already_counted) == (3, False, True)
    assert sum(hours.clicks for hours in counter.hours) == 3
    assert counter.keys == {edge_batch_key(["req-0", "req-1", "req-2"])}


def test_a_mixed_batch_counts_every_redirect_and_skips_the_malformed() -> None:
    counter = Counter()
    outcome = ClickCollector(counter).collect("k", [record(), line(), "junk", record(**{"sc-status": "404"})])
    assert (outcome.clicks, outcome.skipped) == (2, {"malformed": 1, "not_a_redirect": 1})
    [hours] = counter.hours
    assert hours.values["referrer"] == {"news.example.com": 1}
    assert hours.values["country"] == {"DE": 1, "US": 1}


def test_edge_clicks_never_spend_a_click_limit_again() -> None:
    # Given a click-limited link on a cached stage
    from shortener.clicks.model import LimitOutcome
    from shortener.links.model import Link

    link = Link(
        code="abc",
        url="https://example.com/",
        owner="o",
        max_clicks=5,
        created_at=datetime(2025, 11, 1, tzinfo=UTC),
    )
    spent: list[dict[str, int]] = []

    def limits(clicks: Any, limited: Any) -> LimitOutcome:
        spent.append(dict(clicks))
        return LimitOutcome()

    collector = ClickCollector(Counter(), lambda codes: {"abc": link}, limits)
    # When a batch of the edge's records is counted: the function spent the limit already
    collector.collect("k1", [record(**{"x-edge-request-id": "e1"}), record(**{"x-edge-request-id": "e2"})])
    # ... and a batch of the cached stage's access log lines
    collector.collect("k2", [line(requestId="a1"), line(requestId="a2", stage="prod")])
    # Then only the access log's redirects were added to the limit
    assert spent == [{"abc": 2}]
