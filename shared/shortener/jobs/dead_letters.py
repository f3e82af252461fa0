"""Jobs always end: the rows of a bulk message that SQS moved to the dead-letter queue (it failed
on every one of its ``maxReceiveCount`` deliveries) are failed with a reason in the job's results,
and counted, so the job reaches ``done``.

Who settles: the restarter, on the schedule it already runs every minute. An SQS event source
mapping on the dead-letter queue would have Lambda's pollers call ReceiveMessage all the time,
against the product's promise of no requests while idle beyond that schedule; the restarter costs
one GetQueueAttributes a minute on an empty dead-letter queue (its depth) and receives only when
something is there.

Order and idempotence: a message's rows are recorded first (one conditional write that succeeds
only if no delivery recorded the chunk), then counted on the job (the same once-only count as a
delivery's), and only then is the message deleted from the dead-letter queue. A run that dies in
between finds the message again and repeats each step harmlessly. A late success of the same chunk
(a slow delivery that finished after SQS had moved its message) finds the chunk recorded as a dead
letter and leaves it so; whichever records first stands, and the chunk is counted once. The count
that completes the job asks the jobs worker for its results file, whoever made it.

A last attempt before any row fails: a message reaches the dead-letter queue after
``maxReceiveCount`` failed deliveries, and under a burst of faults (throttles, crashed loops) those
can all be failures that were not its own. So the first time the restarter finds a message there,
it sends it back to its queue marked ``last_attempt``, delayed (``last_attempt_delay_seconds``:
the burst has time to pass), and deletes it from the dead-letter queue; a loop receives one
message at a time, so the attempt runs alone. If that attempt raises, the loop fails the rows
itself with that attempt's reason (shortener.loops.poller); if it never finishes (the loop died
with it each time), the message comes back here marked, and only then are its rows failed with
the reason below. See docs/faults.md.
"""

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import ValidationError

from shortener.jobs.chunk_outcomes import ChunkOutcomes, ResultsRequester, fail_chunk
from shortener.jobs.message_model import ChunkMessage
from shortener.loops.scaling_model import DeadLetterReport, DeadLetterTarget, LoopTarget, QueueDepth

log = logging.getLogger(__name__)

_RECEIVE_BATCH = 10
# Enough for a burst of failures in one run of a 60 s function; the rest waits for the next run.
_MESSAGES_PER_RUN = 200
# How long a dead-lettered message waits in its queue before its last attempt (SQS allows 0-900).
LAST_ATTEMPT_DELAY_SECONDS = 30


class DeadLetterQueue(Protocol):
    """``shortener.loops.queue.BulkQueue``."""

    def receive(
        self, queue_url: str, *, max_messages: int = 10, wait_seconds: int = 20
    ) -> list[dict[str, Any]]: ...
    def delete(self, queue_url: str, receipt_handles: Sequence[str]) -> int: ...
    def send(self, queue_url: str, body: str, *, delay_seconds: int = 0) -> None: ...


class RedriveLookup(Protocol):
    """``shortener.loops.queue_metrics.QueueMetrics``."""

    def dead_letter_target(self, queue_url: str, region: str | None = None) -> DeadLetterTarget | None: ...
    def depth(self, queue_url: str, region: str | None = None) -> QueueDepth: ...


def dead_letter_error(max_receive_count: int) -> str:
    """The error of every row of a dead-lettered message (``"<word>: <sentence>"``)."""
    return (
        f"dead_letter: this row's message failed {max_receive_count} times, then its last attempt "
        "did not finish either (the function ended: crash, timeout or out of memory); the row was "
        "not shortened (upload it again)"
    )


class DeadLetterSettler:
    """Settles the dead-letter queue of each loop queue (see the module docstring)."""

    def __init__(
        self,
        jobs: ChunkOutcomes,
        queue: DeadLetterQueue,
        lookup: RedriveLookup,
        *,
        retention_days: int = 30,
        messages_per_run: int = _MESSAGES_PER_RUN,
        results: ResultsRequester | None = None,
        last_attempt_delay_seconds: int = LAST_ATTEMPT_DELAY_SECONDS,
    ) -> None:
        self._jobs = jobs
        self._results = results
        self._queue = queue
        self._lookup = lookup
        self._retention_days = retention_days
        self._messages_per_run = messages_per_run
        self._last_attempt_delay = last_attempt_delay_seconds
        # A queue's redrive policy changes only with a deployment: read it once per container.
        self._targets: dict[str, DeadLetterTarget | None] = {}

    def settle(self, target: LoopTarget) -> DeadLetterReport:
        """Send every message in ``target``'s dead-letter queue back for its last attempt, or, if
        it had that, fail its rows and count them on its job (up to a bound of messages per run);
        then delete the messages."""
        report = DeadLetterReport(queue_name=target.queue_name)
        dead_letters = self._dead_letter_target(target)
        if dead_letters is None:
            return report
        if self._lookup.depth(dead_letters.queue_url, dead_letters.region).visible == 0:
            return report
        received = 0
        while received < self._messages_per_run:
            # A short long-poll: it asks every SQS server, so a few messages are not missed.
            messages = self._queue.receive(
                dead_letters.queue_url, max_messages=_RECEIVE_BATCH, wait_seconds=1
            )
            if not messages:
                break
            received += len(messages)
            settled: list[str] = []
            for message in messages:
                try:
                    self._settle_one(message, target, dead_letters.max_receive_count, report)
                except Exception:
                    # Left in the queue: it comes back after its visibility timeout, for a later run.
                    log.exception(
                        "Settling a dead letter failed", extra={"message_id": message.get("MessageId")}
                    )
                    report.errors += 1
                    continue
                settled.append(message["ReceiptHandle"])
            if settled:
                self._queue.delete(dead_letters.queue_url, settled)
        return report

    def _dead_letter_target(self, target: LoopTarget) -> DeadLetterTarget | None:
        if target.queue_url not in self._targets:
            self._targets[target.queue_url] = self._lookup.dead_letter_target(target.queue_url, target.region)
        return self._targets[target.queue_url]

    def _settle_one(
        self, message: dict[str, Any], target: LoopTarget, max_receive_count: int, report: DeadLetterReport
    ) -> None:
        try:
            chunk = ChunkMessage.model_validate_json(message.get("Body", ""))
        except ValidationError:
            # No job waits for a message that is not a chunk; it is logged whole, then removed.
            log.error(
                "A dead letter that is not a bulk chunk was removed",
                extra={"message_id": message.get("MessageId"), "body": message.get("Body", "")[:2000]},
            )
            report.unreadable += 1
            return
        if not chunk.last_attempt:
            # Sent before the dead letter is deleted: a run that dies in between sends it twice,
            # and the second attempt finds the chunk done (or fails it the same way).
            retry = chunk.model_copy(update={"last_attempt": True})
            self._queue.send(
                target.queue_url, retry.model_dump_json(), delay_seconds=self._last_attempt_delay
            )
            report.retried += 1
            log.warning(
                "A dead-lettered message was sent back for a last attempt",
                extra={"job_id": chunk.job_id, "chunk": chunk.chunk, "delay": self._last_attempt_delay},
            )
            return
        recorded = fail_chunk(
            self._jobs,
            chunk,
            dead_letter_error(max_receive_count),
            retention_days=self._retention_days,
            results=self._results,
        )
        if recorded.dead_letter:
            report.settled += 1
            report.rows_failed += recorded.failed
            log.warning(
                "Rows of a dead-lettered message failed",
                extra={"job_id": chunk.job_id, "chunk": chunk.chunk, "rows": len(chunk.rows)},
            )
        else:
            report.already_recorded += 1
