"""One loop: a poller invocation that drains its queue and then re-invokes itself.

Each iteration: heartbeat (stop when the token is gone or names another loop id), long-poll
receive, process the batch with partial failures, delete what succeeded. The loop polls while
enough of the invocation remains, then starts its successor asynchronously. An exception anywhere
in an iteration is logged and counted, never the end of the loop.
"""

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shortener.models.exceptions import CodeKeyChangedError
from shortener.models.jobs import ChunkMessage, ChunkResult
from shortener.models.loops import LoopInvocation

_MAX_MESSAGES = 10
_REINVOKE_ATTEMPTS = 4


class Heartbeats(Protocol):
    """``shortener.dal.loops.LoopsStore``."""

    def heartbeat(self, loop: LoopInvocation) -> bool: ...


class QueueReader(Protocol):
    """``shortener.dal.queue.BulkQueue``."""

    def receive(
        self, queue_url: str, *, max_messages: int = 10, wait_seconds: int = 20
    ) -> list[dict[str, Any]]: ...
    def delete(self, queue_url: str, receipt_handles: Sequence[str]) -> int: ...


class LoopStarting(Protocol):
    """``shortener.dal.loops.LoopStarter``."""

    def start(self, function_name: str, loop: LoopInvocation) -> None: ...


class MessageProcessor(Protocol):
    """``shortener.logic.bulk.ChunkProcessor``."""

    def check_ready(self) -> None: ...
    def process(self, message: ChunkMessage) -> ChunkResult: ...


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
    metrics_flush_seconds: float = 60
    # After an error, wait this long before the next iteration, so a persistent fault does not spin.
    error_pause_seconds: float = 1


@dataclass(slots=True)
class LoopReport:
    """What one invocation of the loop did."""

    stopped: bool = False  # the token was deleted or taken over: no successor was started
    paused: bool = False  # rows must not be processed now (the code key changed): no successor
    reinvoked: bool = False
    polls: int = 0
    messages: int = 0
    failed_messages: int = 0
    errors: int = 0
    _pending_metrics: bool = field(default=False, repr=False)


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

    def run(
        self, loop: LoopInvocation, function_name: str, remaining_seconds: Callable[[], float]
    ) -> LoopReport:
        """Poll while more than the re-invoke margin remains, then start the successor; stop
        without one when the heartbeat says this loop is no longer wanted."""
        report = LoopReport()
        try:
            self._processor.check_ready()
        except CodeKeyChangedError as exc:
            return self._pause(loop, report, exc)
        margin = self._options.reinvoke_margin_seconds
        last_flush = self._monotonic()
        while remaining_seconds() > margin:
            try:
                if not self._heartbeats.heartbeat(loop):
                    return self._stop(loop, report)
                heartbeat_at = self._monotonic()
                wait = int(max(0, min(self._options.receive_wait_seconds, remaining_seconds() - margin)))
                messages = self._queue.receive(loop.queue_url, max_messages=_MAX_MESSAGES, wait_seconds=wait)
                report.polls += 1
                if messages and not self._process(loop, messages, report, heartbeat_at):
                    return self._stop(loop, report)
            except Exception:
                # Nothing in one iteration may end the loop: the messages come back after their
                # visibility timeout and the next iteration tries again.
                self._log.exception("Loop iteration failed; continuing", extra={"token": loop.token})
                report.errors += 1
                self._count(report, "LoopErrors", 1)
                self._sleep(min(self._options.error_pause_seconds, max(0.0, remaining_seconds() - margin)))
            if self._monotonic() - last_flush >= self._options.metrics_flush_seconds:
                self._flush(report)
                last_flush = self._monotonic()
        self._flush(report)
        self._reinvoke(loop, function_name)
        report.reinvoked = True
        return report

    def _process(
        self, loop: LoopInvocation, messages: list[dict[str, Any]], report: LoopReport, heartbeat_at: float
    ) -> bool:
        """Process one received batch; delete what succeeded. False when a heartbeat refreshed
        during long work said this loop must stop (the batch is still finished first)."""
        alive = True
        last_beat = heartbeat_at

        def handle(record: SQSRecord) -> ChunkResult:
            nonlocal alive, last_beat
            if self._monotonic() - last_beat >= self._options.heartbeat_interval_seconds:
                last_beat = self._monotonic()
                try:
                    alive = self._heartbeats.heartbeat(loop) and alive
                except Exception:
                    # A failed refresh is not the message's fault; the next iteration beats again.
                    self._log.exception("Heartbeat refresh failed", extra={"token": loop.token})
            try:
                result = self._processor.process(ChunkMessage.model_validate_json(record.body))
            except Exception:
                # BatchProcessor keeps the failure for the batch response; the log says why.
                receives = record.attributes.approximate_receive_count
                self._log.exception(
                    "Message failed; it will be redelivered",
                    extra={"message_id": record.message_id, "receives": receives},
                )
                raise
            self._record(report, result)
            return result

        records = to_lambda_records(messages, loop.queue_url)
        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        with processor(records=records, handler=handle):
            processor.process()
        failed_ids = {failure["itemIdentifier"] for failure in processor.response()["batchItemFailures"]}
        succeeded = [record["receiptHandle"] for record in records if record["messageId"] not in failed_ids]
        report.messages += len(records)
        report.failed_messages += len(failed_ids)
        if failed_ids:
            self._count(report, "MessagesFailed", len(failed_ids))
        if succeeded:
            undeleted = self._queue.delete(loop.queue_url, succeeded)
            if undeleted:
                # They are redelivered and recognised as done; only costs a little work.
                self._log.warning("Some processed messages could not be deleted", extra={"count": undeleted})
        return alive

    def _record(self, report: LoopReport, result: ChunkResult) -> None:
        if result.counted:
            self._count(report, "ChunksProcessed", 1)
            self._count(report, "RowsSucceeded", result.succeeded)
            self._count(report, "RowsFailed", result.failed)
        else:
            self._count(report, "ChunksAlreadyDone", 1)

    def _stop(self, loop: LoopInvocation, report: LoopReport) -> LoopReport:
        self._log.info("Token deleted or taken over; this loop stops", extra={"token": loop.token})
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

    def _reinvoke(self, loop: LoopInvocation, function_name: str) -> None:
        for attempt in range(_REINVOKE_ATTEMPTS):
            try:
                self._starter.start(function_name, loop)
                return
            except Exception:
                if attempt == _REINVOKE_ATTEMPTS - 1:
                    # Failing the invocation makes Lambda retry it; the restarter is the backstop.
                    raise
                self._log.exception("Re-invoking the loop failed; retrying", extra={"token": loop.token})
                self._sleep(0.2 * 2**attempt)

    def _count(self, report: LoopReport, name: str, value: float) -> None:
        if value:
            self._metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
            report._pending_metrics = True

    def _flush(self, report: LoopReport) -> None:
        # Powertools flushes only when the handler returns; a loop runs for minutes.
        if report._pending_metrics:
            self._metrics.flush_metrics()
            report._pending_metrics = False


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
