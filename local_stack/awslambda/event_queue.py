"""Lambda's queue of asynchronous events, kept as durably as the rest of the state.

Lambda takes an ``Invoke`` with ``InvocationType: Event`` into its own queue, answers 202, and
keeps the event until an invocation of it succeeds or its retries are spent ("How Lambda handles
errors and retries with asynchronous invocation",
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html); an invocation
whose execution environment dies is retried. The local stack's runtime keeps its queue in memory,
so a ``kill -9`` used to lose every event whose invocation was running: a batch change or a QR-label
ZIP under way then waited for someone to read its status. Here each event is journaled before the
202 leaves, its end journaled when the invocation is over, and the events still pending after a
restart are delivered again, as Lambda would have retried them. Every function takes a second
delivery for what it is (the leases and sequence numbers that make Lambda's at-least-once delivery
safe on AWS).

Records: ``["lambda", "event", id, function name, event]``, ``["lambda", "done", id]``, and in
snapshots ``["lambda", "events", [[id, function name, event], ...]]``."""

import functools
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from local_stack.durability.journal import Record
from local_stack.durability.service import Sink, renamed

SERVICE = "lambda"
_SNAPSHOT_BATCH = 500

# Function name, event, what to call once its invocation is over.
Deliver = Callable[[str, Any, Callable[[], None]], object]


class AsyncEventQueue:
    """The asynchronous events whose invocation is not over yet."""

    service = SERVICE
    kind = "events"

    def __init__(self) -> None:
        self._pending: dict[str, tuple[str, Any]] = {}
        self._lock = threading.Lock()
        self._sink: Sink | None = None

    def record_into(self, sink: Sink | None) -> None:
        self._sink = sink

    def event_accepted(self, function: str, event: Any) -> Callable[[], None]:
        """Keep an event taken into the queue (journaled when this returns); what to call once its
        invocation is over."""
        event_id = uuid.uuid4().hex
        with self._lock:
            self._pending[event_id] = (function, event)
        sink = self._sink
        if sink is not None:
            sink.append([[SERVICE, "event", event_id, function, event]])
        return functools.partial(self._done, event_id)

    def redeliver(self, deliver: Deliver) -> int:
        """Deliver again every event restored as pending; how many. Called once after the
        restore, with the functions running."""
        with self._lock:
            pending = list(self._pending.items())
        for event_id, (function, event) in pending:
            deliver(function, event, functools.partial(self._done, event_id))
        return len(pending)

    def _done(self, event_id: str) -> None:
        with self._lock:
            if self._pending.pop(event_id, None) is None:
                return
        sink = self._sink
        if sink is not None:
            sink.append([[SERVICE, "done", event_id]])

    def end_request(self) -> None:
        """Journaled as they happen, not per request."""

    def dump(self) -> Iterator[list[Record]]:
        with self._lock:
            pending = [[event_id, function, event] for event_id, (function, event) in self._pending.items()]
        for start in range(0, len(pending), _SNAPSHOT_BATCH):
            yield [[SERVICE, "events", pending[start : start + _SNAPSHOT_BATCH]]]

    def after_snapshot(self) -> None:
        """Nothing lives outside the snapshot."""

    def apply(self, record: Record, renames: Mapping[str, str]) -> None:
        operation = record[1]
        with self._lock:
            if operation == "event":
                _, _, event_id, function, event = record
                self._pending[event_id] = (function, renamed(event, renames))
            elif operation == "done":
                self._pending.pop(record[2], None)
            elif operation == "events":
                for event_id, function, event in record[2]:
                    self._pending[event_id] = (function, renamed(event, renames))

    def finish_restore(self) -> int:
        with self._lock:
            return len(self._pending)
