"""Click counting from access log lines (shortener.clicks.counting): what is a click, how it is
classified (country, device, browser, OS, bot), what is skipped, and the per-hour aggregation."""

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from shortener.clicks.counting import (
    ClickCollector,
    aggregate,
    batch_key,
    classify_agent,
    click_of,
    destinations_of,
    parse_line,
)
from shortener.clicks.model import (
    STAGE_CACHE_REFRESH_AGENT,
    Click,
    DestinationLine,
    HourCounts,
    OwnerDay,
    ValueCount,
    destination_line,
)

CHROME_WINDOWS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36"
)
SAFARI_IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.0 Mobile/15E148 Safari/604.1"
)
SAFARI_IPAD = (
    "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.0 Mobile/15E148 Safari/604.1"
)
PREVIEW_FETCHERS = [
    "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "Twitterbot/1.0",
    "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
    "WhatsApp/2.23.20.0",
    # iMessage's link previews
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) "
    "Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0",
    "http.rb/5.1.1 (Mastodon/4.2.0; +https://mastodon.social/)",
    "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
]
T0 = 1_764_133_200_000  # 2025-11-26T05:00:00Z
# template.yaml's access log format (a test of its own checks they agree)
FORMAT_FIELDS = (
    '{"requestId":"$context.requestId","time":"$context.requestTimeEpoch","method":"$context.httpMethod",'
    '"resourcePath":"$context.resourcePath","path":"$context.path","status":"$context.status",'
    '"ip":"$context.identity.sourceIp","userAgent":"$context.identity.userAgent",'
    '"responseLength":"$context.responseLength","stage":"$context.stage"}'
)


def line(**changes: Any) -> str:
    fields: dict[str, Any] = {
        "requestId": "r1",
        "time": str(T0),
        "method": "GET",
        "resourcePath": "/{code}",
        "path": "/abc",
        "status": "301",
        "ip": "8.8.8.8",
        "userAgent": CHROME_WINDOWS,
        "responseLength": "0",
    }
    fields.update(changes)
    return json.dumps(fields)


def click(**changes: Any) -> Click | str:
    parsed = parse_line(line(**changes))
    assert parsed is not None
    return click_of(parsed)


def test_a_followed_redirect_is_a_click_classified_without_its_address() -> None:
    found = click()
    assert isinstance(found, Click)
    assert (found.code, found.at) == ("abc", datetime(2025, 11, 26, 5, tzinfo=UTC))
    assert (found.bot, found.country, found.device, found.browser, found.os) == (
        False,
        "US",
        "desktop",
        "Chrome",
        "Windows",
    )
    assert "8.8.8.8" not in repr(found)


@pytest.mark.parametrize("agent", PREVIEW_FETCHERS)
def test_link_preview_fetchers_are_bots(agent: str) -> None:
    found = click(userAgent=agent)
    assert isinstance(found, Click) and found.bot and found.device == "bot"


@pytest.mark.parametrize(
    ("agent", "device", "os"),
    [
        (SAFARI_IPHONE, "mobile", "iOS"),
        (SAFARI_IPAD, "tablet", "iOS"),
        (CHROME_WINDOWS, "desktop", "Windows"),
    ],
)
def test_device_class_and_os_come_from_the_user_agent(agent: str, device: str, os: str) -> None:
    bot, found_device, _, found_os = classify_agent(agent)
    assert (bot, found_device, found_os) == (False, device, os)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"status": "404"}, "not_a_redirect"),
        ({"status": "410"}, "not_a_redirect"),
        ({"status": "429"}, "not_a_redirect"),
        ({"method": "HEAD"}, "not_a_follow"),
        ({"resourcePath": "/links/{code}", "path": "/links/abc"}, "not_a_follow"),
        ({"path": "/a/b"}, "not_a_follow"),
        ({"userAgent": STAGE_CACHE_REFRESH_AGENT}, "cache_refresh"),
    ],
)
def test_what_is_not_a_click(changes: dict[str, str], reason: str) -> None:
    assert click(**changes) == reason


@pytest.mark.parametrize(
    "message",
    [
        "not json",
        '{"requestId": "r1"',
        line(time="yesterday"),
        line(status="abc"),
        line(userAgent="x" * 10_000),  # a 10 KB user agent
        json.dumps([1, 2]),
        "",
    ],
)
def test_malformed_lines_are_not_parsed(message: str) -> None:
    assert parse_line(message) is None


@pytest.mark.parametrize("address", ["-", "10.0.0.1", "not an address", "999.1.1.1", "::1"])
def test_an_address_without_a_country_is_unknown(address: str) -> None:
    found = click(ip=address)
    assert isinstance(found, Click) and found.country == "unknown"


def test_a_junk_referrer_or_forged_forwarding_header_changes_nothing() -> None:
    # The access log has neither field: extra fields in a line are ignored, the address is the
    # connection's own ($context.identity.sourceIp)
    found = click(referer="javascript:alert(1)", xForwardedFor="1.2.3.4")
    assert isinstance(found, Click) and found.referrer is None and found.country == "US"


def test_clicks_add_up_per_link_per_hour() -> None:
    clicks = [
        c
        for c in (click(), click(), click(userAgent="Twitterbot/1.0"), click(path="/xyz"))
        if isinstance(c, Click)
    ]
    later = click(time=str(T0 + 3_600_000))
    assert isinstance(later, Click)
    hours = aggregate([*clicks, later])
    assert [(h.code, h.hour.hour, h.clicks, h.humans, h.bots) for h in hours] == [
        ("abc", 5, 3, 2, 1),
        ("abc", 6, 1, 1, 0),
        ("xyz", 5, 1, 1, 0),
    ]
    assert hours[0].values["country"] == {"US": 3}
    assert hours[0].values["device"] == {"desktop": 2, "bot": 1}
    assert "referrer" not in hours[0].values


class RecordingCounter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Sequence[HourCounts]]] = []

    def add(self, key: str, hours: Sequence[HourCounts], owner_days: Sequence[OwnerDay] = ()) -> int | None:
        self.calls.append((key, hours))
        return None if len(self.calls) > 1 else len(hours)


def test_a_batch_goes_on_past_bad_lines_and_is_written_once_per_delivery() -> None:
    counter = RecordingCounter()
    collector = ClickCollector(counter)
    messages = [
        line(),
        "garbage",
        line(userAgent="y" * 10_000),
        line(status="404"),
        line(userAgent="Twitterbot/1.0"),
    ]
    outcome = collector.collect("k", messages)
    assert (outcome.clicks, outcome.humans, outcome.bots) == (2, 1, 1)
    assert outcome.skipped == {"malformed": 2, "not_a_redirect": 1}
    assert len(counter.calls) == 1 and outcome.items_written == 1
    assert collector.collect("k", messages).already_counted


def test_the_batch_key_is_the_same_for_every_delivery_of_a_batch() -> None:
    assert batch_key("g", "s", ["2", "1"]) == batch_key("g", "s", ["1", "2"])
    assert batch_key("g", "s", ["1", "2"]) != batch_key("g", "s", ["1", "3"])
    assert batch_key("g", "s", ["1"]) != batch_key("g", "other", ["1"])


def test_the_fields_read_here_are_the_templates_access_log_format() -> None:
    from local_stack.cloudformation.template import load_template

    api = load_template()["Resources"]["ShortenerApi"]["Properties"]
    assert json.loads(api["AccessLogSetting"]["Format"]) == json.loads(FORMAT_FIELDS)


def answer(destination: str, code: str = "abc", at_ms: int = T0) -> str:
    return destination_line(code, destination, datetime.fromtimestamp(at_ms / 1000, UTC))


def test_the_functions_destination_line_is_read_back_as_written() -> None:
    parsed = parse_line(answer("geo:DE"))
    assert isinstance(parsed, DestinationLine)
    assert (parsed.code, parsed.destination, parsed.time_ms) == ("abc", "geo:DE", T0)
    # A destination that is not a rule's name is no line of ours
    assert parse_line(answer("<script>")) is None


def test_answers_add_to_their_links_hour_under_destination_and_never_to_its_clicks() -> None:
    counter = RecordingCounter()
    outcome = ClickCollector(counter).collect(
        "k", [answer("ios"), answer("ios"), answer("variant:2"), line()]
    )
    assert (outcome.clicks, outcome.answers) == (1, 3)
    [(_, hours)] = counter.calls
    [hour] = hours
    assert (hour.clicks, hour.values["destination"]) == (1, {"ios": 2, "variant:2": 1})


def test_destinations_count_each_answer_once_and_the_clicks_no_rule_recorded_as_default() -> None:
    # A plain link writes no line: every click is default
    assert destinations_of(5, {}) == [ValueCount(value="default", clicks=5)]
    # A rule link: its recorded answers; the password page and the preview are answers, not clicks
    assert destinations_of(3, {"ios": 2, "default": 1, "password_page": 4, "preview": 1}) == [
        ValueCount(value="password_page", clicks=4),
        ValueCount(value="ios", clicks=2),
        ValueCount(value="default", clicks=1),
        ValueCount(value="preview", clicks=1),
    ]
    # Rules added after 2 plain clicks: those stay default
    assert destinations_of(4, {"android": 2}) == [
        ValueCount(value="android", clicks=2),
        ValueCount(value="default", clicks=2),
    ]
