"""Reports from the click events (shortener.clicks.event_reports, event_queries): what a query
string asks, the SQL and its parameters, and series put in a time zone's buckets."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from shortener.clicks.event_queries import (
    EventSelection,
    answers_query,
    breakdown_query,
    codes_series_query,
    lifetime_query,
    literal,
    series_query,
    where,
)
from shortener.clicks.event_reports import (
    all_time_of,
    asked_codes,
    bucket_of,
    bucket_starts,
    event_ask,
    lifetime_totals,
    series_answer,
)
from shortener.clicks.reports import LINK_GROUPS
from shortener.exceptions import InvalidRequestError

BERLIN = ZoneInfo("Europe/Berlin")
KOLKATA = ZoneInfo("Asia/Kolkata")


def test_every_value_is_a_parameter_never_part_of_the_statement() -> None:
    selection = EventSelection(
        owner="o'brien",
        begin=datetime(2026, 11, 1, tzinfo=UTC),
        end=datetime(2026, 11, 2, 12, tzinfo=UTC),
        codes=("a", "b"),
        filters={"country": "DE"},
        bots="exclude",
    )
    condition = where(selection)
    assert "o'brien" not in condition.sql and "DE" not in condition.sql
    assert condition.parameters == [
        "'2026-11-01'",
        "'2026-11-03'",  # a day more: a click is stored under the day it arrived
        "'2026-11-01 00:00:00.000'",
        "'2026-11-02 12:00:00.000'",
        "'o''brien'",
        "'a'",
        "'b'",
        "'DE'",
    ]
    assert condition.sql.count("?") == len(condition.parameters) and condition.sql.endswith("NOT bot")
    assert literal("it's") == "'it''s'"


def test_a_breakdown_scans_once_for_every_dimension() -> None:
    selection = EventSelection(
        owner="o", begin=datetime(2026, 11, 1, tzinfo=UTC), end=datetime(2026, 11, 2, tzinfo=UTC)
    )
    query = breakdown_query(selection, '"db"."t"', ["country", "browser"])
    assert "GROUPING SETS ((country), (browser))" in query.sql
    assert "GROUPING SETS" in series_query(selection, '"db"."t"').sql


def test_a_query_string_is_read_strictly() -> None:
    ask = event_ask(
        {"tz": "Europe/Berlin", "country": "DE", "bots": "exclude", "group_by": "browser"},
        group_values=LINK_GROUPS,
    )
    assert (ask.tz.key, ask.filters, ask.bots, ask.group_by) == (
        "Europe/Berlin",
        {"country": "DE"},
        "exclude",
        "browser",
    )
    assert ask.needs_events("day") and not event_ask({}, group_values=LINK_GROUPS).needs_events("hour")
    assert event_ask({}, group_values=LINK_GROUPS).needs_events("week")
    for query, problem in (
        ({"tz": "Mars/Olympus"}, "tz must be an IANA time zone"),
        ({"bots": "some"}, "bots must be include, exclude or only"),
        ({"group_by": "visitor"}, "group_by must be one of"),
        ({"country": ""}, "country must be 1 to"),
    ):
        with pytest.raises(InvalidRequestError, match=problem):
            event_ask(query, group_values=LINK_GROUPS)


def test_buckets_are_the_zones_days_weeks_and_months_across_a_change_of_offset() -> None:
    # 2026-10-25 is the night Berlin goes from +02:00 to +01:00
    moment = datetime(2026, 10, 25, 22, 30, tzinfo=UTC)  # 23:30 in Berlin, on the 25th
    assert bucket_of(moment, "day", BERLIN) == datetime(2026, 10, 25, tzinfo=BERLIN)
    assert bucket_of(moment, "day", BERLIN).utcoffset().total_seconds() == 7200  # type: ignore[union-attr]
    assert bucket_of(moment, "week", BERLIN) == datetime(2026, 10, 19, tzinfo=BERLIN)
    assert bucket_of(moment, "month", BERLIN) == datetime(2026, 10, 1, tzinfo=BERLIN)
    days = bucket_starts(
        datetime(2026, 10, 24, tzinfo=UTC), datetime(2026, 10, 27, tzinfo=UTC), "day", BERLIN
    )
    assert [day.day for day in days] == [24, 25, 26, 27]
    assert [day.utcoffset().total_seconds() / 3600 for day in days] == [2, 2, 1, 1]  # type: ignore[union-attr]


def test_quarter_hours_add_up_in_a_half_hour_zone() -> None:
    # Given clicks at 18:15 and 18:45 UTC, which are 23:45 and 00:15 in Kolkata (+05:30)
    slot = lambda moment: str(int(moment.timestamp()) // 900)  # noqa: E731
    rows = [
        {
            "slot": slot(datetime(2026, 11, 1, 18, 15, tzinfo=UTC)),
            "clicks": "2",
            "humans": "1",
            "visitors": "1",
        },
        {
            "slot": slot(datetime(2026, 11, 1, 18, 45, tzinfo=UTC)),
            "clicks": "3",
            "humans": "3",
            "visitors": "2",
        },
        {"slot": None, "clicks": "5", "humans": "4", "visitors": "2"},
    ]
    answer = series_answer(
        rows,
        begin=datetime(2026, 11, 1, tzinfo=UTC),
        end=datetime(2026, 11, 2, 12, tzinfo=UTC),
        interval="day",
        tz=KOLKATA,
    )
    # Then each falls on its own Kolkata day, and the totals are the range's
    assert [(p.start.day, p.clicks, p.humans) for p in answer.series] == [(1, 2, 1), (2, 3, 3)]
    assert (answer.total, answer.humans, answer.visitors) == (5, 4, 2)


def test_at_most_100_codes_are_named_each_once() -> None:
    assert asked_codes(["a", "b", "a", ""]) == ["a", "b"]
    with pytest.raises(InvalidRequestError, match="code: give at most 100 codes"):
        asked_codes([f"c{n}" for n in range(101)])


def test_a_links_lifetime_rows_add_up_to_its_totals_with_answers_only_for_a_rule_link() -> None:
    rows = [
        {"code": "rule", "destination": "ios", "clicks": "3", "humans": "2",
         "first_click": "2026-11-02 08:00:00.250", "last_click": "2026-11-03 09:00:00.000"},
        {"code": "rule", "destination": "default", "clicks": "2", "humans": "2",
         "first_click": "2026-11-01 07:00:00.000", "last_click": "2026-11-02 07:00:00.000"},
        {"code": "plain", "destination": "default", "clicks": "4", "humans": "1",
         "first_click": "2026-11-05 00:00:00.000", "last_click": "2026-11-05 01:00:00.000"},
    ]  # fmt: skip
    totals = lifetime_totals(rows)
    rule = totals["rule"]
    assert (rule.clicks, rule.humans, rule.bots) == (5, 4, 1)
    assert rule.first_click == datetime(2026, 11, 1, 7, tzinfo=UTC)
    assert rule.last_click == datetime(2026, 11, 3, 9, tzinfo=UTC)
    assert rule.destinations == {"ios": 3, "default": 2}
    plain = totals["plain"]
    assert (plain.clicks, plain.humans, plain.bots, plain.destinations) == (4, 1, 3, {})
    assert all_time_of(None).clicks == 0 and all_time_of(plain).first_click == datetime(
        2026, 11, 5, tzinfo=UTC
    )


def test_the_events_only_questions_take_every_value_as_a_parameter() -> None:
    begin, end = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)
    selection = EventSelection(owner="o'x", begin=begin, end=end, job_id="j1")
    lifetime = lifetime_query(selection, '"db"."e"', '"db"."a"')
    series = codes_series_query(EventSelection("o'x", begin, end, codes=("a", "b")), '"db"."e"')
    answers = answers_query("c'd", begin, end, '"db"."a"')
    for query in (lifetime, series, answers):
        assert "o'x" not in query.sql and "c'd" not in query.sql
        assert query.sql.count("?") == len(query.parameters)
    assert "GROUP BY code, destination" in lifetime.sql and "'j1'" in lifetime.parameters
    assert "GROUPING SETS ((code, " in series.sql
    assert answers.parameters[-1] == "'c''d'"
