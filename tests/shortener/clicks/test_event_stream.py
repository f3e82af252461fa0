"""Sending click events to Firehose (shortener.clicks.event_stream): calls within PutRecordBatch's
limits, records a call refused sent again, and a delivery that keeps failing fails loudly."""

from datetime import UTC, datetime
from typing import Any

import pytest

from shortener.clicks.event_stream import MAX_RECORDS, ClickEventStream, EventDeliveryError
from shortener.clicks.events import VISITOR_ID_LENGTH, ClickEvent


def event(number: int) -> ClickEvent:
    return ClickEvent(
        time=datetime(2026, 11, 29, tzinfo=UTC),
        request_id=f"req-{number}",
        code="abc",
        owner="alice",
        status=301,
        country="DE",
        device="desktop",
        browser="Firefox",
        os="Linux",
        bot=False,
        visitor="0" * VISITOR_ID_LENGTH,
    )


class Firehose:
    """Answers PutRecordBatch as Firehose does, refusing the records ``refuse`` picks."""

    def __init__(self, refuse: Any = lambda data, attempt: False) -> None:
        self.calls: list[list[bytes]] = []
        self.refuse = refuse

    def put_record_batch(self, DeliveryStreamName: str, Records: list[dict[str, bytes]]) -> dict[str, Any]:
        assert DeliveryStreamName == "click-events"
        self.calls.append([record["Data"] for record in Records])
        answers = [
            {"ErrorCode": "ServiceUnavailableException", "ErrorMessage": "Slow down."}
            if self.refuse(record["Data"], len(self.calls))
            else {"RecordId": "r"}
            for record in Records
        ]
        return {"FailedPutCount": sum("ErrorCode" in a for a in answers), "RequestResponses": answers}


@pytest.fixture
def one_event_a_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """Records of one event each (an event is about 300 bytes; a record holds 1,000 KiB)."""
    monkeypatch.setattr("shortener.clicks.event_stream.RECORD_BYTES", 1)


def test_events_are_packed_into_records_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shortener.clicks.event_stream.RECORD_BYTES", 3_000)
    firehose = Firehose()
    ClickEventStream("click-events", firehose, sleep=lambda _: None).put([event(n) for n in range(100)])
    [records] = firehose.calls
    assert len(records) > 1 and all(len(record) <= 3_000 for record in records)
    assert b"".join(records) == b"".join(event(n).record() for n in range(100))


def test_a_thousand_events_are_one_record_of_one_call() -> None:
    firehose = Firehose()
    assert (
        ClickEventStream("click-events", firehose, sleep=lambda _: None).put([event(n) for n in range(1000)])
        == 1
    )
    assert [len(call) for call in firehose.calls] == [1]


@pytest.mark.usefixtures("one_event_a_record")
def test_records_go_in_calls_of_at_most_500_records_each_once() -> None:
    firehose = Firehose()
    calls = ClickEventStream("click-events", firehose, sleep=lambda _: None).put(
        [event(n) for n in range(1_201)]
    )
    assert calls == 3 and [len(call) for call in firehose.calls] == [MAX_RECORDS, MAX_RECORDS, 201]
    sent = [data for call in firehose.calls for data in call]
    assert sent == [event(n).record() for n in range(1_201)]


@pytest.mark.usefixtures("one_event_a_record")
def test_a_call_stays_within_its_byte_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # (an event is about 300 bytes, so 500 of them never reach 4 MiB: the limit is made small here)
    monkeypatch.setattr("shortener.clicks.event_stream.MAX_BYTES", 1_000)
    firehose = Firehose()
    ClickEventStream("click-events", firehose, sleep=lambda _: None).put([event(n) for n in range(20)])
    assert len(firehose.calls) > 1 and all(0 < sum(map(len, call)) <= 1_000 for call in firehose.calls)
    assert [data for call in firehose.calls for data in call] == [event(n).record() for n in range(20)]


@pytest.mark.usefixtures("one_event_a_record")
def test_only_the_refused_records_are_sent_again() -> None:
    # Given a stream that refuses every other record of the first call
    firehose = Firehose(refuse=lambda data, attempt: attempt == 1 and int(data.split(b'"req-')[1][0:1]) % 2)
    pauses: list[float] = []
    # When ten events are sent
    ClickEventStream("click-events", firehose, sleep=pauses.append).put([event(n) for n in range(10)])
    # Then the second call carries only the five refused ones, after a pause
    assert [len(call) for call in firehose.calls] == [10, 5]
    assert firehose.calls[1] == [event(n).record() for n in (1, 3, 5, 7, 9)]
    assert len(pauses) == 1


@pytest.mark.usefixtures("one_event_a_record")
def test_records_refused_on_every_try_fail_the_delivery_naming_the_error() -> None:
    firehose = Firehose(refuse=lambda data, attempt: data.startswith(b'{"time"') and b"req-3" in data)
    with pytest.raises(
        EventDeliveryError, match="1 click events refused by click-events: ServiceUnavailable"
    ):
        ClickEventStream("click-events", firehose, sleep=lambda _: None).put([event(n) for n in range(5)])
    assert len(firehose.calls) == 5
