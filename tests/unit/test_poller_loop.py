"""The loop with fakes: errors never end it, long work refreshes the heartbeat, metrics are flushed
while it runs, and partial failures delete only what succeeded."""

import json
from collections.abc import Sequence
from typing import Any

import pytest

from shortener.logic.poller import LoopOptions, PollLoop, queue_arn, to_lambda_records
from shortener.models.exceptions import CodeKeyChangedError
from shortener.models.jobs import ChunkMessage, ChunkResult
from shortener.models.loops import LoopInvocation

LOOP = LoopInvocation(
    queue_url="https://sqs.eu-west-1.amazonaws.com/123456789012/bulk", token="t1", loop_id="l1"
)


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
    def __init__(self, alive: Sequence[bool | Exception] = ()) -> None:
        self.answers = list(alive)
        self.calls = 0

    def heartbeat(self, loop: LoopInvocation) -> bool:
        self.calls += 1
        answer = self.answers.pop(0) if self.answers else True
        if isinstance(answer, Exception):
            raise answer
        return answer


class Queue:
    def __init__(self, batches: Sequence[list[dict[str, Any]] | Exception]) -> None:
        self.batches = list(batches)
        self.deleted: list[str] = []

    def receive(
        self, queue_url: str, *, max_messages: int = 10, wait_seconds: int = 20
    ) -> list[dict[str, Any]]:
        batch = self.batches.pop(0) if self.batches else []
        if isinstance(batch, Exception):
            raise batch
        return batch

    def delete(self, queue_url: str, receipt_handles: Sequence[str]) -> int:
        self.deleted.extend(receipt_handles)
        return 0


class Processor:
    def __init__(
        self, clock: Clock, seconds_per_message: float = 0, fail_chunks: frozenset[int] = frozenset()
    ) -> None:
        self.clock = clock
        self.seconds_per_message = seconds_per_message
        self.fail_chunks = fail_chunks
        self.processed: list[int] = []
        self.not_ready: CodeKeyChangedError | None = None

    def check_ready(self) -> None:
        if self.not_ready is not None:
            raise self.not_ready

    def process(self, message: ChunkMessage) -> ChunkResult:
        self.clock.now += self.seconds_per_message
        if message.chunk in self.fail_chunks:
            raise RuntimeError("DynamoDB is having a bad day")
        self.processed.append(message.chunk)
        return ChunkResult(succeeded=len(message.rows), failed=0, counted=True)


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


def message(chunk: int) -> dict[str, Any]:
    body = ChunkMessage(
        job_id="j" * 32, chunk=chunk, first_row=1 + chunk * 2, rows=[("https://a.example/", "")] * 2
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
    heartbeats: Heartbeats,
    queue: Queue,
    processor: Processor,
    metrics: Metrics | None = None,
    **options: Any,
) -> tuple[PollLoop, Starter, Metrics]:
    starter, sink = Starter(), metrics or Metrics()
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
    clock = Clock(budget=10)
    queue = Queue([[message(0), message(1), message(2)]])
    processor = Processor(clock, fail_chunks=frozenset({1}))
    loop, starter, metrics = build(clock, Heartbeats(), queue, processor)
    # When the loop runs
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then the others were processed and deleted; the failed one stays for redelivery
    assert processor.processed == [0, 2]
    assert queue.deleted == ["r0", "r2"]
    assert (report.messages, report.failed_messages) == (3, 1)
    assert ("MessagesFailed", 1) in metrics.added
    assert starter.started == [LOOP]


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
    assert starter.started == [LOOP]


def test_long_work_refreshes_the_heartbeat_and_a_lost_token_stops_after_the_batch() -> None:
    # Given messages that take 20 s each, a heartbeat due every 30 s, and a token that is deleted
    # while the batch is being processed
    clock = Clock(budget=500)
    heartbeats = Heartbeats([True, True, False])
    queue = Queue([[message(n) for n in range(5)]])
    processor = Processor(clock, seconds_per_message=20)
    loop, starter, _ = build(clock, heartbeats, queue, processor, heartbeat_interval_seconds=30)
    # When the loop runs
    report = loop.run(LOOP, "poller", clock.remaining)
    # Then the heartbeat was refreshed during the batch, the batch was finished and deleted, and
    # the loop stopped without a successor
    assert heartbeats.calls == 3
    assert queue.deleted == [f"r{n}" for n in range(5)]
    assert report.stopped
    assert starter.started == []


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


def test_a_failed_reinvoke_is_retried() -> None:
    clock = Clock(budget=7)

    class FlakyStarter(Starter):
        def start(self, function_name: str, loop: LoopInvocation) -> None:
            if not self.started:
                self.started.append(loop)
                raise ConnectionError("Lambda throttled the invoke")
            self.started.append(loop)

    flaky = FlakyStarter()
    loop = PollLoop(
        Heartbeats(),
        Queue([]),
        flaky,
        Processor(clock),
        metrics=Metrics(),
        options=LoopOptions(reinvoke_margin_seconds=5, receive_wait_seconds=0),
        monotonic=clock.monotonic,
        sleep=clock.sleep,
    )
    assert loop.run(LOOP, "poller", clock.remaining).reinvoked
    assert len(flaky.started) == 2


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

    sample = json.loads((Path(__file__).parents[1] / "support" / "sqs_receive_message.json").read_text())[
        "Records"
    ][0]
    [record] = to_lambda_records([message(0)], LOOP.queue_url)
    assert set(record) == set(sample)
    assert record["eventSourceARN"] == "arn:aws:sqs:eu-west-1:123456789012:bulk"
    assert queue_arn("http://127.0.0.1:4566/000000000000/q")[0].endswith(":000000000000:q")
