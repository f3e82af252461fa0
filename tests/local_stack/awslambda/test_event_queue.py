"""Lambda's queue of asynchronous events as part of the durable state: an event is journaled when
Lambda takes it, its end when its invocation is over, and what was pending is delivered again after
a restart."""

from collections.abc import Callable
from typing import Any

from local_stack.awslambda.event_queue import AsyncEventQueue
from local_stack.durability.journal import Record
from tests.support.journal import ListSink


def replayed(records: list[Record]) -> AsyncEventQueue:
    queue = AsyncEventQueue()
    for record in records:
        queue.apply(record, {})
    queue.finish_restore()
    return queue


def test_an_event_whose_invocation_did_not_finish_is_delivered_again_after_a_restart() -> None:
    # Given two events taken into the queue, one of which finished
    queue, sink = AsyncEventQueue(), ListSink()
    queue.record_into(sink)
    finished = queue.event_accepted("WorkerFunction", {"task": "results", "job_id": "a"})
    queue.event_accepted("WorkerFunction", {"task": "batch", "batch_id": "b"})
    finished()
    # When the journal is replayed into a new run's queue
    restored = replayed(sink.records)
    delivered: list[tuple[str, Any, Callable[[], None]]] = []
    # Then only the unfinished one is delivered again
    assert (
        restored.redeliver(lambda function, event, on_done: delivered.append((function, event, on_done))) == 1
    )
    assert [(function, event) for function, event, _ in delivered] == [
        ("WorkerFunction", {"task": "batch", "batch_id": "b"})
    ]
    # And once that delivery is over, a further restart delivers nothing
    again = ListSink()
    restored.record_into(again)
    delivered[0][2]()
    assert replayed(sink.records + again.records).finish_restore() == 0


def test_a_snapshot_keeps_the_pending_events() -> None:
    # Given a pending event
    queue = AsyncEventQueue()
    queue.event_accepted("PollerFunction", {"token": "t"})
    # When the state is written as a snapshot and read back
    records = [record for batch in queue.dump() for record in batch]
    # Then the event is pending in the new run
    assert replayed(records).finish_restore() == 1


def test_an_event_is_journaled_before_the_invoke_is_answered() -> None:
    # Given a queue recording into the journal
    queue, sink = AsyncEventQueue(), ListSink()
    queue.record_into(sink)
    # When an event is taken
    queue.event_accepted("WorkerFunction", {"n": 1})
    # Then its record is already in the journal
    assert [record[:2] + record[3:] for record in sink.records] == [
        ["lambda", "event", "WorkerFunction", {"n": 1}]
    ]
