"""The restarter's rules over fakes: which heartbeats are stale, and what reviving one does."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from shortener import clock
from shortener.loops.healing import heal_and_reconcile, revive_stale_loops
from shortener.loops.model import LoopToken
from shortener.loops.scaling import LoopBounds, LoopScaler, slot_token
from shortener.loops.scaling_model import LoopTarget, QueueDepth
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


def stale_tokens(tokens: FakeTokens, count: int) -> None:
    with frozen(T0):
        for slot in range(count):
            tokens.claim(QUEUE_URL, slot_token(slot))


def test_a_revived_loop_whose_start_fails_is_revived_again_at_the_next_run() -> None:
    # Given a stale loop and a Lambda that refuses the first invoke
    tokens, starter = FakeTokens(), RecordingStarter(failures=1)
    stale_tokens(tokens, 1)
    later = T0 + timedelta(seconds=STALE_AFTER + 1)
    # When the restarter runs
    with frozen(later):
        first = revive_stale_loops(tokens, starter, FUNCTIONS, STALE_AFTER)
    # Then the failure is reported, and the token is left without a heartbeat
    assert (first.revived, first.failed) == ([], [slot_token(0)])
    assert tokens.rows[(QUEUE_URL, slot_token(0))].last_used is None
    # And the very next run (a minute later, long before another stale threshold) revives it
    with frozen(later + timedelta(seconds=60)):
        second = revive_stale_loops(tokens, starter, FUNCTIONS, STALE_AFTER)
    assert second.revived == [slot_token(0)]
    [(_, loop)] = starter.started
    assert loop == tokens.rows[(QUEUE_URL, slot_token(0))].invocation()


class FailingTakeOver(FakeTokens):
    """A tokens table whose conditional write fails (throttled, say) for one token."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing

    def take_over(self, token: LoopToken, stale_before: int) -> LoopToken | None:
        if token.token == self.failing:
            raise ConnectionError("DynamoDB is unreachable for this write")
        return super().take_over(token, stale_before)


@pytest.mark.parametrize("fault", ["start", "take-over"])
def test_one_failing_token_never_stops_the_scan_of_the_others(fault: str) -> None:
    # Given three stale loops, the first of which cannot be started (or taken over)
    tokens = FailingTakeOver(slot_token(0) if fault == "take-over" else "none")
    starter = RecordingStarter(failures=1 if fault == "start" else 0)
    stale_tokens(tokens, 3)
    # When the restarter runs
    with frozen(T0 + timedelta(seconds=STALE_AFTER + 1)):
        report = revive_stale_loops(tokens, starter, FUNCTIONS, STALE_AFTER)
    # Then the other two were revived and started, and the first is reported as failed
    assert report.failed == [slot_token(0)]
    assert sorted(report.revived) == [slot_token(1), slot_token(2)]
    assert sorted(starter.tokens) == [slot_token(1), slot_token(2)]


def test_a_restarter_run_goes_on_when_reconcile_fails() -> None:
    # Given a queue whose depth cannot be read, and a stale loop
    tokens, starter = FakeTokens(), RecordingStarter()
    stale_tokens(tokens, 1)

    class Unreadable(FakeQueues):
        def depth(self, queue_url: str, region: str | None = None) -> QueueDepth:
            raise ConnectionError("SQS is unreachable")

    scaler = LoopScaler(tokens, starter, Unreadable(), {QUEUE_NAME: FUNCTION_NAME}, LoopBounds(1, 5, 10))
    target = LoopTarget(queue_name=QUEUE_NAME, queue_url=QUEUE_URL, function_name=FUNCTION_NAME)
    # When the restarter runs
    with frozen(T0 + timedelta(seconds=STALE_AFTER + 1)):
        report = heal_and_reconcile(scaler, tokens, [target], STALE_AFTER)
    # Then the failed step is named, and the stale loop was revived all the same
    assert report.errors == [f"reconcile {QUEUE_NAME}"]
    assert report.revived == [slot_token(0)]
