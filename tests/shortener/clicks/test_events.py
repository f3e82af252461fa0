"""The click event and the daily visitor id (unit)."""

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from shortener.clicks.events import DEFAULT_DESTINATION, VISITOR_ID_LENGTH, click_event, visitor_id
from shortener.clicks.model import Click

MONDAY_KEY = bytes(range(32))
TUESDAY_KEY = bytes(range(1, 33))
ADDRESS = "203.0.113.7"
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
SAFARI = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Safari/604.1"


def test_same_visitor_same_day_has_the_same_id() -> None:
    # Given one address and agent, When hashed twice under the day's key, Then the ids agree
    assert visitor_id(MONDAY_KEY, ADDRESS, FIREFOX) == visitor_id(MONDAY_KEY, ADDRESS, FIREFOX)


def test_next_day_gives_another_id() -> None:
    assert visitor_id(MONDAY_KEY, ADDRESS, FIREFOX) != visitor_id(TUESDAY_KEY, ADDRESS, FIREFOX)


def test_another_agent_gives_another_id() -> None:
    assert visitor_id(MONDAY_KEY, ADDRESS, FIREFOX) != visitor_id(MONDAY_KEY, ADDRESS, SAFARI)


def test_the_id_is_a_truncated_hash_that_does_not_hold_the_address() -> None:
    visitor = visitor_id(MONDAY_KEY, ADDRESS, FIREFOX)
    assert len(visitor) == VISITOR_ID_LENGTH
    assert ADDRESS not in visitor
    int(visitor, 16)


def test_event_of_a_click_keeps_its_classification_and_no_address() -> None:
    # Given a counted click of a bulk job's link
    at = datetime(2026, 11, 28, 17, 5, tzinfo=UTC)
    click = Click(
        code="abc1234",
        at=at,
        bot=False,
        country="DE",
        device="mobile",
        browser="Safari",
        os="iOS",
        referrer="example.com",
    )
    # When it becomes an event
    event = click_event(
        click,
        request_id="req-1",
        owner="alice",
        status=301,
        visitor=visitor_id(MONDAY_KEY, ADDRESS, SAFARI),
        job_id="job-1",
        row=7,
    )
    # Then it carries what was counted, the job's row, the default destination and its day
    assert (event.code, event.owner, event.job_id, event.row) == ("abc1234", "alice", "job-1", 7)
    assert (event.country, event.device, event.browser, event.os, event.referrer, event.bot) == (
        "DE",
        "mobile",
        "Safari",
        "iOS",
        "example.com",
        False,
    )
    assert event.destination == DEFAULT_DESTINATION
    assert event.day == "2026-11-28"
    assert ADDRESS not in event.model_dump_json()


def test_event_refuses_a_visitor_that_is_not_an_id() -> None:
    click = Click(
        code="abc1234",
        at=datetime(2026, 11, 28, tzinfo=UTC),
        bot=True,
        country="unknown",
        device="bot",
        browser="Other",
        os="Other",
    )
    with pytest.raises(ValidationError):
        click_event(click, request_id="req-1", owner="alice", status=301, visitor=ADDRESS)


def test_the_record_is_one_json_line_with_the_time_in_epoch_milliseconds() -> None:
    click = Click(
        code="abc1234",
        at=datetime(2026, 11, 28, 17, 5, 1, 250000, tzinfo=UTC),
        bot=False,
        country="DE",
        device="desktop",
        browser="Firefox",
        os="Linux",
    )
    event = click_event(click, request_id="req-1", owner="alice", status=302, visitor="0" * VISITOR_ID_LENGTH)
    record = event.record()
    assert record.endswith(b"\n") and record.count(b"\n") == 1
    document = json.loads(record)
    assert document["time"] == 1_795_885_501_250
    assert (document["request_id"], document["row"], document["referrer"]) == ("req-1", None, None)
