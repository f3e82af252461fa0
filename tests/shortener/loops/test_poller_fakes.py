"""The loop with fakes: errors never end it, long work refreshes the heartbeat and the messages'
visibility, metrics are flushed while it runs, partial failures delete only what succeeded, and
the fence lets one invocation run per token."""

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from shortener.exceptions import CodeKeyChangedError
from shortener.jobs.message_model import ChunkMessage, ChunkResult
from shortener.loops.model import LoopInvocation
from shortener.loops.poller import LoopOptions, PollLoop, last_attempt_error, queue_arn, to_lambda_records
from tests.support.loops import FakeTokens

LOOP = LoopInvocation(
    queue_url="https://sqs.eu-west-1.amazonaws.com/123456789012/bulk", token="t1", loop_id="l1", seq=1
)
# Long enough for any wait on another thread on a loaded machine; only reached when a test fails.
DEADLINE_SECONDS = 30


class Clock:
    """Monotonic time that the fakes advance; remaining time is what is left of a budget."""

    def __init__(self, budget: float) -> None:
        self.now = 0.0
        self.budget = budget

    def monotonic(self) -> float:
        return self.now

    def remaining(self) -> float:
        self.now += 0.5  # every look at the clock costs a little time, so loops always end
        return self.budget - self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Heartbeats:
    """Scripted heartbeat answers; ``beaten`` is set once ``wait_for`` calls were made."""

    def __init__(self, alive: Sequence[bool | Exception] = (), wait_for: int = 0) -> None:
        self.answers = list(alive)
        self.calls = 0
        self.released: list[tuple[LoopInvocation, str]] = []
        self.wait_for = wait_for
        self.beaten = threading.Event()

    def heartbeat(self, loop: LoopInvocation, holder: str) -> bool:
        self.calls += 1
        if self.calls >= self.wait_for:
            self.beaten.set()
        answer = self.answers.pop(0) if self.answers else True
        if isinstance(answer, Exception):
            raise answer
        return answer

    def release(self, loop: LoopInvocation, holder: str) -> bool:
        self.released.append((loop, holder))
        return True


class Queue:
    def __init__(self, batches: Sequence[list[dict[str, Any]] | Exception]) -> None:
        self.batches = list(batches)
        self.deleted: list[str] = []
        self.receives = 0
        self.asked: list[int] = []
        self.holds: list[int | None] = []
        self.extended: list[tuple[list[str], int]] = []
        self.extended_event = threading.Condition()

    def receive(
        self,
        queue_url: str,
        *,
        max_messages: int = 10,
        wait_seconds: int = 20,
        visibility_timeout: int | None = None,
    ) -> list[dict[str, Any]]:
        self.receives += 1
        self.asked.append(max_messages)
        self.holds.append(visibility_timeout)
        batch = self.batches.pop(0) if self.batches else []
        if isinstance(batch, Exception):
            raise batch
        # As SQS: at most max_messages; the rest stay in the queue.
        if batch[max_messages:]:
            self.batches.insert(0, batch[max_messages:])
        return batch[:max_messages]

    def delete(self, queue_url: str, receipt_handles: Sequence[str]) -> int:
        self.deleted.extend(receipt_handles)
        return 0

    def extend_visibility(self, queue_url: str, receipt_handles: Sequence[str], timeout_seconds: int) -> int:
        with self.extended_event:
            self.extended.append((list(receipt_handles), timeout_seconds))
            self.extended_event.notify_all()
        return 0

    def wait_for_extensions(self, count: int, including: str) -> None:
        """Block until ``count`` extensions included ``including`` (the keeper runs on its own)."""
        with self.extended_event:
            assert self.extended_event.wait_for(
                lambda: sum(including in handles for handles, _ in self.extended) >= count, DEADLINE_SECONDS
            ), f"no {count} visibility extensions of {including}"


class Processor:
    def __init__(
        self,
        clock: Clock,
        seconds_per_message: float = 0,
        fail_chunks: frozenset[int] = frozenset(),
        during: dict[int, Callable[[], None]] | None = None,
    ) -> None:
        self.clock = clock
        self.seconds_per_message = seconds_per_message
        self.fail_chunks = fail_chunks
        self.during = during or {}  # chunk -> what happens (elsewhere) while it is processed
        self.processed: list[int] = []
        self.not_ready: CodeKeyChangedError | None = None
        self.attempts: dict[int, int] = {}
        # chunk -> how many of its attempts raise before one succeeds (a transient fault)
        self.fail_times: dict[int, int] = {}
        self.failed_rows: list[tuple[int, str]] = []
        self.fail_error: Exception | None = None

    def check_ready(self) -> None:
        if self.not_ready is not None:
            raise self.not_ready

    def process(self, message: ChunkMessage) -> ChunkResult:
        self.clock.now += self.seconds_per_message
        attempt = self.attempts[message.chunk] = self.attempts.get(message.chunk, 0) + 1
        if message.chunk in self.during:
            self.during[message.chunk]()
        if message.chunk in self.fail_chunks or attempt <= self.fail_times.get(message.chunk, 0):
            raise RuntimeError("DynamoDB is having a bad day")
        self.processed.append(message.chunk)
        return ChunkResult(succeeded=len(message.rows), failed=0, counted=True)

    def fail(self, message: ChunkMessage, error: str) -> ChunkResult:
        if self.fail_error is not None:
            raise self.fail_error
        self.failed_rows.extend((message.first_row + n, error) for n in range(len(message.rows)))
        return ChunkResult(succeeded=0, failed=len(message.rows), counted=True)


class Starter:
    def __init__(self) -> None:
        self.started: list[LoopInvocation] = []

    def start(self, function_name: str, loop: LoopInvocation) -> None:
        self.started.append(loop)


class Metrics:
    def __init__(self) -> None:
        self.added: list[tuple[str, float]] = []
        self.flushes = 0

    def add_metric(self, name: str, unit: Any, value: float, resolution: Any = 60) -> None:
        self.added.append((name, value))

    def flush_metrics(self, raise_on_empty_metrics: bool = False) -> None:
        self.flushes += 1


def message(chunk: int, *, last_attempt: bool = False) -> dict[str, Any]:
    body = ChunkMessage(
        job_id="j" * 32,
        chunk=chunk,
        first_row=1 + chunk * 2,
        rows=[("https://a.example/", "")] * 2,
        last_attempt=last_attempt,
    )
    return {
        "MessageId": f"m{chunk}",
        "ReceiptHandle": f"r{chunk}",
        "Body": body.model_dump_json(),
        "Attributes": {"ApproximateReceiveCount": "1"},
        "MD5OfBody": "x",
    }


def build(
    clock: Clock,
    heartbeats: Heartbeats | FakeTokens,
    queue: Queue,
    processor: Processor,
    metrics: Metrics | None = None,
    starter: Starter | None = None,
    **options: Any,
) -> tuple[PollLoop, Starter, Metrics]:
    starter, sink = starter or Starter(), metrics or Metrics()
    loop = PollLoop(
        heartbeats,
        queue,
        starter,
        processor,
        metrics=sink,
        options=LoopOptions(reinvoke_margin_seconds=5, receive_wait_seconds=0, **options),
        monotonic=clock.monotonic,
        sleep=clock.sleep,
    )
    return loop, starter, sink


def test_partial_failure_deletes_only_the_messages_that_succeeded() -> None:
    # Given a batch of three messages whose middle one fails
    clock = Clock(budget=20)
    queue = Queue([[message(0), message(1), message(2)]])
    processor = Processor(clock, fail_chunks=frozenset({1}))
    loop, starter, metrics = build(clock, Heartbeats(), queue, processor, messages_per_receive=10)
    # When the loop runs
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then the others were processed and deleted; the failed one, tried three times, is given
    # back for redelivery after a short pause
    assert processor.processed == [0, 2]
    assert processor.attempts[1] == 3
    assert queue.deleted == ["r0", "r2"]
    assert (["r1"], 10) in queue.extended
    assert (report.messages, report.failed_messages, report.retries) == (3, 1, 2)
    assert ("MessagesFailed", 1) in metrics.added
    assert starter.started == [LOOP.successor()]


@pytest.mark.parametrize(
    "fault",
    [
        {"queue": [ConnectionError("SQS unreachable")]},
        {"heartbeats": [RuntimeError("DynamoDB throttled"), True]},
    ],
)
def test_an_exception_in_an_iteration_never_ends_the_loop(fault: dict[str, Any]) -> None:
    # Given a receive or a heartbeat that raises once
    clock = Clock(budget=12)
    queue = Queue([*fault.get("queue", []), [message(0)]])
    processor = Processor(clock)
    loop, starter, metrics = build(clock, Heartbeats(fault.get("heartbeats", [])), queue, processor)
    # When the loop runs
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then the error was counted, the loop went on to process the message, and re-invoked itself
    assert report.errors == 1
    assert ("LoopErrors", 1) in metrics.added
    assert processor.processed == [0]
    assert starter.started == [LOOP.successor()]


def test_a_slow_batch_refreshes_the_heartbeat_and_a_lost_token_stops_the_loop_after_it() -> None:
    # Given a batch whose first message is slow (it lasts until the keeper has beaten twice more),
    # and a token that is taken away during the batch (the third heartbeat fails)
    clock = Clock(budget=500)
    heartbeats = Heartbeats([True, True, False], wait_for=3)
    queue = Queue([[message(n) for n in range(3)]])
    processor = Processor(
        clock, during={0: lambda: heartbeats.beaten.wait(DEADLINE_SECONDS) or pytest.fail("no heartbeats")}
    )
    loop, starter, _ = build(
        clock, heartbeats, queue, processor, heartbeat_interval_seconds=0.01, messages_per_receive=10
    )
    # When the loop runs
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then the heartbeat was refreshed while the message was processed, the batch was finished
    # and deleted, and the loop stopped without a successor
    assert heartbeats.calls >= 3
    assert queue.deleted == ["r0", "r1", "r2"]
    assert report.stopped
    assert starter.started == []


def test_a_slow_batch_extends_the_visibility_of_the_messages_it_still_holds() -> None:
    # Given a queue whose visibility timeout is 3 s, and a batch whose second message fails and
    # whose third is slow: it lasts until its visibility was extended twice
    clock = Clock(budget=500)
    queue = Queue([[message(0), message(1), message(2)]])
    processor = Processor(
        clock, fail_chunks=frozenset({1}), during={2: lambda: queue.wait_for_extensions(2, including="r2")}
    )
    loop, _, _ = build(
        clock,
        Heartbeats(),
        queue,
        processor,
        heartbeat_interval_seconds=30,
        visibility_timeout_seconds=3,
        messages_per_receive=10,
        retry_after_seconds=2,
    )
    # When the loop runs
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then the batch's messages got another full timeout every second (a third of it), while
    # processed, the failed one no longer once it failed (it comes back for a retry), and the
    # processed ones kept until deleted
    assert report.visibility_extensions >= 2
    *kept, given_back = queue.extended
    assert given_back == (["r1"], 2)
    assert all(timeout == 3 for _, timeout in kept)
    last = kept[-1][0]
    assert "r1" not in last
    assert {"r0", "r2"} <= set(last)
    assert queue.deleted == ["r0", "r2"]


def test_a_batch_is_only_as_big_as_fits_before_the_reinvoke_margin() -> None:
    # Given messages that take 25 s each, and an invocation with 300 s (margin 5 s)
    clock = Clock(budget=300)
    queue = Queue([[message(chunk) for chunk in range(10)], [message(chunk) for chunk in range(10, 30)]])
    processor = Processor(clock, seconds_per_message=25)
    loop, starter, _ = build(clock, Heartbeats(), queue, processor, messages_per_receive=10)
    # When the loop runs
    loop.run(LOOP, "poller", clock.remaining)
    # Then after the first batch taught it how long a message takes, it receives only what fits in
    # the time left, and starts its successor before the invocation's time runs out
    assert queue.asked[0] == 10
    assert all(asked < 10 for asked in queue.asked[1:]), queue.asked
    assert clock.now <= clock.budget
    assert starter.started == [LOOP.successor()]
    assert processor.processed == list(range(len(processor.processed)))
    assert len(processor.processed) >= 10


def test_messages_that_got_slower_than_their_batch_was_sized_for_are_handed_back_unstarted() -> None:
    # Given an invocation of 100 s (margin 5 s) whose first batch teaches it that a message takes
    # 2 s, and whose second batch's messages take 20 s each (the machine got busy)
    clock = Clock(budget=100)
    queue = Queue([[message(chunk) for chunk in range(10)], [message(chunk) for chunk in range(10, 20)]])
    processor = Processor(clock, seconds_per_message=2)

    def busy() -> None:
        processor.seconds_per_message = 20

    processor.during[9] = busy
    loop, starter, metrics = build(clock, Heartbeats(), queue, processor, messages_per_receive=10)
    # When the loop runs
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then it starts no message that would not end before the margin: the rest of the batch is made
    # visible again at once (not left to its visibility timeout), neither deleted nor a failure,
    # and the successor is started before the invocation's time runs out
    assert clock.now <= clock.budget - 5, clock.now
    assert starter.started == [LOOP.successor()]
    given_back = {f"r{chunk}" for chunk in range(10, 20)} - {f"r{chunk}" for chunk in processor.processed}
    assert given_back and (sorted(given_back), 0) in [(sorted(h), t) for h, t in queue.extended]
    assert not given_back & set(queue.deleted)
    assert report.handed_back == len(given_back) and report.failed_messages == 0
    assert ("MessagesFailed", len(given_back)) not in metrics.added


def test_metrics_are_flushed_periodically_while_the_loop_runs() -> None:
    # Given a loop that runs for 100 s, flushing every 10 s, with a message every iteration
    clock = Clock(budget=100)
    queue = Queue([[message(n)] for n in range(60)])
    loop, _, metrics = build(
        clock, Heartbeats(), queue, Processor(clock, seconds_per_message=2), metrics_flush_seconds=10
    )
    # When it runs
    loop.run(LOOP, "poller", clock.remaining)
    # Then metrics were flushed many times, not only at the end
    assert metrics.flushes >= 5


class FlakyStarter(Starter):
    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.attempts = 0

    def start(self, function_name: str, loop: LoopInvocation) -> None:
        self.attempts += 1
        if self.failures:
            self.failures -= 1
            raise ConnectionError("Lambda throttled the invoke")
        self.started.append(loop)


def test_a_failed_reinvoke_is_retried() -> None:
    # Given a starter whose first invoke fails
    clock = Clock(budget=7)
    flaky = FlakyStarter(failures=1)
    loop, _, _ = build(clock, Heartbeats(), Queue([]), Processor(clock), starter=flaky)
    # When the loop runs to its end
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then the successor was started on the second attempt
    assert report.reinvoked
    assert (flaky.attempts, flaky.started) == (2, [LOOP.successor()])


def test_a_reinvoke_that_keeps_failing_releases_the_token_and_fails_the_invocation() -> None:
    # Given a starter that refuses every invoke
    clock = Clock(budget=7)
    heartbeats = Heartbeats()
    loop, _, _ = build(clock, heartbeats, Queue([]), Processor(clock), starter=FlakyStarter(failures=99))
    # When the loop runs to its end
    with pytest.raises(ConnectionError):
        loop.run(LOOP, "poller", clock.remaining)
    # Then it gave its token up (so the restarter's next run revives it) before failing, which
    # sends the event to the poller's on-failure destination
    [(released, _)] = heartbeats.released
    assert released == LOOP


# ---- fencing: one invocation per token ---------------------------------------------------------


def fenced_world() -> tuple[FakeTokens, LoopInvocation]:
    """A token just claimed by the scaler, and the event of its first invocation."""
    tokens = FakeTokens()
    token = tokens.claim(LOOP.queue_url, "slot-000")
    assert token is not None
    return tokens, token.invocation()


def test_a_duplicated_delivery_stops_at_its_first_heartbeat_while_the_first_runs() -> None:
    # Given a loop's first invocation, running a batch, when Lambda delivers the same event again
    tokens, event = fenced_world()
    clock = Clock(budget=30)
    duplicate_queue = Queue([[message(9)]])
    duplicate_starter = Starter()
    duplicate_reports = []

    def deliver_again() -> None:
        duplicate, _, _ = build(
            Clock(budget=30), tokens, duplicate_queue, Processor(clock), starter=duplicate_starter
        )
        duplicate_reports.append(duplicate.run(event, "poller", Clock(budget=30).remaining))

    processor = Processor(clock, during={0: deliver_again})
    first, starter, _ = build(clock, tokens, Queue([[message(0)]]), processor)
    # When both run
    report = first.run(event, "poller", clock.remaining)
    # Then the duplicate stopped at its first heartbeat: it received nothing and started nothing
    [duplicate_report] = duplicate_reports
    assert duplicate_report.stopped and not duplicate_report.claimed
    assert (duplicate_queue.receives, duplicate_starter.started) == (0, [])
    # And the first invocation went on and started the next one, which carries the next number
    assert report.claimed and report.reinvoked and not report.stopped
    assert processor.processed == [0]
    assert starter.started == [event.successor()]
    assert event.successor().seq == event.seq + 1


@pytest.mark.parametrize("late", ["the event just run", "the event before it"])
def test_a_late_delivery_of_an_earlier_event_stops_and_leaves_the_loop_running(late: str) -> None:
    # Given invocations 1 and 2 of a loop that ran one after the other; 3 is started
    tokens, first = fenced_world()
    clock = Clock(budget=8)
    for event in (first, first.successor()):
        loop, _, _ = build(clock, tokens, Queue([]), Processor(clock))
        clock.now = 0
        assert loop.run(event, "poller", clock.remaining).reinvoked
    third = first.successor().successor()
    # When Lambda delivers invocation 2's event again (or retries invocation 1's)
    stale_event = first.successor() if late == "the event just run" else first
    clock.now = 0
    late_loop, late_starter, _ = build(clock, tokens, Queue([]), Processor(clock))
    late_report = late_loop.run(stale_event, "poller", clock.remaining)
    # Then it stops at once, and invocation 3 still claims the token
    assert late_report.stopped and late_starter.started == []
    clock.now = 0
    loop, _, _ = build(clock, tokens, Queue([]), Processor(clock))
    assert loop.run(third, "poller", clock.remaining).claimed


def test_a_restarter_take_over_stops_the_old_invocation_after_its_batch() -> None:
    # Given a loop that is slow in a batch (it lasts until the keeper's heartbeat has failed), and
    # a restarter that took its token over and started a new loop meanwhile
    tokens, event = fenced_world()
    clock = Clock(budget=500)
    taken_over: list[LoopInvocation] = []
    beats_after_take_over = threading.Event()

    def take_over() -> None:
        [row] = tokens.list_for_queue(event.queue_url)
        revived = tokens.take_over(row, stale_before=row.last_used + 1 if row.last_used else 0)
        assert revived is not None
        taken_over.append(revived.invocation())
        heartbeat = tokens.heartbeat

        def observed(loop: LoopInvocation, holder: str) -> bool:
            answer = heartbeat(loop, holder)
            if loop == event and not answer:
                beats_after_take_over.set()
            return answer

        tokens.heartbeat = observed  # type: ignore[method-assign]
        assert beats_after_take_over.wait(DEADLINE_SECONDS), "the old loop never beat again"

    processor = Processor(clock, during={0: take_over})
    old, old_starter, _ = build(
        clock, tokens, Queue([[message(0)]]), processor, heartbeat_interval_seconds=0.01
    )
    # When the old invocation goes on
    report = old.run(event, "poller", clock.remaining)
    # Then it finished the batch and stopped without a successor
    assert report.stopped and processor.processed == [0] and old_starter.started == []
    # And the new loop holds the token
    new_clock = Clock(budget=8)
    new, _, _ = build(new_clock, tokens, Queue([]), Processor(new_clock))
    assert new.run(taken_over[0], "poller", new_clock.remaining).claimed


def test_a_changed_code_key_leaves_the_rows_queued_and_pauses_the_loop() -> None:
    # Given a loop whose processor may not write codes (the code key changed)
    clock = Clock(budget=10)
    queue = Queue([[message(0)]])
    processor = Processor(clock)
    processor.not_ready = CodeKeyChangedError("The code key changed.")
    heartbeats = Heartbeats()
    loop, starter, metrics = build(clock, heartbeats, queue, processor)
    # When it runs
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then it received nothing (the rows stay queued, their receive counts untouched), beat no
    # heart (the restarter retries once the token is stale) and started no successor
    assert report.paused
    assert queue.batches == [[message(0)]]
    assert heartbeats.calls == 0
    assert starter.started == []
    assert ("LoopsPaused", 1) in metrics.added


def test_received_messages_take_the_shape_of_lambda_sqs_records() -> None:
    from pathlib import Path

    sample = json.loads((Path(__file__).parents[2] / "support" / "sqs_receive_message.json").read_text())[
        "Records"
    ][0]
    [record] = to_lambda_records([message(0)], LOOP.queue_url)
    assert set(record) == set(sample)
    assert record["eventSourceARN"] == "arn:aws:sqs:eu-west-1:123456789012:bulk"
    assert queue_arn("http://127.0.0.1:4566/000000000000/q")[0].endswith(":000000000000:q")


class Crash(BaseException):
    """The execution environment dies (crash, timeout, out of memory): nothing after it runs."""


def test_a_crash_costs_a_receive_only_to_the_message_being_processed() -> None:
    # Given three queued messages, and an invocation that dies while it processes the first
    clock = Clock(budget=100)
    queue = Queue([[message(0), message(1), message(2)]])

    def crash() -> None:
        raise Crash

    processor = Processor(clock, during={0: crash})
    loop, _, _ = build(clock, Heartbeats(), queue, processor)
    # When the loop runs until it dies
    with pytest.raises(Crash):
        loop.run(LOOP, "poller", clock.remaining)
    # Then it had received only the message it was processing: the other two were never received,
    # so their receive counts (and the road to the dead-letter queue) are untouched; and that one
    # is hidden for 30 s only (hold_seconds), so it is back soon, not after the queue's 120 s
    assert queue.asked == [1]
    assert queue.holds == [30]
    assert [[m["MessageId"] for m in batch] for batch in queue.batches] == [["m1", "m2"]]


def test_a_transient_failure_is_tried_again_within_the_same_receive() -> None:
    # Given a message whose first two attempts raise (a throttle burst), then one that succeeds
    clock = Clock(budget=30)
    queue = Queue([[message(0)], [message(1)]])
    processor = Processor(clock)
    processor.fail_times[0] = 2
    loop, _, metrics = build(clock, Heartbeats(), queue, processor)
    # When the loop runs
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then it succeeded on its third attempt of one receive and was deleted: no redelivery, no failure
    assert processor.attempts[0] == 3
    assert queue.deleted == ["r0", "r1"]
    assert (report.retries, report.failed_messages) == (2, 0)
    assert not any(name == "MessagesFailed" for name, _ in metrics.added)


def test_a_message_on_its_last_attempt_that_fails_again_has_its_rows_failed_with_that_reason() -> None:
    # Given a message the restarter sent back from the dead-letter queue, which fails every attempt
    clock = Clock(budget=30)
    queue = Queue([[message(3, last_attempt=True)]])
    processor = Processor(clock, fail_chunks=frozenset({3}))
    loop, _, metrics = build(clock, Heartbeats(), queue, processor)
    # When the loop runs
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then after its attempts its rows are failed with the reason of this attempt, and it is deleted
    reason = last_attempt_error(RuntimeError("DynamoDB is having a bad day"))
    assert reason.startswith("processing_failed: ") and "RuntimeError" in reason
    assert processor.attempts[3] == 3
    assert processor.failed_rows == [(7, reason), (8, reason)]
    assert queue.deleted == ["r3"]
    assert (report.last_attempts_failed, report.failed_messages) == (1, 0)
    assert ("LastAttemptsFailed", 1) in metrics.added


def test_a_last_attempt_whose_rows_cannot_be_failed_stays_queued() -> None:
    # Given a message on its last attempt that fails, and a jobs table that refuses the failure too
    clock = Clock(budget=30)
    queue = Queue([[message(3, last_attempt=True)]])
    processor = Processor(clock, fail_chunks=frozenset({3}))
    processor.fail_error = ConnectionError("DynamoDB unreachable")
    loop, _, _ = build(clock, Heartbeats(), queue, processor)
    # When the loop runs
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then the message is not deleted (it comes back, and in the end the restarter fails its rows)
    assert queue.deleted == []
    assert (["r3"], 10) in queue.extended
    assert report.failed_messages == 1
