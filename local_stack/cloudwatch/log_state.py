"""The subscribed log groups' lines not yet delivered (the access log's, and the lines functions
write to their own subscribed groups), kept as durably as the rest of the state.

API Gateway writes a request's access log line as it answers it; CloudWatch Logs keeps the line and
delivers it to the log group's subscription filters "at least once" ("Using CloudWatch Logs
subscription filters",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/Subscriptions.html). Locally the lines
waited in memory for the next flush, so a ``kill -9`` lost the clicks answered in the last moment
(330 of 4,000). Here each line is journaled before its request is answered (the gateway writes the
line before it sends the answer); each flush is journaled with its stream and the ids of its lines,
and its end once every batch's invocation is over. After a restart a flush not yet over is
delivered again as the same batches (same stream, same lines: the collector's batch key, a digest
of both, counts them once), and lines never flushed join the next flush.

Records: ``["logs", "line", group, id, timestamp, message]``, ``["logs", "flushed", flush id,
group, stream, [line ids]]``, ``["logs", "delivered", flush id]``; in snapshots
``["logs", "lines", group, [[id, timestamp, message], ...]]`` and
``["logs", "flushes", [[flush id, group, stream, [line ids]], ...]]``."""

import functools
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from local_stack.cloudwatch.logs import LogEvent, LogGroup
from local_stack.durability.journal import Record
from local_stack.durability.service import Sink, renamed

SERVICE = "logs"
_SNAPSHOT_BATCH = 1000


class AccessLogState:
    """Every log group's lines whose delivery is not over."""

    service = SERVICE
    kind = "log lines"

    def __init__(self) -> None:
        self._lines: dict[str, dict[str, LogEvent]] = {}  # group -> id -> line
        self._flushes: dict[str, tuple[str, str, list[str]]] = {}  # flush id -> group, stream, ids
        self._lock = threading.Lock()
        self._sink: Sink | None = None

    def record_into(self, sink: Sink | None) -> None:
        self._sink = sink

    # ---- the log group's side (LineKeeper) -----------------------------------------------------

    def line_written(self, group: str, event: LogEvent) -> None:
        with self._lock:
            self._lines.setdefault(group, {})[event.id] = event
        self._journal([SERVICE, "line", group, event.id, event.timestamp, event.message])

    def flushed(self, group: str, stream: str, events: list[LogEvent]) -> Callable[[], None]:
        flush_id = uuid.uuid4().hex
        ids = [event.id for event in events]
        with self._lock:
            self._flushes[flush_id] = (group, stream, ids)
        self._journal([SERVICE, "flushed", flush_id, group, stream, ids])
        return functools.partial(self._delivered, flush_id)

    def attach(self, log_group: LogGroup) -> int:
        """Keep ``log_group``'s lines from now on, and deliver what the previous run left: its
        flushes not yet over, again as they were, and its lines never flushed with the next flush.
        How many lines were left."""
        with self._lock:
            lines = dict(self._lines.get(log_group.name, {}))
            flushes = [
                (flush_id, stream, ids)
                for flush_id, (group, stream, ids) in self._flushes.items()
                if group == log_group.name
            ]
        log_group.keeper = self
        flushed: set[str] = set()
        for flush_id, stream, ids in flushes:
            events = [lines[line_id] for line_id in ids if line_id in lines]
            flushed.update(ids)
            log_group.deliver(events, stream, functools.partial(self._delivered, flush_id))
        log_group.requeue(sorted((event for event in lines.values() if event.id not in flushed), key=_order))
        return len(lines)

    def _delivered(self, flush_id: str) -> None:
        with self._lock:
            flush = self._flushes.pop(flush_id, None)
            if flush is None:
                return
            group, _, ids = flush
            lines = self._lines.get(group, {})
            for line_id in ids:
                lines.pop(line_id, None)
        self._journal([SERVICE, "delivered", flush_id])

    def _journal(self, record: Record) -> None:
        sink = self._sink
        if sink is not None:
            sink.append([record])

    # ---- the durable state's side (ServiceState) -----------------------------------------------

    def end_request(self) -> None:
        """Journaled as they happen, not per request."""

    def dump(self) -> Iterator[list[Record]]:
        with self._lock:
            lines = {group: list(events.values()) for group, events in self._lines.items()}
            flushes = [[flush_id, *flush] for flush_id, flush in self._flushes.items()]
        for group, events in lines.items():
            for start in range(0, len(events), _SNAPSHOT_BATCH):
                part = events[start : start + _SNAPSHOT_BATCH]
                yield [[SERVICE, "lines", group, [[e.id, e.timestamp, e.message] for e in part]]]
        for start in range(0, len(flushes), _SNAPSHOT_BATCH):
            yield [[SERVICE, "flushes", flushes[start : start + _SNAPSHOT_BATCH]]]

    def after_snapshot(self) -> None:
        """Nothing lives outside the snapshot."""

    def apply(self, record: Record, renames: Mapping[str, str]) -> None:
        operation: Any = record[1]
        with self._lock:
            if operation == "line":
                _, _, group, line_id, timestamp, message = record
                self._lines.setdefault(renamed(group, renames), {})[line_id] = LogEvent(
                    line_id, timestamp, message
                )
            elif operation == "lines":
                lines = self._lines.setdefault(renamed(record[2], renames), {})
                for line_id, timestamp, message in record[3]:
                    lines[line_id] = LogEvent(line_id, timestamp, message)
            elif operation == "flushed":
                _, _, flush_id, group, stream, ids = record
                self._flushes[flush_id] = (renamed(group, renames), stream, list(ids))
            elif operation == "flushes":
                for flush_id, group, stream, ids in record[2]:
                    self._flushes[flush_id] = (renamed(group, renames), stream, list(ids))
            elif operation == "delivered":
                flush = self._flushes.pop(record[2], None)
                if flush is not None:
                    lines = self._lines.get(flush[0], {})
                    for line_id in flush[2]:
                        lines.pop(line_id, None)

    def finish_restore(self) -> int:
        with self._lock:
            return sum(len(lines) for lines in self._lines.values())


def _order(event: LogEvent) -> str:
    return event.id
