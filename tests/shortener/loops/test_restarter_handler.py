"""The restarter under moto: the real tokens table's conditional writes and scan pagination."""

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import ModuleType

import boto3
import pytest

from shortener.loops.healing import revive_stale_loops
from shortener.loops.model import LoopToken
from shortener.loops.scaling import slot_token
from shortener.loops.store import LoopsStore
from tests.support.alarms import QUEUE_NAME
from tests.support.loops import FUNCTION_NAME, LambdaContext, RecordingStarter, frozen

pytestmark = pytest.mark.integration

STALE_AFTER = 180
T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
LATER = T0 + timedelta(seconds=STALE_AFTER + 1)


@pytest.fixture
def queue_url(moto: None) -> str:
    return boto3.client("sqs").create_queue(QueueName=QUEUE_NAME)["QueueUrl"]


@pytest.fixture
def store(tables: dict[str, str]) -> LoopsStore:
    return LoopsStore(tables["TOKENS_TABLE"])


@pytest.fixture
def starter() -> RecordingStarter:
    return RecordingStarter()


@pytest.fixture
def restarter(
    tables: dict[str, str], queue_url: str, starter: RecordingStarter, monkeypatch: pytest.MonkeyPatch
) -> ModuleType:
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "restarter")
    monkeypatch.setenv("LOOP_FUNCTIONS", json.dumps({QUEUE_NAME: FUNCTION_NAME}))
    monkeypatch.setenv("MIN_LOOPS", "2")
    monkeypatch.setenv("MAX_LOOPS", "4")
    monkeypatch.setenv("MESSAGES_PER_LOOP", "10")
    monkeypatch.setenv("STALE_HEARTBEAT_SECONDS", str(STALE_AFTER))
    from functions.restarter import app
    from shortener.services import restarter as services

    monkeypatch.setattr(app.metrics, "namespace", "BulkShortenerTests")
    services.tokens.cache_clear()
    services.scaler.cache_clear()
    services.targets.cache_clear()
    services.dead_letters.cache_clear()
    services.scaler().starter = starter  # moto runs no Lambda code: record the invokes instead
    return app


def run(restarter: ModuleType) -> dict:
    return restarter.lambda_handler(
        {"source": "aws.events", "detail-type": "Scheduled Event"}, LambdaContext("restarter")
    )


def test_a_scan_over_several_pages_revives_every_stale_loop(
    store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given five loops whose heartbeats stopped at T0
    with frozen(T0):
        for slot in range(5):
            store.claim(queue_url, slot_token(slot))
    scans: list[str] = []
    store.client.meta.events.register("before-call.dynamodb.Scan", lambda **_: scans.append("page"))
    # When stale loops are revived with a page size of two
    with frozen(LATER):
        report = revive_stale_loops(store, starter, {queue_url: FUNCTION_NAME}, STALE_AFTER, page_size=2)
    # Then the scan took several pages and every loop got a new loop id and was started once
    assert len(scans) >= 3
    assert sorted(report.revived) == [slot_token(slot) for slot in range(5)]
    rows = {token.token: token for token in store.list_for_queue(queue_url)}
    assert sorted(loop.token for _, loop in starter.started) == sorted(rows)
    assert all(loop == rows[loop.token].invocation() for _, loop in starter.started)


class ScanThenWait:
    """A LoopsStore whose scan is read in full, then waits until every racer has read it: both
    restarters decide on the same stale row before either writes."""

    def __init__(self, store: LoopsStore, barrier: threading.Barrier) -> None:
        self.store = store
        self.barrier = barrier

    def scan(self, page_size: int | None = None) -> Iterator[LoopToken]:
        rows = list(self.store.scan(page_size))
        self.barrier.wait()
        yield from rows

    def take_over(self, token: LoopToken, stale_before: int) -> LoopToken | None:
        return self.store.take_over(token, stale_before)


def test_two_restarters_racing_for_one_stale_token_start_one_loop(
    store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given one stale loop
    with frozen(T0):
        store.claim(queue_url, slot_token(0))
    barrier = threading.Barrier(2)
    racer = ScanThenWait(store, barrier)
    errors: list[BaseException] = []

    def restart() -> None:
        try:
            revive_stale_loops(racer, starter, {queue_url: FUNCTION_NAME}, STALE_AFTER)
        except BaseException as exc:
            errors.append(exc)

    # When two restarters that both saw it stale try to revive it at once
    with frozen(LATER):
        threads = [threading.Thread(target=restart) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    # Then exactly one loop was started, and it is the one the row names
    assert errors == []
    [(_, loop)] = starter.started
    [row] = store.list_for_queue(queue_url)
    assert loop == row.invocation()


def test_a_slow_loop_stops_once_its_token_was_taken_over(
    store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given a loop whose heartbeat went stale
    with frozen(T0):
        slow = store.claim(queue_url, slot_token(0))
    assert slow is not None
    # When the restarter takes its token over
    with frozen(LATER):
        revive_stale_loops(store, starter, {queue_url: FUNCTION_NAME}, STALE_AFTER)
        # Then the old loop's next heartbeat fails (it must stop) and the new loop's succeeds
        assert store.heartbeat(slow.invocation(), holder="old") is False
        assert store.heartbeat(starter.started[0][1], holder="new") is True


def test_the_scheduled_run_revives_stale_loops_and_keeps_the_minimum(
    restarter: ModuleType, store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given a minimum of two, and only one loop, whose heartbeat went stale at T0
    with frozen(T0):
        store.claim(queue_url, slot_token(0))
    # When the scheduled restarter runs after the threshold
    with frozen(LATER):
        report = run(restarter)
    # Then the stale loop was revived and the missing pinned loop was created, each started once
    assert report["revived"] == [slot_token(0)]
    assert sorted(starter.tokens) == [slot_token(0), slot_token(1)]
    assert sorted(token.token for token in store.list_for_queue(queue_url)) == [slot_token(0), slot_token(1)]


def test_fresh_loops_are_left_alone(
    restarter: ModuleType, store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given the minimum of two loops, both beating at T0
    with frozen(T0):
        for slot in range(2):
            store.claim(queue_url, slot_token(slot))
    # When the restarter runs before the threshold
    with frozen(T0 + timedelta(seconds=STALE_AFTER - 1)):
        report = run(restarter)
    # Then nothing is revived or started
    assert report["revived"] == []
    assert starter.started == []


def test_the_scheduled_run_adds_loops_for_a_persistent_backlog(
    restarter: ModuleType, store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given the minimum of two fresh loops and 35 messages waiting (10 per loop; maximum 4)
    for slot in range(2):
        store.claim(queue_url, slot_token(slot))
    sqs = boto3.client("sqs")
    for number in range(35):
        sqs.send_message(QueueUrl=queue_url, MessageBody=f"chunk {number}")
    # When the scheduled restarter runs
    run(restarter)
    # Then the queue is at its maximum
    assert sorted(token.token for token in store.list_for_queue(queue_url)) == [
        slot_token(s) for s in range(4)
    ]
    assert sorted(starter.tokens) == [slot_token(2), slot_token(3)]


def test_a_loop_whose_start_failed_is_revived_by_the_next_scheduled_run(
    restarter: ModuleType, store: LoopsStore, queue_url: str, starter: RecordingStarter
) -> None:
    # Given the minimum of two stale loops, and a Lambda that refuses the first invoke
    with frozen(T0):
        for slot in range(2):
            store.claim(queue_url, slot_token(slot))
    starter.failures = 1
    # When the scheduled restarter runs
    with frozen(LATER):
        first = run(restarter)
    # Then the other loop was revived, and the failed one has no heartbeat left in the table
    assert len(first["revived"]) == 1 and len(first["failed"]) == 1
    rows = {token.token: token for token in store.list_for_queue(queue_url)}
    assert rows[first["failed"][0]].last_used is None
    # And the next run, a minute later, revives it
    with frozen(LATER + timedelta(seconds=60)):
        second = run(restarter)
    assert second["revived"] == first["failed"]
    assert sorted(starter.tokens) == [slot_token(0), slot_token(1)]


FUNCTION_ARN = f"arn:aws:lambda:us-east-1:123456789012:function:{FUNCTION_NAME}"


def failure_notification(*payloads: object) -> dict:
    """The SNS event the restarter gets from the operations topic: Lambda's invocation records of
    failed loop invocations (or any other message of the topic)."""
    records = []
    for payload in payloads:
        message = (
            payload
            if isinstance(payload, str)
            else json.dumps(
                {
                    "version": "1.0",
                    "timestamp": "2026-11-22T10:00:05.000Z",
                    "requestContext": {
                        "requestId": "e4b46cbf-b738-4c1b-8880-a18cdf61200e",
                        "functionArn": f"{FUNCTION_ARN}:$LATEST",
                        "condition": "RetriesExhausted",
                        "approximateInvokeCount": 1,
                    },
                    "requestPayload": payload,
                    "responseContext": {
                        "statusCode": 200,
                        "executedVersion": "$LATEST",
                        "functionError": "Unhandled",
                    },
                    "responsePayload": {"errorType": "Runtime.ExitError", "errorMessage": "signal: killed"},
                }
            )
        )
        records.append({"EventSource": "aws:sns", "Sns": {"Message": message}})
    return {"Records": records}


def test_a_loop_whose_invocation_failed_is_revived_at_once_by_its_failure_record(
    store: LoopsStore, queue_url: str, starter: RecordingStarter, restarter: ModuleType
) -> None:
    # Given a loop whose invocation 3 claimed its token and then crashed (its heartbeat is fresh),
    # and another loop that is fine
    with frozen(T0):
        crashed = store.claim(queue_url, slot_token(0))
        fine = store.claim(queue_url, slot_token(1))
        assert crashed is not None and fine is not None
        event = crashed.invocation()
        for seq in (1, 2, 3):
            assert store.heartbeat(event.model_copy(update={"seq": seq}), holder=f"h{seq}")
    failed = event.model_copy(update={"seq": 3}).model_dump()
    # When the failure record reaches the restarter seconds later, with an alarm's message
    with frozen(T0 + timedelta(seconds=5)):
        answer = restarter.lambda_handler(
            failure_notification('{"AlarmName": "x"}', failed), LambdaContext("restarter")
        )
    # Then that loop (and only it) runs again under a new loop id, from sequence 1
    assert answer["revived"] == [slot_token(0)]
    [(function_name, loop)] = starter.started
    rows = {row.token: row for row in store.list_for_queue(queue_url)}
    assert function_name == FUNCTION_NAME
    assert loop == rows[slot_token(0)].invocation() and loop.seq == 1
    assert loop.loop_id != crashed.loop_id
    assert rows[slot_token(1)].loop_id == fine.loop_id
    # And a second delivery of the same record (SNS delivers at least once) starts nothing more
    with frozen(T0 + timedelta(seconds=6)):
        again = restarter.lambda_handler(failure_notification(failed), LambdaContext("restarter"))
    assert again["revived"] == [] and len(starter.started) == 1


def test_a_failure_record_of_a_loop_that_went_on_or_was_revived_changes_nothing(
    store: LoopsStore, queue_url: str, starter: RecordingStarter, restarter: ModuleType
) -> None:
    # Given a loop whose invocation 1 failed after its successor (2) had claimed the token
    with frozen(T0):
        token = store.claim(queue_url, slot_token(0))
        assert token is not None
        first = token.invocation()
        assert store.heartbeat(first, holder="h1")
        assert store.heartbeat(first.successor(), holder="h2")
    # When the failure record of invocation 1 arrives, twice (SNS delivers at least once)
    notification = failure_notification(first.model_dump())
    with frozen(T0 + timedelta(seconds=5)):
        answers = [restarter.lambda_handler(notification, LambdaContext("restarter")) for _ in range(2)]
    # Then the running loop is left alone
    assert [answer["revived"] for answer in answers] == [[], []]
    assert starter.started == []
    [row] = store.list_for_queue(queue_url)
    assert (row.loop_id, row.seq) == (token.loop_id, 2)
