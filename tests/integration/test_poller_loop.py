"""The loop's life under moto's tokens table: it keeps going through errors, and stops only when its
token is deleted or taken over by another loop id."""

import uuid
from typing import Any

import boto3
import pytest

from shortener.dal.loops import LoopsStore
from shortener.models.jobs import ChunkMessage, ChunkResult
from shortener.models.loops import LoopInvocation
from tests.support.loops import QUEUE_URL


class RecordingStarter:
    def __init__(self) -> None:
        self.started: list[LoopInvocation] = []

    def start(self, function_name: str, loop: LoopInvocation) -> None:
        self.started.append(loop)


class EmptyQueue:
    def __init__(self) -> None:
        self.receives = 0

    def receive(
        self, queue_url: str, *, max_messages: int = 10, wait_seconds: int = 20
    ) -> list[dict[str, Any]]:
        self.receives += 1
        return []

    def delete(self, queue_url: str, receipt_handles: Any) -> int:
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
    from shortener.logic.poller import LoopOptions, PollLoop
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
    # Then it polled several times and started its successor with the same invocation
    assert queue.receives > 1
    assert (report.stopped, report.reinvoked) == (False, True)
    assert starter.started == [loop]
    # And its heartbeat was recorded
    [token] = store.list_for_queue(QUEUE_URL)
    assert token.last_used is not None


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
    assert not new_report.stopped and new_starter.started == [new]
