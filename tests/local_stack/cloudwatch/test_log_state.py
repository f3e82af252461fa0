"""The access log's undelivered lines in the durable state (local_stack/cloudwatch/log_state.py):
a line is journaled when written, so a kill -9 loses none; a flush whose invocations were not over
is delivered again as the same batches, which the collector counts once."""

from collections.abc import Callable
from typing import Any

from local_stack.cloudwatch.log_state import AccessLogState
from local_stack.cloudwatch.logs import FilterPattern, LogGroup, Subscription, decode_subscription_event
from local_stack.durability.journal import Record
from shortener.clicks.counting import batch_key
from tests.local_stack.cloudwatch.test_logs import FORMAT, record
from tests.support.journal import ListSink

Delivery = tuple[str, dict[str, Any], Callable[[], None] | None]


def kept_group(state: AccessLogState) -> tuple[LogGroup, list[Delivery]]:
    delivered: list[Delivery] = []
    subscription = Subscription("clicks", FilterPattern.parse('{ $.resourcePath = "/{code}" }'), "collector")
    log_group = LogGroup(
        "/aws/apigateway/x-access",
        FORMAT,
        [subscription],
        lambda name, event, on_done=None: delivered.append((name, event, on_done)),
    )
    state.attach(log_group)
    return log_group, delivered


def replayed(records: list[Record]) -> AccessLogState:
    state = AccessLogState()
    for journaled in records:
        state.apply(journaled, {})
    state.finish_restore()
    return state


def key_of(event: dict[str, Any]) -> str:
    payload = decode_subscription_event(event)
    return batch_key(payload["logGroup"], payload["logStream"], [e["id"] for e in payload["logEvents"]])


def test_lines_written_and_not_flushed_are_delivered_after_a_restart() -> None:
    # Given three lines written (journaled) and the process killed before its flush
    state, sink = AccessLogState(), ListSink()
    state.record_into(sink)
    log_group, _ = kept_group(state)
    for n in range(3):
        log_group.write(record(request_id=f"r{n}"))
    # When the next run restores the journal and starts its log group
    again, delivered = kept_group(replayed(sink.records))
    assert again.flush() == 1
    # Then the three lines are delivered, in order
    [(_, event, _)] = delivered
    lines = decode_subscription_event(event)["logEvents"]
    assert [line["message"].split('"')[3] for line in lines] == ["r0", "r1", "r2"]


def test_a_flush_not_over_is_delivered_again_as_the_same_batch_and_a_finished_one_is_not() -> None:
    # Given one flush whose invocation finished and one whose invocation was running at the kill
    state, sink = AccessLogState(), ListSink()
    state.record_into(sink)
    log_group, delivered = kept_group(state)
    log_group.write(record(request_id="done"))
    log_group.flush()
    finished = delivered[-1][2]
    assert finished is not None
    finished()
    log_group.write(record(request_id="running"))
    log_group.flush()
    running_key = key_of(delivered[-1][1])
    # When the next run restores the journal
    restored = replayed(sink.records)
    assert restored.finish_restore() == 1
    _, again = kept_group(restored)
    # Then only the running flush is delivered again, with the same batch key (counted once)
    assert [key_of(event) for _, event, _ in again] == [running_key]
    # And once its invocation is over, nothing is left
    on_done = again[0][2]
    assert on_done is not None
    on_done()
    assert restored.finish_restore() == 0


def test_a_snapshot_keeps_lines_and_flushes() -> None:
    # Given a line flushed and not yet delivered, and a line not yet flushed
    state = AccessLogState()
    log_group, _ = kept_group(state)
    log_group.write(record(request_id="a"))
    log_group.flush()
    log_group.write(record(request_id="b"))
    # When the state is written as a snapshot and read back
    restored = replayed([journaled for batch in state.dump() for journaled in batch])
    # Then both lines are pending
    assert restored.finish_restore() == 2
