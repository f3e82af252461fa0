"""The scaler function under moto: SNS alarm events in, token rows and loop starts out."""

import json
import threading
from types import ModuleType

import boto3
import pytest

from shortener.loops.scaling import slot_token
from shortener.loops.store import LoopsStore
from tests.support.alarms import QUEUE_NAME, alarm_message, sns_event
from tests.support.loops import FUNCTION_NAME, LambdaContext, RecordingStarter

pytestmark = pytest.mark.integration

MESSAGES_PER_LOOP = 10


@pytest.fixture
def queue_url(moto: None) -> str:
    return boto3.client("sqs").create_queue(QueueName=QUEUE_NAME)["QueueUrl"]


@pytest.fixture
def starter() -> RecordingStarter:
    return RecordingStarter()


@pytest.fixture
def scaler(
    tables: dict[str, str], queue_url: str, starter: RecordingStarter, monkeypatch: pytest.MonkeyPatch
) -> ModuleType:
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "scaler")
    monkeypatch.setenv("LOOP_FUNCTIONS", json.dumps({QUEUE_NAME: FUNCTION_NAME}))
    monkeypatch.setenv("MIN_LOOPS", "1")
    monkeypatch.setenv("MAX_LOOPS", "4")
    monkeypatch.setenv("MESSAGES_PER_LOOP", str(MESSAGES_PER_LOOP))
    from functions.scaler import app

    # The container-wide Metrics may have been created before the test environment existed.
    monkeypatch.setattr(app.metrics, "namespace", "BulkShortenerTests")
    app.scaler.cache_clear()
    app.scaler().starter = starter  # moto runs no Lambda code: record the invokes instead
    return app


@pytest.fixture
def store(tables: dict[str, str]) -> LoopsStore:
    return LoopsStore(tables["TOKENS_TABLE"])


def backlog(queue_url: str, messages: int) -> None:
    sqs = boto3.client("sqs")
    for number in range(messages):
        sqs.send_message(QueueUrl=queue_url, MessageBody=f"chunk {number}")


def notify(scaler: ModuleType, old: str, new: str) -> list[dict]:
    return scaler.lambda_handler(sns_event(alarm_message(old, new)), LambdaContext("scaler"))


def tokens(store: LoopsStore, queue_url: str) -> list[str]:
    return sorted(token.token for token in store.list_for_queue(queue_url))


def test_entering_alarm_writes_a_token_and_starts_a_loop_for_it(
    scaler: ModuleType, store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given one loop and a backlog the alarm noticed
    store.claim(queue_url, slot_token(0))
    backlog(queue_url, 5)
    # When the low alarm's OK -> ALARM notification arrives
    notify(scaler, "OK", "ALARM")
    # Then a second token row exists and its loop was invoked with the row's loop id
    rows = {token.token: token for token in store.list_for_queue(queue_url)}
    assert sorted(rows) == [slot_token(0), slot_token(1)]
    [(function_name, loop)] = starter.started
    assert function_name == FUNCTION_NAME
    assert loop == rows[slot_token(1)].invocation()
    assert loop.queue_url == queue_url


def test_returning_to_ok_deletes_one_token(
    scaler: ModuleType, store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given three loops and a backlog one loop covers
    for slot in range(3):
        store.claim(queue_url, slot_token(slot))
    backlog(queue_url, 3)
    # When an ALARM -> OK notification arrives
    notify(scaler, "ALARM", "OK")
    # Then one token is gone, never the pinned one, and nothing was started
    remaining = tokens(store, queue_url)
    assert len(remaining) == 2
    assert slot_token(0) in remaining
    assert starter.started == []


def test_a_transition_that_is_not_alarm_to_ok_is_ignored(
    scaler: ModuleType, store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given three loops and an empty queue
    for slot in range(3):
        store.claim(queue_url, slot_token(slot))
    # When an INSUFFICIENT_DATA -> OK notification arrives
    [outcome] = notify(scaler, "INSUFFICIENT_DATA", "OK")
    # Then nothing changes
    assert outcome["action"] == "ignored"
    assert len(tokens(store, queue_url)) == 3
    assert starter.started == []


def test_scale_down_never_goes_below_the_minimum(
    scaler: ModuleType, store: LoopsStore, queue_url: str
) -> None:
    # Given the minimum of one loop
    store.claim(queue_url, slot_token(0))
    # When ALARM -> OK notifications keep arriving
    for _ in range(3):
        notify(scaler, "ALARM", "OK")
    # Then the one loop remains
    assert tokens(store, queue_url) == [slot_token(0)]


def test_a_persistent_backlog_gets_loops_beyond_the_one_the_alarm_added(
    scaler: ModuleType, store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given one loop and 35 messages waiting (10 per loop: four loops needed, the maximum)
    store.claim(queue_url, slot_token(0))
    backlog(queue_url, 35)
    # When a single alarm enters ALARM (no other transition will come while the backlog holds)
    notify(scaler, "OK", "ALARM")
    # Then reconcile brought the queue up to the maximum
    assert tokens(store, queue_url) == [slot_token(slot) for slot in range(4)]
    assert len(starter.started) == 3


def test_concurrent_alarms_never_take_a_queue_above_the_maximum(
    scaler: ModuleType, store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given one loop and a backlog that keeps the maximum busy
    store.claim(queue_url, slot_token(0))
    backlog(queue_url, 100)
    ready = threading.Barrier(8)
    errors: list[BaseException] = []

    def alarm() -> None:
        ready.wait()
        try:
            notify(scaler, "OK", "ALARM")
        except BaseException as exc:
            errors.append(exc)

    # When eight notifications are handled at once
    threads = [threading.Thread(target=alarm) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then the queue has exactly the maximum of four loops, each started once
    assert errors == []
    assert tokens(store, queue_url) == [slot_token(slot) for slot in range(4)]
    assert sorted(starter.tokens) == [slot_token(slot) for slot in range(1, 4)]
