"""The loop's life under moto's tokens table: it keeps going through errors, stops only when its
token is deleted, taken over by another loop id, or claimed by another delivery of its event (the
fence), and leaves its token for the restarter when its successor cannot be started."""

import threading
import uuid
from typing import Any

import boto3
import pytest

from shortener.jobs.message_model import ChunkMessage, ChunkResult
from shortener.loops.model import LoopInvocation
from shortener.loops.store import LoopsStore
from tests.support.loops import QUEUE_URL

pytestmark = pytest.mark.integration


class RecordingStarter:
    def __init__(self) -> None:
        self.started: list[LoopInvocation] = []

    def start(self, function_name: str, loop: LoopInvocation) -> None:
        self.started.append(loop)


class EmptyQueue:
    def __init__(self) -> None:
        self.receives = 0

    def receive(
        self,
        queue_url: str,
        *,
        max_messages: int = 10,
        wait_seconds: int = 20,
        visibility_timeout: int | None = None,
    ) -> list[dict[str, Any]]:
        self.receives += 1
        return []

    def delete(self, queue_url: str, receipt_handles: Any) -> int:
        return 0

    def extend_visibility(self, queue_url: str, receipt_handles: Any, timeout_seconds: int) -> int:
        return 0


class NoProcessing:
    def check_ready(self) -> None:
        pass

    def process(self, message: ChunkMessage) -> ChunkResult:
        raise AssertionError("nothing to process")


class Seconds:
    """Remaining time that runs down by one second per read: deterministic and fast."""

    def __init__(self, total: float) -> None:
        self.left = total

    def __call__(self) -> float:
        self.left -= 1
        return self.left


@pytest.fixture
def store(tables: dict[str, str]) -> LoopsStore:
    return LoopsStore(tables["TOKENS_TABLE"])


def run(store: LoopsStore, loop: LoopInvocation, starter: RecordingStarter, queue: EmptyQueue) -> Any:
    from shortener.loops.poller import LoopOptions, PollLoop
    from shortener.observability import metrics

    poll_loop = PollLoop(
        store,
        queue,
        starter,
        NoProcessing(),
        metrics=metrics,
        options=LoopOptions(reinvoke_margin_seconds=2, receive_wait_seconds=0),
        sleep=lambda _: None,
    )
    return poll_loop.run(loop, "test-poller", Seconds(20))


def test_a_loop_with_its_token_polls_until_the_margin_and_then_reinvokes_itself(store: LoopsStore) -> None:
    # Given a loop whose token exists
    loop = store.create(QUEUE_URL).invocation()
    starter, queue = RecordingStarter(), EmptyQueue()
    # When it runs
    report = run(store, loop, starter, queue)
    # Then it polled several times and started its successor, the next invocation of the loop
    assert queue.receives > 1
    assert (report.stopped, report.reinvoked) == (False, True)
    assert starter.started == [loop.successor()]
    # And its heartbeat was recorded, with the sequence number it claimed
    [token] = store.list_for_queue(QUEUE_URL)
    assert token.last_used is not None
    assert (token.seq, token.loop_id) == (loop.seq, loop.loop_id)


def test_a_deleted_token_stops_its_loop(store: LoopsStore) -> None:
    # Given a loop whose token was deleted (the scaler removed it)
    loop = store.create(QUEUE_URL).invocation()
    store.delete(QUEUE_URL, loop.token)
    starter, queue = RecordingStarter(), EmptyQueue()
    # When it runs
    report = run(store, loop, starter, queue)
    # Then it stops at its first heartbeat without receiving or starting a successor
    assert report.stopped
    assert (queue.receives, starter.started) == (0, [])


def test_a_replaced_loop_id_stops_the_old_loop_but_not_the_new_one(store: LoopsStore) -> None:
    # Given a token the restarter took over: it now names a new loop id
    old = store.create(QUEUE_URL).invocation()
    boto3.client("dynamodb").update_item(
        TableName=store.table_name,
        Key={"queue_url": {"S": QUEUE_URL}, "token": {"S": old.token}},
        UpdateExpression="SET loop_id = :new",
        ExpressionAttributeValues={":new": {"S": uuid.uuid4().hex}},
    )
    new = store.list_for_queue(QUEUE_URL)[0].invocation()
    # When both the old and the new loop run
    old_starter, new_starter = RecordingStarter(), RecordingStarter()
    old_report = run(store, old, old_starter, EmptyQueue())
    new_report = run(store, new, new_starter, EmptyQueue())
    # Then the old one stops and only the new one goes on
    assert old_report.stopped and old_starter.started == []
    assert not new_report.stopped and new_starter.started == [new.successor()]


def test_two_deliveries_of_one_event_run_one_invocation(store: LoopsStore) -> None:
    # Given a loop's event that Lambda delivers twice, to two invocations at once
    event = store.create(QUEUE_URL).invocation()
    first, second = (RecordingStarter(), EmptyQueue()), (RecordingStarter(), EmptyQueue())
    barrier = threading.Barrier(2)
    reports: dict[str, Any] = {}

    def deliver(name: str, starter: RecordingStarter, queue: EmptyQueue) -> None:
        barrier.wait()
        reports[name] = run(store, event, starter, queue)

    # When both run
    threads = [
        threading.Thread(target=deliver, args=("first", *first)),
        threading.Thread(target=deliver, args=("second", *second)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then exactly one claimed the token, polled and started the successor; the other stopped at
    # its first heartbeat without receiving anything
    claimed = [name for name, report in reports.items() if report.claimed]
    assert len(claimed) == 1
    runner, stopper = (first, second) if claimed == ["first"] else (second, first)
    assert reports[claimed[0]].reinvoked and runner[0].started == [event.successor()]
    [other] = set(reports) - set(claimed)
    assert reports[other].stopped and (stopper[1].receives, stopper[0].started) == (0, [])


def test_a_redelivered_event_after_its_invocation_finished_stops_at_once(store: LoopsStore) -> None:
    # Given an invocation that ran to its end and started its successor
    event = store.create(QUEUE_URL).invocation()
    assert run(store, event, RecordingStarter(), EmptyQueue()).reinvoked
    # When Lambda delivers (or retries) the same event later
    starter, queue = RecordingStarter(), EmptyQueue()
    report = run(store, event, starter, queue)
    # Then it stops at its first heartbeat, and the successor still claims the token
    assert report.stopped and (queue.receives, starter.started) == (0, [])
    assert run(store, event.successor(), RecordingStarter(), EmptyQueue()).claimed


def test_a_successor_that_cannot_be_started_leaves_the_token_to_the_restarter(store: LoopsStore) -> None:
    # Given a loop whose successor's invoke is refused every time
    event = store.create(QUEUE_URL).invocation()

    class Refusing(RecordingStarter):
        def start(self, function_name: str, loop: LoopInvocation) -> None:
            raise ConnectionError("Lambda refused the invoke")

    # When it reaches its end, the invocation fails
    with pytest.raises(ConnectionError):
        run(store, event, Refusing(), EmptyQueue())
    # Then its token has no heartbeat any more: stale at the restarter's next run
    [token] = store.list_for_queue(QUEUE_URL)
    assert token.last_used is None and token.seq == event.seq
