"""Sending click events to the event store's delivery stream (data access): Firehose
``PutRecordBatch``, at most 500 records and 4 MiB a call (Firehose quotas,
https://docs.aws.amazon.com/firehose/latest/dev/limits.html). A call can succeed while some of its
records fail (``FailedPutCount``, an ``ErrorCode`` per record, "PutRecordBatch" in the Firehose API
reference): those are sent again, with backoff, and if they still fail the whole delivery fails, so
that the collector's invocation fails and its batch is delivered again (the counters count it once;
the events' queries count each request once, docs/clicks.md).

Events are packed: one record holds many events, one JSON document per line, up to RECORD_BYTES
(Firehose's record format conversion reads several JSON documents in one record: "Converting input
record format", Firehose developer guide). Firehose bills each record rounded up to 5 KB, so a
record per event (about 300 bytes) would be billed 17 times its size."""

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from shortener import aws

MAX_RECORDS = 500
MAX_BYTES = 4 * 1024 * 1024
# A record is at most 1,000 KiB; the events packed into one stay under it.
RECORD_BYTES = 1000 * 1024 - 4096
_ATTEMPTS = 5


class Recorded(Protocol):
    """An event as its stream takes it (shortener.clicks.events: ClickEvent, AnswerEvent)."""

    def record(self) -> bytes: ...


class EventDeliveryError(Exception):
    """Records the stream still refused after every retry."""


class ClickEventStream:
    """A Firehose delivery stream of the event store: the click events', or the answers'."""

    def __init__(
        self, stream_name: str, client: Any = None, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.stream_name = stream_name
        self._client = client
        self._sleep = sleep

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = aws.firehose()
        return self._client

    def put(self, events: Sequence[Recorded]) -> int:
        """Send the events, packed into records; the calls it took. EventDeliveryError when records
        keep failing."""
        calls = 0
        for chunk in _chunks(_packed([event.record() for event in events])):
            pending = chunk
            pauses = aws.backoff_delays(_ATTEMPTS, base=0.1, cap=2.0)
            while True:
                calls += 1
                answer = self.client.put_record_batch(
                    DeliveryStreamName=self.stream_name, Records=[{"Data": data} for data in pending]
                )
                if not answer.get("FailedPutCount"):
                    break
                failed = [
                    (data, result)
                    for data, result in zip(pending, answer["RequestResponses"], strict=True)
                    if result.get("ErrorCode")
                ]
                pause = next(pauses, None)
                if pause is None:
                    code, message = failed[0][1].get("ErrorCode"), failed[0][1].get("ErrorMessage")
                    raise EventDeliveryError(
                        f"{len(failed)} click events refused by {self.stream_name}: {code}: {message}"
                    )
                pending = [data for data, _ in failed]
                self._sleep(pause)
        return calls


def _packed(lines: list[bytes]) -> list[bytes]:
    """The events' lines joined into records of at most RECORD_BYTES."""
    records: list[bytes] = []
    current: list[bytes] = []
    size = 0
    for line in lines:
        if current and size + len(line) > RECORD_BYTES:
            records.append(b"".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line)
    if current:
        records.append(b"".join(current))
    return records


def _chunks(records: list[bytes]) -> Iterator[list[bytes]]:
    """The records in calls of at most MAX_RECORDS records and MAX_BYTES bytes."""
    chunk: list[bytes] = []
    size = 0
    for data in records:
        if chunk and (len(chunk) == MAX_RECORDS or size + len(data) > MAX_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(data)
        size += len(data)
    if chunk:
        yield chunk
