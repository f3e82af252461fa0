"""One loop: a poller invocation that drains its queue and then re-invokes itself.

Each iteration: heartbeat (stop when the token is gone, names another loop id, or was claimed by
another invocation), long-poll receive, process the batch with partial failures, delete what
succeeded. While a batch is processed, a keeper thread refreshes the heartbeat and extends the
visibility timeout of its messages, so a slow batch is neither taken for a dead loop nor delivered
again. The loop polls while enough of the invocation remains, then starts its successor (the next
sequence number) asynchronously. An exception anywhere in an iteration is logged and counted, never
the end of the loop. A received message is started only while it still fits in the invocation
(timed by the slowest so far); the rest of its batch is handed back at once.

A fault that is not a message's own costs it nothing (docs/faults.md): the loop receives one
message at a time (``messages_per_receive``), so when the invocation dies (a crash, a timeout, out
of memory) only the message being processed loses a receive, never nine others it had not started.
A message whose processing raises is tried again at once, a few times (``attempts_per_receive``;
the work is idempotent), before it is given back, visible again after ``retry_after_seconds``. A
message the restarter sent back from the dead-letter queue for its last attempt
(``ChunkMessage.last_attempt``) that fails again has its rows failed, with that attempt's reason.

Fencing (see shortener.loops.model): the first heartbeat of an invocation claims its sequence
number on the token with a nonce of its own; Lambda may deliver an asynchronous event twice, and
the second delivery finds the number claimed by another holder and stops there, before receiving
anything. So exactly one invocation runs per token.
"""

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shortener.exceptions import CodeKeyChangedError
from shortener.jobs.message_model import ChunkMessage, ChunkResult
from shortener.loops.model import LoopInvocation

_MAX_MESSAGES = 10
_REINVOKE_ATTEMPTS = 4
# The first pause between two attempts of a message within one receive (doubled each time).
_ATTEMPT_PAUSE_SECONDS = 0.5


class Heartbeats(Protocol):
    """``shortener.loops.store.LoopsStore``."""

    def heartbeat(self, loop: LoopInvocation, holder: str) -> bool: ...
    def release(self, loop: LoopInvocation, holder: str) -> bool: ...


class QueueReader(Protocol):
    """``shortener.loops.queue.BulkQueue``."""

    def receive(
        self,
        queue_url: str,
        *,
        max_messages: int = 10,
        wait_seconds: int = 20,
        visibility_timeout: int | None = None,
    ) -> list[dict[str, Any]]: ...
    def delete(self, queue_url: str, receipt_handles: Sequence[str]) -> int: ...
    def extend_visibility(
        self, queue_url: str, receipt_handles: Sequence[str], timeout_seconds: int
    ) -> int: ...


class LoopStarting(Protocol):
    """``shortener.loops.store.LoopStarter``."""

    def start(self, function_name: str, loop: LoopInvocation) -> None: ...


class MessageProcessor(Protocol):
    """``shortener.jobs.bulk.ChunkProcessor``."""

    def check_ready(self) -> None: ...
    def process(self, message: ChunkMessage) -> ChunkResult: ...
    def fail(self, message: ChunkMessage, error: str) -> ChunkResult: ...


class MetricsSink(Protocol):
    """The Powertools ``Metrics`` of the container."""

    def add_metric(self, name: str, unit: MetricUnit | str, value: float, resolution: Any = ...) -> None: ...
    def flush_metrics(self, raise_on_empty_metrics: bool = False) -> None: ...


@dataclass(frozen=True, slots=True)
class LoopOptions:
    """The loop's timing (from PollerSettings)."""

    reinvoke_margin_seconds: float = 30
    receive_wait_seconds: int = 20
    heartbeat_interval_seconds: float = 30
    # The queue's visibility timeout: a batch still being processed gets this much more time,
    # well before the last extension runs out.
    visibility_timeout_seconds: int = 120
    metrics_flush_seconds: float = 60
    # After an error, wait this long before the next iteration, so a persistent fault does not spin.
    error_pause_seconds: float = 1
    # Messages taken per receive: one, so a dying invocation costs no message it had not started.
    messages_per_receive: int = 1
    # Attempts of a failing message before it is given back (each receive counts towards the
    # queue's maxReceiveCount, the attempts within one do not).
    attempts_per_receive: int = 3
    # A message given back after failing is visible again this many seconds later.
    retry_after_seconds: int = 10
    # A received message is hidden this long (at most the queue's visibility timeout), renewed
    # every third of it while it is processed: when the invocation dies with it, it is back
    # within this time instead of the queue's whole visibility timeout.
    hold_seconds: int = 30


@dataclass(slots=True)
class LoopReport:
    """What one invocation of the loop did."""

    stopped: bool = False  # the token was deleted, taken over or claimed by another delivery
    paused: bool = False  # rows must not be processed now (the code key changed): no successor
    reinvoked: bool = False
    claimed: bool = False  # the first heartbeat claimed this invocation's sequence number
    polls: int = 0
    messages: int = 0
    failed_messages: int = 0
    handed_back: int = 0  # received, not started: no time was left for them in this invocation
    retries: int = 0  # attempts of a message after its first within one receive
    last_attempts_failed: int = 0  # messages on their last attempt whose rows were failed
    errors: int = 0
    visibility_extensions: int = 0
    _pending_metrics: bool = field(default=False, repr=False)


class _NoTimeLeft(Exception):
    """A received message not started: it would not finish before the re-invoke margin."""


@dataclass(slots=True)
class _Pace:
    """How long the slowest message of this invocation took, and so how many fit in a time."""

    slowest: float = 0.0

    def took(self, seconds: float) -> None:
        self.slowest = max(self.slowest, seconds)

    def fits(self, seconds: float) -> int:
        if seconds <= 0:
            return 0
        return int(seconds // self.slowest) if self.slowest else _MAX_MESSAGES


class PollLoop:
    """Runs one invocation of a loop (see the module docstring)."""

    def __init__(
        self,
        heartbeats: Heartbeats,
        queue: QueueReader,
        starter: LoopStarting,
        processor: MessageProcessor,
        *,
        metrics: MetricsSink,
        options: LoopOptions,
        logger: logging.Logger | Any = None,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._heartbeats = heartbeats
        self._queue = queue
        self._starter = starter
        self._processor = processor
        self._metrics = metrics
        self._options = options
        # The container's Powertools Logger in Lambda (logic does not import observability).
        self._log = logger or logging.getLogger(__name__)
        self._monotonic = monotonic
        self._sleep = sleep

    @property
    def _hold(self) -> int:
        return max(1, min(self._options.hold_seconds, self._options.visibility_timeout_seconds))

    def run(
        self, loop: LoopInvocation, function_name: str, remaining_seconds: Callable[[], float]
    ) -> LoopReport:
        """Poll while more than the re-invoke margin remains (taking no more messages at once than
        fit in the time left), then start the successor; stop without one when the heartbeat says
        this invocation is not (or no longer) the loop's."""
        report = LoopReport()
        try:
            self._processor.check_ready()
        except CodeKeyChangedError as exc:
            return self._pause(loop, report, exc)
        # This invocation's own mark on the token: a second delivery of the same event draws
        # another, so the two can never both hold the sequence number.
        holder = uuid.uuid4().hex
        margin = self._options.reinvoke_margin_seconds
        last_flush = self._monotonic()
        # The slowest a message has been in this invocation: a batch is only as big as fits in the
        # time left before the margin, and a message of it is only started while it still fits
        # (Lambda would end the invocation inside the batch: its batch comes back after the
        # visibility timeout, and its successor is started only by the restarter, minutes later).
        pace = _Pace()

        def time_for_messages() -> float:
            return remaining_seconds() - margin

        while (budget := time_for_messages()) > 0:
            try:
                fits = pace.fits(budget)
                if fits < 1:
                    break
                if not self._heartbeats.heartbeat(loop, holder):
                    return self._stop(loop, report)
                report.claimed = True
                wait = int(max(0, min(self._options.receive_wait_seconds, time_for_messages())))
                most = max(1, min(_MAX_MESSAGES, self._options.messages_per_receive, fits))
                messages = self._queue.receive(
                    loop.queue_url, max_messages=most, wait_seconds=wait, visibility_timeout=self._hold
                )
                report.polls += 1
                # The phases of a job's timeline (`make bench ARGS="idle --timeline"`).
                self._log.debug("Received", extra={"token": loop.token, "messages": len(messages)})
                if messages and not self._process(
                    loop, holder, messages, report, pace=pace, time_for_messages=time_for_messages
                ):
                    return self._stop(loop, report)
            except Exception:
                # Nothing in one iteration may end the loop: the messages come back after their
                # visibility timeout and the next iteration tries again.
                self._log.exception("Loop iteration failed; continuing", extra={"token": loop.token})
                report.errors += 1
                self._count(report, "LoopErrors", 1)
                self._sleep(min(self._options.error_pause_seconds, max(0.0, time_for_messages())))
            if self._monotonic() - last_flush >= self._options.metrics_flush_seconds:
                self._flush(report)
                last_flush = self._monotonic()
        self._flush(report)
        self._reinvoke(loop, holder, function_name)
        report.reinvoked = True
        return report

    def _process(
        self,
        loop: LoopInvocation,
        holder: str,
        messages: list[dict[str, Any]],
        report: LoopReport,
        *,
        pace: _Pace,
        time_for_messages: Callable[[], float],
    ) -> bool:
        """Process one received batch; delete what succeeded, and hand back at once the messages
        there was no time left to start (when messages got slower than the batch was sized for).
        False when a heartbeat refreshed during the work said this loop must stop (the batch is
        still finished first: its work is idempotent, and abandoning it would only delay its rows)."""
        records = to_lambda_records(messages, loop.queue_url)
        handed_back: list[str] = []
        keeper = BatchKeeper(
            beat=lambda: self._heartbeats.heartbeat(loop, holder),
            extend=lambda handles: self._queue.extend_visibility(loop.queue_url, handles, self._hold),
            receipt_handles=[record["receiptHandle"] for record in records],
            interval=min(self._options.heartbeat_interval_seconds, self._hold / 3),
            log=self._log,
        )

        def handle(record: SQSRecord) -> ChunkResult:
            if pace.fits(time_for_messages()) < 1:
                keeper.release(record.receipt_handle)
                handed_back.append(record.receipt_handle)
                raise _NoTimeLeft(record.message_id)
            started = self._monotonic()
            self._log.debug("Message started", extra={"token": loop.token, "message_id": record.message_id})
            receives = record.attributes.approximate_receive_count
            if receives and int(receives) > 1:
                # A loop died with it, it failed before, a batch outlived its visibility timeout, a
                # loop with no time left handed it back, or two receives took it at once.
                self._log.warning(
                    "Message delivered again", extra={"message_id": record.message_id, "receives": receives}
                )
            try:
                result = self._attempt(
                    ChunkMessage.model_validate_json(record.body), record, report, pace, time_for_messages
                )
            except Exception:
                # Let it come back after a short pause; BatchProcessor keeps the failure for the
                # batch response, and the log says why.
                keeper.release(record.receipt_handle)
                self._log.exception(
                    "Message failed; it will be redelivered",
                    extra={"message_id": record.message_id, "receives": receives},
                )
                raise
            finally:
                pace.took(self._monotonic() - started)
            self._record(report, result)
            self._log.debug(
                "Message processed",
                extra={
                    "token": loop.token,
                    "message_id": record.message_id,
                    "seconds": round(self._monotonic() - started, 3),
                },
            )
            return result

        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        with keeper, processor(records=records, handler=handle):
            processor.process()
        report.visibility_extensions += keeper.extensions
        failed_ids = {failure["itemIdentifier"] for failure in processor.response()["batchItemFailures"]}
        succeeded = [record["receiptHandle"] for record in records if record["messageId"] not in failed_ids]
        report.messages += len(records) - len(handed_back)
        report.failed_messages += len(failed_ids) - len(handed_back)
        if len(failed_ids) > len(handed_back):
            self._count(report, "MessagesFailed", len(failed_ids) - len(handed_back))
            failed = [
                record["receiptHandle"]
                for record in records
                if record["messageId"] in failed_ids and record["receiptHandle"] not in handed_back
            ]
            # (Never later than the visibility timeout would have made it visible.)
            retry_after = min(self._options.retry_after_seconds, self._hold)
            self._give_back(loop, failed, retry_after)
        if handed_back:
            # Visible again now, for another loop or this one's successor (a receive more on each).
            self._queue.extend_visibility(loop.queue_url, handed_back, 0)
            report.handed_back += len(handed_back)
            self._log.info(
                "No time left in this invocation for some received messages; handed back",
                extra={"count": len(handed_back), "seconds_per_message": round(pace.slowest, 3)},
            )
        if succeeded:
            undeleted = self._queue.delete(loop.queue_url, succeeded)
            if undeleted:
                # They are redelivered and recognised as done; only costs a little work.
                self._log.warning("Some processed messages could not be deleted", extra={"count": undeleted})
        return keeper.alive

    def _attempt(
        self,
        message: ChunkMessage,
        record: SQSRecord,
        report: LoopReport,
        pace: _Pace,
        time_for_messages: Callable[[], float],
    ) -> ChunkResult:
        """Process one message, trying again at once while it raises (up to
        ``attempts_per_receive``, and only while another attempt still fits in the invocation).
        A message on its last attempt that still fails has its rows failed with this reason."""
        attempt = 1
        while True:
            try:
                return self._processor.process(message)
            except Exception as error:
                more = attempt < self._options.attempts_per_receive and pace.fits(time_for_messages()) >= 1
                if more:
                    self._log.warning(
                        "Message failed; trying it again",
                        extra={"message_id": record.message_id, "attempt": attempt, "error": repr(error)},
                    )
                    report.retries += 1
                    self._sleep(_ATTEMPT_PAUSE_SECONDS * 2 ** (attempt - 1))
                    attempt += 1
                    continue
                if not message.last_attempt:
                    raise
                self._log.exception(
                    "A message failed on its last attempt; its rows are failed",
                    extra={"message_id": record.message_id, "job_id": message.job_id, "chunk": message.chunk},
                )
                result = self._processor.fail(message, last_attempt_error(error))
                report.last_attempts_failed += 1
                self._count(report, "LastAttemptsFailed", 1)
                return result

    def _give_back(self, loop: LoopInvocation, receipt_handles: list[str], after_seconds: int) -> None:
        try:
            self._queue.extend_visibility(loop.queue_url, receipt_handles, after_seconds)
        except Exception:
            # They come back when their visibility timeout ends instead.
            self._log.exception("Giving failed messages back failed", extra={"count": len(receipt_handles)})

    def _record(self, report: LoopReport, result: ChunkResult) -> None:
        if result.counted:
            self._count(report, "ChunksProcessed", 1)
            self._count(report, "RowsSucceeded", result.succeeded)
            self._count(report, "RowsFailed", result.failed)
        else:
            self._count(report, "ChunksAlreadyDone", 1)

    def _stop(self, loop: LoopInvocation, report: LoopReport) -> LoopReport:
        # One message for every cause (operators search for it): the token was deleted or taken
        # over, or, when nothing was claimed, this is a repeated delivery of an event that ran.
        self._log.info(
            "Token deleted, taken over or held by another invocation; this loop stops",
            extra={"token": loop.token, "seq": loop.seq, "claimed": report.claimed},
        )
        self._count(report, "LoopsStopped", 1)
        self._flush(report)
        report.stopped = True
        return report

    def _pause(self, loop: LoopInvocation, report: LoopReport, error: CodeKeyChangedError) -> LoopReport:
        # No receive (the rows stay queued, their receive counts untouched) and no successor:
        # the token's heartbeat goes stale and the restarter tries again a few minutes later.
        self._log.error(f"Bulk rows are not processed: {error.message}", extra={"token": loop.token})
        self._count(report, "LoopsPaused", 1)
        self._flush(report)
        report.paused = True
        return report

    def _reinvoke(self, loop: LoopInvocation, holder: str, function_name: str) -> None:
        successor = loop.successor()
        for attempt in range(_REINVOKE_ATTEMPTS):
            try:
                self._starter.start(function_name, successor)
                return
            except Exception:
                if attempt < _REINVOKE_ATTEMPTS - 1:
                    self._log.exception("Re-invoking the loop failed; retrying", extra={"token": loop.token})
                    self._sleep(0.2 * 2**attempt)
                    continue
                # Leave the token for the restarter's next run rather than a stale threshold
                # from now, then fail the invocation: its failure is what reaches the
                # operations topic (the poller's on-failure destination; retries would only
                # meet the fence).
                try:
                    self._heartbeats.release(loop, holder)
                except Exception:
                    self._log.exception("Releasing the token failed", extra={"token": loop.token})
                raise

    def _count(self, report: LoopReport, name: str, value: float) -> None:
        if value:
            self._metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
            report._pending_metrics = True

    def _flush(self, report: LoopReport) -> None:
        # Powertools flushes only when the handler returns; a loop runs for minutes.
        if report._pending_metrics:
            self._metrics.flush_metrics()
            report._pending_metrics = False


class BatchKeeper:
    """Holds on to a batch while it is processed: every ``interval`` seconds, from a thread of its
    own (one slow message must not stop it), it refreshes the loop's heartbeat and extends the
    visibility timeout of the messages not given up yet. A message that failed is released, so
    it comes back after its visibility timeout; one that succeeded is kept until it is deleted."""

    def __init__(
        self,
        *,
        beat: Callable[[], bool],
        extend: Callable[[list[str]], int],
        receipt_handles: Sequence[str],
        interval: float,
        log: logging.Logger | Any,
    ) -> None:
        self._beat = beat
        self._extend = extend
        self._held = dict.fromkeys(receipt_handles)
        self._interval = max(0.01, interval)
        self._log = log
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="batch-keeper", daemon=True)
        self.alive = True
        self.extensions = 0

    def release(self, receipt_handle: str) -> None:
        """Stop extending one message's visibility."""
        with self._lock:
            self._held.pop(receipt_handle, None)

    def __enter__(self) -> "BatchKeeper":
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._done.set()
        self._thread.join()

    def _keep(self) -> None:
        while not self._done.wait(self._interval):
            try:
                self.alive = self._beat() and self.alive
            except Exception:
                # A failed refresh is not the batch's fault; the next one, or the next iteration, beats.
                self._log.exception("Heartbeat refresh failed")
            with self._lock:
                held = list(self._held)
            if not held:
                continue
            try:
                failed = self._extend(held)
            except Exception:
                self._log.exception("Extending the visibility of a batch failed")
                continue
            self.extensions += 1
            if failed:
                # Deleted meanwhile, or already received again: nothing more to hold.
                self._log.warning("Some messages' visibility could not be extended", extra={"count": failed})


def last_attempt_error(error: BaseException) -> str:
    """The error of every row of a message whose last attempt raised ``error``."""
    return (
        f"processing_failed: this row's message failed on every delivery and on its last attempt "
        f"({type(error).__name__}); the row was not shortened (upload it again)"
    )


def to_lambda_records(messages: Sequence[dict[str, Any]], queue_url: str) -> list[dict[str, Any]]:
    """ReceiveMessage messages in the shape Lambda's SQS event gives its records (what
    ``BatchProcessor`` expects; see tests/support/sqs_receive_message.json)."""
    arn, region = queue_arn(queue_url)
    return [
        {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message.get("Body", ""),
            "attributes": message.get("Attributes", {}),
            "messageAttributes": message.get("MessageAttributes", {}),
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": arn,
            "awsRegion": region,
        }
        for message in messages
    ]


def queue_arn(queue_url: str) -> tuple[str, str]:
    """The ARN and region of a queue from its URL (https://sqs.<region>.amazonaws.com/<account>/<name>)."""
    parts = queue_url.rstrip("/").split("/")
    name, account = parts[-1], parts[-2] if len(parts) >= 2 else ""
    host = parts[2] if len(parts) > 2 else ""
    labels = host.split(".")
    region = labels[1] if len(labels) > 2 and labels[0] == "sqs" else "us-east-1"
    return f"arn:aws:sqs:{region}:{account}:{name}", region
