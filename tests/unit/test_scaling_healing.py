"""The restarter's rules over fakes: which heartbeats are stale, and what reviving one does."""

import random
from datetime import UTC, datetime, timedelta

from shortener import clock
from shortener.logic.healing import heal_and_reconcile, revive_stale_loops
from shortener.logic.scaling import LoopBounds, LoopScaler, slot_token
from shortener.models.loops import LoopToken
from shortener.models.scaling import LoopTarget
from tests.support.alarms import QUEUE_NAME
from tests.support.loops import FUNCTION_NAME, QUEUE_URL, FakeQueues, FakeTokens, RecordingStarter, frozen

STALE_AFTER = 180
T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
FUNCTIONS = {QUEUE_URL: FUNCTION_NAME}


def token(name: str, last_used: int | None, loop_id: str = "old-loop") -> LoopToken:
    return LoopToken(queue_url=QUEUE_URL, token=name, loop_id=loop_id, started_at=0, last_used=last_used)


def test_a_loop_whose_heartbeat_is_older_than_the_threshold_is_revived() -> None:
    # Given a loop that last beat at T0
    tokens, starter = FakeTokens(), RecordingStarter()
    with frozen(T0):
        tokens.add(token("slot-000", clock.epoch_seconds()))
    # When the restarter runs one second after the threshold
    with frozen(T0 + timedelta(seconds=STALE_AFTER + 1)):
        report = revive_stale_loops(tokens, starter, FUNCTIONS, STALE_AFTER)
        now = clock.epoch_seconds()
    # Then the token has a new loop id and a fresh heartbeat, and that loop was started
    row = tokens.rows[(QUEUE_URL, "slot-000")]
    assert report.revived == ["slot-000"]
    assert row.loop_id != "old-loop"
    assert row.last_used == now
    assert starter.started == [(FUNCTION_NAME, row.invocation())]


def test_a_heartbeat_exactly_at_the_threshold_is_not_stale() -> None:
    # Given a loop that last beat at T0
    tokens, starter = FakeTokens(), RecordingStarter()
    with frozen(T0):
        tokens.add(token("slot-000", clock.epoch_seconds()))
    # When the restarter runs exactly the threshold later
    with frozen(T0 + timedelta(seconds=STALE_AFTER)):
        report = revive_stale_loops(tokens, starter, FUNCTIONS, STALE_AFTER)
    # Then the loop is left alone
    assert report.revived == []
    assert tokens.rows[(QUEUE_URL, "slot-000")].loop_id == "old-loop"
    assert starter.started == []


def test_a_token_that_never_beat_is_revived() -> None:
    # Given a token with no last_used at all (its loop never started)
    tokens, starter = FakeTokens(), RecordingStarter()
    tokens.add(token("slot-000", None))
    # When the restarter runs
    with frozen(T0):
        report = revive_stale_loops(tokens, starter, FUNCTIONS, STALE_AFTER)
    # Then it is revived
    assert report.revived == ["slot-000"]
    assert len(starter.started) == 1


def test_a_stale_token_of_an_unconfigured_queue_is_left_alone() -> None:
    # Given a stale token on a queue no function drains
    tokens, starter = FakeTokens(), RecordingStarter()
    tokens.add(token("slot-000", 0).model_copy(update={"queue_url": "https://sqs/other"}))
    # When the restarter runs
    with frozen(T0):
        report = revive_stale_loops(tokens, starter, FUNCTIONS, STALE_AFTER)
    # Then it is reported as skipped and nothing is started
    assert report.skipped == ["slot-000"]
    assert starter.started == []


def test_a_restarter_run_brings_an_empty_table_up_to_the_minimum() -> None:
    # Given no loops at all and an empty queue, with a minimum of two
    tokens, starter = FakeTokens(), RecordingStarter()
    scaler = LoopScaler(
        tokens, starter, FakeQueues(), {QUEUE_NAME: FUNCTION_NAME}, LoopBounds(2, 5, 10), rng=random.Random(1)
    )
    target = LoopTarget(queue_name=QUEUE_NAME, queue_url=QUEUE_URL, function_name=FUNCTION_NAME)
    # When the restarter runs
    with frozen(T0):
        report = heal_and_reconcile(scaler, tokens, [target], STALE_AFTER)
    # Then two loops were created and started, and none needed reviving
    assert tokens.tokens() == [slot_token(0), slot_token(1)]
    assert sorted(starter.tokens) == [slot_token(0), slot_token(1)]
    assert report.revived == []
