"""Reports from the click events (shortener.clicks.event_reports, event_queries): what a query
string asks, the SQL and its parameters, and series put in a time zone's buckets."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from shortener.clicks.event_queries import EventSelection, breakdown_query, literal, series_query, where
from shortener.clicks.event_reports import asked_codes, bucket_of, bucket_starts, event_ask, series_answer
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
