"""The scaler's rules over fakes: alarm transitions step the loop count, reconcile follows the
backlog, and the count stays within the minimum and the maximum."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shortener import clock
from shortener.loops.alarms_model import AlarmNotification
from shortener.loops.healing import revive_stale_loops
from shortener.loops.scaling import LoopBounds, LoopScaler, slot_token
from shortener.loops.scaling_model import LoopTarget, QueueDepth
from tests.support.alarms import QUEUE_NAME, alarm_message
from tests.support.loops import FUNCTION_NAME, QUEUE_URL, FakeQueues, FakeTokens, RecordingStarter

TARGET = LoopTarget(queue_name=QUEUE_NAME, queue_url=QUEUE_URL, function_name=FUNCTION_NAME)


class World:
    def __init__(
        self,
        *,
        min_loops: int = 1,
        max_loops: int = 4,
        messages_per_loop: int = 10,
        loops_for_new_work: int = 1,
    ) -> None:
        self.tokens = FakeTokens()
        self.starter = RecordingStarter()
        self.queues = FakeQueues()
        self.scaler = LoopScaler(
            self.tokens,
            self.starter,
            self.queues,
            {QUEUE_NAME: FUNCTION_NAME},
            LoopBounds(min_loops, max_loops, messages_per_loop, loops_for_new_work),
            rng=random.Random(7),
        )

    def with_loops(self, count: int) -> "World":
        for slot in range(count):
            self.tokens.claim(QUEUE_URL, slot_token(slot))
        return self

    def alarm(self, old: str, new: str, **changes: str) -> None:
        self.scaler.handle_alarm(AlarmNotification.model_validate(alarm_message(old, new, **changes)))


def test_entering_alarm_adds_a_token_and_starts_its_loop() -> None:
    # Given a queue at its minimum of one loop and a backlog the minimum covers
    world = World().with_loops(1)
    world.queues.set_depth(5)
    # When the low alarm goes OK -> ALARM
    world.alarm("OK", "ALARM")
    # Then a second token exists and its loop was started with the queue's function
    assert world.tokens.tokens() == [slot_token(0), slot_token(1)]
    assert world.starter.started[0][0] == FUNCTION_NAME
    assert world.starter.tokens == [slot_token(1)]


def test_the_queue_is_resolved_with_the_account_and_region_of_the_alarm_arn() -> None:
    # Given an alarm from another account and region
    world = World().with_loops(1)
    # When it enters ALARM
    world.alarm("OK", "ALARM", region="eu-west-1", account_id="210987654321")
    # Then the queue URL was looked up by name with that owner and region
    assert world.queues.lookups == [(QUEUE_NAME, "210987654321", "eu-west-1")]


def test_insufficient_data_to_alarm_also_adds_a_loop() -> None:
    # Given a queue at its minimum and a backlog the minimum covers
    world = World().with_loops(1)
    world.queues.set_depth(5)
    # When an alarm goes INSUFFICIENT_DATA -> ALARM
    world.alarm("INSUFFICIENT_DATA", "ALARM")
    # Then a loop is added
    assert len(world.tokens.tokens()) == 2


def test_scale_up_is_capped_at_the_maximum() -> None:
    # Given a queue already at its maximum of 4 loops, with the backlog to keep them busy
    world = World(max_loops=4).with_loops(4)
    world.queues.set_depth(100)
    # When another alarm enters ALARM
    world.alarm("OK", "ALARM")
    # Then no token is added and no loop started
    assert len(world.tokens.tokens()) == 4
    assert world.starter.started == []


def test_returning_to_ok_removes_one_loop() -> None:
    # Given three loops and a backlog the minimum covers
    world = World(min_loops=1).with_loops(3)
    world.queues.set_depth(3)
    # When an alarm goes ALARM -> OK
    world.alarm("ALARM", "OK")
    # Then one loop that is not pinned is gone
    remaining = world.tokens.tokens()
    assert len(remaining) == 2
    assert slot_token(0) in remaining


def test_scale_down_never_goes_below_the_minimum() -> None:
    # Given a queue at its minimum of two loops
    world = World(min_loops=2).with_loops(2)
    # When every alarm returns to OK, one after another
    for _ in range(3):
        world.alarm("ALARM", "OK")
    # Then the two pinned loops still run
    assert world.tokens.tokens() == [slot_token(0), slot_token(1)]


def test_scale_down_keeps_what_the_remaining_backlog_needs() -> None:
    # Given three loops and a backlog of 25 messages (10 per loop: three loops needed)
    world = World(max_loops=5, messages_per_loop=10).with_loops(3)
    world.queues.set_depth(25)
    # When an alarm returns to OK
    world.alarm("ALARM", "OK")
    # Then no loop is removed
    assert len(world.tokens.tokens()) == 3


@pytest.mark.parametrize(
    ("old", "new"), [("INSUFFICIENT_DATA", "OK"), ("OK", "INSUFFICIENT_DATA"), ("ALARM", "INSUFFICIENT_DATA")]
)
def test_other_transitions_are_ignored(old: str, new: str) -> None:
    # Given extra loops and an empty queue (a reconcile would remove them)
    world = World().with_loops(3)
    # When an alarm makes a transition that is neither into ALARM nor ALARM -> OK
    world.alarm(old, new)
    # Then nothing changes and the queue is not even looked up
    assert len(world.tokens.tokens()) == 3
    assert world.starter.started == []
    assert world.queues.lookups == []


def test_an_alarm_for_an_unknown_queue_is_ignored() -> None:
    # Given a scaler that knows one queue
    world = World().with_loops(1)
    # When an alarm for another queue enters ALARM
    world.alarm("OK", "ALARM", queue_name="someone-elses-queue")
    # Then no loop is added
    assert world.tokens.tokens() == [slot_token(0)]
    assert world.starter.started == []


def test_reconcile_adds_loops_for_a_persistent_backlog() -> None:
    # Given two loops and a backlog of 35 messages that stays (10 per loop: four needed)
    world = World(max_loops=6, messages_per_loop=10).with_loops(2)
    world.queues.set_depth(30, in_flight=5)
    # When reconcile runs (no alarm transition will come while the backlog holds)
    outcome = world.scaler.reconcile(TARGET)
    # Then two loops are added
    assert outcome.loops_after == 4
    assert world.tokens.tokens() == [slot_token(slot) for slot in range(4)]
    assert sorted(world.starter.tokens) == [slot_token(2), slot_token(3)]


def test_reconcile_never_exceeds_the_maximum() -> None:
    # Given a huge backlog
    world = World(max_loops=3, messages_per_loop=1).with_loops(1)
    world.queues.set_depth(10_000)
    # When reconcile runs
    world.scaler.reconcile(TARGET)
    # Then the queue has exactly the maximum
    assert len(world.tokens.tokens()) == 3


def test_reconcile_takes_an_empty_queue_back_to_the_minimum() -> None:
    # Given four loops and a drained queue
    world = World(min_loops=2, max_loops=4).with_loops(4)
    world.queues.set_depth(0)
    # When reconcile runs
    world.scaler.reconcile(TARGET)
    # Then the pinned minimum is left
    assert world.tokens.tokens() == [slot_token(0), slot_token(1)]


def test_reconcile_keeps_loops_an_alarm_added_while_a_backlog_remains() -> None:
    # Given four loops (alarms added them) and a backlog that needs only two
    world = World(max_loops=6, messages_per_loop=10).with_loops(4)
    world.queues.set_depth(15)
    # When reconcile runs
    world.scaler.reconcile(TARGET)
    # Then it leaves them for the alarms' return to OK to remove
    assert len(world.tokens.tokens()) == 4


def test_reconcile_recreates_a_deleted_pinned_loop() -> None:
    # Given a queue whose minimum is two, one of them deleted by hand
    world = World(min_loops=2).with_loops(2)
    world.tokens.delete(QUEUE_URL, slot_token(0))
    # When reconcile runs
    world.scaler.reconcile(TARGET)
    # Then the minimum runs again, with a new loop on the deleted slot
    assert world.tokens.tokens() == [slot_token(0), slot_token(1)]
    assert world.starter.tokens == [slot_token(0)]


def test_an_alarm_step_is_followed_by_a_reconcile() -> None:
    # Given one loop and a persistent backlog of 50 messages (10 per loop)
    world = World(max_loops=10, messages_per_loop=10).with_loops(1)
    world.queues.set_depth(50)
    # When the low alarm enters ALARM
    world.alarm("OK", "ALARM")
    # Then the alarm's loop and reconcile's bring the queue to what the backlog needs
    assert len(world.tokens.tokens()) == 5


def test_a_loop_the_scaler_cannot_start_is_left_for_the_restarters_next_run() -> None:
    # Given one loop, a backlog, and a Lambda that refuses the next invoke
    world = World().with_loops(1)
    world.queues.set_depth(5)
    world.starter.failures = 1
    # When an alarm enters ALARM
    outcomes = world.scaler.handle_alarm(AlarmNotification.model_validate(alarm_message("OK", "ALARM")))
    # Then the slot is claimed but reported as failed, with no heartbeat: the restarter's next
    # run finds it stale at once, instead of a whole stale threshold later
    assert outcomes[0].failed == [slot_token(1)]
    assert world.tokens.rows[(QUEUE_URL, slot_token(1))].last_used is None
    report = revive_stale_loops(world.tokens, world.starter, {QUEUE_URL: FUNCTION_NAME}, 180)
    assert report.revived == [slot_token(1)]


def test_one_failed_start_does_not_stop_reconcile_starting_the_others() -> None:
    # Given a minimum of three, no loops at all, and a Lambda that refuses the first invoke
    world = World(min_loops=3, max_loops=5)
    world.starter.failures = 1
    # When reconcile runs
    outcome = world.scaler.reconcile(TARGET)
    # Then all three slots exist, two loops started and one is reported as failed
    assert world.tokens.tokens() == [slot_token(slot) for slot in range(3)]
    assert (len(outcome.started), len(outcome.failed)) == (2, 1)
    assert outcome.loops_after == 3


@given(
    min_loops=st.integers(1, 5),
    extra=st.integers(0, 10),
    per_loop=st.integers(1, 100),
    visible=st.integers(0, 10_000),
    in_flight=st.integers(0, 1_000),
)
def test_desired_loops_are_always_within_bounds(
    min_loops: int, extra: int, per_loop: int, visible: int, in_flight: int
) -> None:
    # Given any bounds and any backlog
    bounds = LoopBounds(min_loops, min_loops + extra, per_loop)
    depth = QueueDepth(visible=visible, in_flight=in_flight)
    # When the desired count is computed
    desired = bounds.desired(depth)
    # Then it is within the bounds, and covers the backlog unless capped
    assert bounds.min_loops <= desired <= bounds.max_loops
    assert desired == bounds.max_loops or desired * per_loop >= visible + in_flight


@given(
    actions=st.lists(
        st.one_of(
            st.tuples(
                st.just("alarm"),
                st.sampled_from(["OK", "ALARM", "INSUFFICIENT_DATA"]),
                st.sampled_from(["OK", "ALARM", "INSUFFICIENT_DATA"]),
            ),
            st.tuples(st.just("reconcile"), st.integers(0, 200), st.integers(0, 20)),
        ),
        max_size=25,
    )
)
def test_any_mix_of_alarms_and_reconciles_stays_within_bounds(actions: list[tuple]) -> None:
    # Given a queue with bounds 2..5 at its minimum
    world = World(min_loops=2, max_loops=5, messages_per_loop=10).with_loops(2)
    for kind, first, second in actions:
        # When alarms and reconciles interleave, with the backlog changing between them
        if kind == "alarm":
            if first != second:
                world.alarm(first, second)
        else:
            world.queues.set_depth(first, in_flight=second)
            world.scaler.reconcile(TARGET)
        # Then the loop count is always within the bounds, and the pinned slots are always there
        tokens = world.tokens.tokens()
        assert 2 <= len(tokens) <= 5
        assert {slot_token(0), slot_token(1)} <= set(tokens)


def test_new_work_starts_the_loops_it_needs_at_once() -> None:
    # Given a queue with no loop at all (MinLoops 0) and room for four
    world = World(min_loops=0, max_loops=4, messages_per_loop=10)
    # When a job queues 25 messages
    outcome = world.scaler.start_for_work(TARGET, 25)
    # Then three loops start right away, without an alarm or a depth read
    assert world.tokens.tokens() == [slot_token(0), slot_token(1), slot_token(2)]
    assert world.starter.tokens == world.tokens.tokens()
    assert (outcome.trigger, outcome.loops_after) == ("work", 3)


def test_new_work_is_clamped_to_the_maximum_and_never_removes_loops() -> None:
    # Given four loops at the maximum
    world = World(min_loops=0, max_loops=4, messages_per_loop=10).with_loops(4)
    # When a small job and then a huge one arrive
    world.scaler.start_for_work(TARGET, 1)
    world.scaler.start_for_work(TARGET, 100_000)
    # Then no loop was removed and none beyond the maximum started
    assert len(world.tokens.tokens()) == 4
    assert world.starter.started == []


def test_a_small_job_starts_a_loop_per_message_up_to_the_bound() -> None:
    # Given no loop running, one loop per 20 messages, and new work starting up to 4 loops
    world = World(min_loops=0, max_loops=10, messages_per_loop=20, loops_for_new_work=4)
    # When a 1,000-row job queues its 4 messages
    outcome = world.scaler.start_for_work(TARGET, 4)
    # Then each message has a loop of its own, not one loop working through all four
    assert world.tokens.tokens() == [slot_token(slot) for slot in range(4)]
    assert (outcome.trigger, outcome.loops_after) == ("work", 4)


def test_new_work_starts_no_more_loops_than_messages_nor_the_maximum() -> None:
    world = World(min_loops=0, max_loops=3, messages_per_loop=20, loops_for_new_work=4)
    # A job of two messages gets two loops
    world.scaler.start_for_work(TARGET, 2)
    assert len(world.tokens.tokens()) == 2
    # and one of ten more never goes past the maximum
    world.scaler.start_for_work(TARGET, 10)
    assert len(world.tokens.tokens()) == 3
    # A large job wants what its backlog needs, more than the bound
    assert LoopBounds(0, 50, 20, 4).for_new_work(400) == 20


def test_a_small_jobs_loops_end_with_its_backlog() -> None:
    # Given the four loops a small job started
    world = World(min_loops=0, max_loops=10, messages_per_loop=20, loops_for_new_work=4)
    world.scaler.start_for_work(TARGET, 4)
    # When its messages are still queued, reconcile keeps them; once the queue is empty, none is left
    world.queues.set_depth(3)
    world.scaler.reconcile(TARGET)
    assert len(world.tokens.tokens()) == 4
    world.queues.set_depth(0)
    world.scaler.reconcile(TARGET)
    assert world.tokens.tokens() == []


def test_with_a_minimum_of_zero_an_empty_queue_has_no_loop() -> None:
    # Given MinLoops 0 and two loops left from a drained backlog
    world = World(min_loops=0, max_loops=4).with_loops(2)
    world.queues.set_depth(0)
    # When reconcile runs
    world.scaler.reconcile(TARGET)
    # Then no loop is left: nothing runs while there is no work
    assert world.tokens.tokens() == []


class WorkArrivesMidway:
    """A job queues its messages and claims its loop right after reconcile's first read (of the
    tokens or of the depth, whichever comes first)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.arrived = False
        self.list_tokens = world.tokens.list_for_queue

    def _arrive(self) -> None:
        if not self.arrived:
            self.arrived = True
            self.world.tokens.claim(QUEUE_URL, slot_token(0))

    def tokens(self, queue_url: str) -> list:
        seen = self.list_tokens(queue_url)
        self._arrive()
        return seen

    def depth(self, queue_url: str, region: str | None = None) -> QueueDepth:
        depth = QueueDepth(visible=1 if self.arrived else 0)
        self._arrive()
        return depth


def test_reconcile_never_removes_a_loop_started_for_work_queued_during_it() -> None:
    # Given MinLoops 0, no loop, and a job that arrives while reconcile runs
    world = World(min_loops=0, max_loops=4, messages_per_loop=10)
    midway = WorkArrivesMidway(world)
    world.tokens.list_for_queue = midway.tokens  # type: ignore[method-assign]
    world.queues.depth = midway.depth  # type: ignore[method-assign]
    # When reconcile runs
    world.scaler.reconcile(TARGET)
    # Then the job's loop is still there (tokens are read before the depth, and work queues its
    # messages before it claims its loops, so a token reconcile sees has its work in the depth)
    assert world.tokens.tokens() == [slot_token(0)]


def test_no_loop_is_added_while_the_table_throttles_the_loops(caplog: pytest.LogCaptureFixture) -> None:
    # Given one loop whose heartbeat says the table throttled its writes just now, and a backlog
    world = World(max_loops=4).with_loops(1)
    row = world.tokens.list_for_queue(QUEUE_URL)[0]
    world.tokens.add(row.model_copy(update={"throttled_at": clock.epoch_seconds()}))
    world.queues.set_depth(100)
    # When the alarm enters ALARM, and reconcile runs
    outcome = world.scaler.scale_up(TARGET, "high alarm")
    reconciled = world.scaler.reconcile(TARGET)
    # Then no loop is added, and both say the table is why (in the log too)
    assert world.tokens.tokens() == [slot_token(0)]
    assert "the links table is the bottleneck" in outcome.reason
    assert "the links table is the bottleneck" in reconciled.reason
    assert "the links table is the bottleneck" in caplog.text


def test_loops_are_added_again_a_minute_after_the_last_throttle() -> None:
    world = World(max_loops=4).with_loops(1)
    row = world.tokens.list_for_queue(QUEUE_URL)[0]
    world.tokens.add(row.model_copy(update={"throttled_at": clock.epoch_seconds() - 120}))
    world.queues.set_depth(100)
    world.scaler.scale_up(TARGET, "high alarm")
    assert world.tokens.tokens() == [slot_token(0), slot_token(1)]
