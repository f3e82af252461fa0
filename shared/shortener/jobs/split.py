"""Splitting an uploaded file into queued rows: the file is read as a stream from S3 and its rows go
to the queue as they are read, packed into messages, so memory stays flat whatever its size.

Never split twice: the job holds the split's state (byte offset, rows, messages, the format found
at the start) and a lease. An invocation claims the lease with a conditional write at the offset it
read, queues rows, and checkpoints with a conditional write that still names it as the holder at
the offset it started from. A duplicated S3 event (S3 may deliver one more than once) or a retried
invocation finds the lease held, or the offset moved, and stops. Messages are sent before the
checkpoint that covers them: an invocation that dies in between leaves them to be queued again
from the checkpoint, with the same chunk numbers and rows, and chunk processing is idempotent.

A file that takes longer than one invocation continues in the next: before its time runs out an
invocation checkpoints and starts its successor with the lease handed over."""

import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from shortener import clock
from shortener.exceptions import InvalidCsvError
from shortener.jobs.csv_reader import CsvRows
from shortener.jobs.message_model import ChunkMessage
from shortener.jobs.metering import Meter, Metering, null_metering
from shortener.jobs.model import CsvFormat, Job, JobError, JobUsage, ReadPosition
from shortener.jobs.packing import MessagePacker
from shortener.jobs.quotas import DailyQuota
from shortener.jobs.submit import MessageSender, WorkLoops
from shortener.jobs.tasks_model import SplitRequest

# SendMessageBatch takes 10 messages a call.
_MESSAGES_PER_SEND = 10
# The checkpoint write itself, added to the usage it carries.
_ONE_UPDATE = JobUsage(dynamodb_requests=1, write_units=1)

SplitOutcome = Literal["split", "continued", "already_split", "busy", "taken_over", "unknown_job", "replaced"]


class SplitRecords(Protocol):
    """What splitting needs of the jobs table (``shortener.jobs.store.JobsStore``)."""

    def get_job(self, job_id: str) -> Job | None: ...
    def claim_split(
        self, job_id: str, owner: str, *, etag: str, expected: ReadPosition, now: int, lease_until: int
    ) -> bool: ...
    def checkpoint_split(
        self,
        job_id: str,
        owner: str,
        *,
        previous: ReadPosition,
        position: ReadPosition,
        chunks: int,
        file_format: CsvFormat,
        lease_until: int,
        usage: JobUsage,
    ) -> bool: ...
    def finish_split(
        self,
        job_id: str,
        owner: str,
        *,
        position: ReadPosition,
        chunks: int,
        file_format: CsvFormat | None,
        error: JobError | None,
        usage: JobUsage,
    ) -> Job | None: ...
    def release_split(self, job_id: str, owner: str) -> None: ...


class FileReader(Protocol):
    """What splitting needs of S3 (``shortener.jobs.bucket.BulkFiles``)."""

    def read(self, bucket: str, key: str, *, offset: int, etag: str) -> Iterator[bytes]: ...


class SplitSuccessor(Protocol):
    """Continues a split in a new invocation, and asks for results files
    (``shortener.jobs.invoke.JobsWorker``)."""

    def continue_split(self, request: SplitRequest) -> None: ...
    def request_results(self, job_id: str) -> None: ...


@dataclass(slots=True)
class SplitReport:
    """What one invocation of the split did."""

    outcome: SplitOutcome
    rows: int = 0  # rows queued by this invocation
    messages: int = 0
    job: Job | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class SplitOptions:
    """How rows are packed, how often the split is checkpointed, and its timing."""

    rows_per_message: int = 250
    message_bytes: int = 64_000
    # Messages queued between checkpoints: at most this many are queued again after a crash.
    checkpoint_messages: int = 50
    # Stop reading and hand over when less than this remains of the invocation.
    handover_seconds: float = 60
    # How long a lease outlives its invocation's deadline, and how long a successor has to start.
    lease_grace_seconds: int = 60


class Splitter:
    """Reads uploaded files into the queue (see the module docstring)."""

    def __init__(
        self,
        jobs: SplitRecords,
        files: FileReader,
        queue: MessageSender,
        queue_url: str,
        successor: SplitSuccessor,
        *,
        loops: WorkLoops | None = None,
        quota: DailyQuota | None = None,
        options: SplitOptions | None = None,
        metering: Metering = null_metering,
        is_file_changed: Callable[[Exception], bool] = lambda _: False,
        logger: logging.Logger | Any = None,
    ) -> None:
        self._jobs = jobs
        self._files = files
        self._queue = queue
        self._queue_url = queue_url
        self._successor = successor
        self._loops = loops
        self._quota = quota
        self._options = options or SplitOptions()
        self._metering = metering
        self._is_file_changed = is_file_changed
        self._log = logger or logging.getLogger(__name__)

    def split(self, request: SplitRequest, owner: str, seconds_left: Callable[[], float]) -> SplitReport:
        """Queue the rows of ``request``'s file from where its job's split stands, as ``owner``
        (the invocation; a continuation passes the owner it was handed)."""
        with self._metering() as meter:
            job = self._jobs.get_job(request.job_id)
            if job is None or job.kind != "upload" or job.upload is None or job.split is None:
                return SplitReport("unknown_job")
            if job.split_done:
                self._ask_for_results(job)
                return SplitReport("already_split", job=job)
            if job.upload.etag is not None and job.upload.etag != request.etag:
                # The same key uploaded again while (or after) the first file was read.
                return SplitReport("replaced", job=job)
            owner = request.owner or owner
            position = job.split.position
            now = clock.epoch_seconds()
            lease_until = now + int(seconds_left()) + self._options.lease_grace_seconds
            if not self._jobs.claim_split(
                job.job_id, owner, etag=request.etag, expected=position, now=now, lease_until=lease_until
            ):
                return SplitReport("busy", job=job)
            return _Run(self, job, request, owner=owner, meter=meter, seconds_left=seconds_left).run()

    def _ask_for_results(self, job: Job) -> None:
        if job.complete and job.results is None:
            self._successor.request_results(job.job_id)


class _Run:
    """One invocation's share of a split, from its claimed position."""

    def __init__(
        self,
        splitter: Splitter,
        job: Job,
        request: SplitRequest,
        *,
        owner: str,
        meter: Meter,
        seconds_left: Callable[[], float],
    ) -> None:
        assert job.split is not None and job.upload is not None
        self.s = splitter
        self.job = job
        self.request = request
        self.owner = owner
        self.meter = meter
        self.seconds_left = seconds_left
        self.checkpoint = job.split.position  # what the job item says is queued
        self.checkpoint_chunks = job.chunks
        self.file_format = job.split.file_format
        options = splitter._options
        self.packer = MessagePacker(
            job.job_id,
            own_host=job.own_host,
            own_hosts=job.own_hosts,
            owner=job.owner,
            max_rows=options.rows_per_message,
            max_bytes=options.message_bytes,
            first_chunk=job.chunks,
            first_row=self.checkpoint.last_row_number + 1,
            defaults=job.upload.defaults if job.upload else None,
            domains=job.domains,
        )
        self.outgoing: list[tuple[ChunkMessage, ReadPosition]] = []
        self.sent = self.checkpoint  # the end of the last message sent
        self.sent_chunks = job.chunks
        self.unsaved = 0  # messages sent since the last checkpoint
        self.loops_started = False
        # Set when the owner's daily quota of rows ran out: the rows read are refused, reading ends.
        self.over_quota = False

    def run(self) -> SplitReport:
        try:
            return self._read_and_queue()
        except Exception as exc:
            if self.s._is_file_changed(exc):
                return self._finish(
                    JobError(
                        error="file_replaced",
                        message="The file was replaced while it was being read; "
                        "upload it again as a new job.",
                    )
                )
            # Let a retry of this invocation take the split over at once, from the checkpoint.
            self.s._jobs.release_split(self.job.job_id, self.owner)
            raise

    def _read_and_queue(self) -> SplitReport:
        blocks = self.s._files.read(
            self.request.bucket, self.request.key, offset=self.checkpoint.offset, etag=self.request.etag
        )
        reader = CsvRows(blocks, start=self.checkpoint, file_format=self.file_format)
        end = self.checkpoint  # where the rows added to the packer so far end
        unreadable: InvalidCsvError | None = None
        try:
            for row in reader:
                if self.file_format is None:
                    self.file_format = reader.format
                closed = self.packer.add(row.url, row.code, row.attributes, row=row.row, problem=row.problem)
                if closed is not None:
                    # The row just read starts the next message: the closed one ends before it.
                    if not self._queue(closed, end):
                        return self._report("taken_over")
                    if not self.over_quota and self.seconds_left() < self.s._options.handover_seconds:
                        return self._hand_over()
                end = reader.position
                if self.over_quota:
                    # Reading ends: the rows read so far (the packer's too) are queued refused.
                    break
        except InvalidCsvError as exc:
            # Only the start of a file is refused so (not text, no header and no URL): nothing
            # was queued, and the job ends saying why.
            unreadable = exc
        self.file_format = self.file_format or reader.format
        last = self.packer.flush()
        if last is not None and not self._queue(last, end):
            return self._report("taken_over")
        if not self._send():
            return self._report("taken_over")
        return self._finish(self._quota_error() if self.over_quota else self._error(unreadable))

    def _quota_error(self) -> JobError:
        assert self.s._quota is not None
        return JobError(
            error="quota_exceeded",
            message=f"{self.s._quota.message(self.job.owner)} Reading stopped at row "
            f"{self.sent.last_row_number:,}; the last rows read are failed quota_exceeded, the rows "
            "after them were not read.",
        )

    def _error(self, unreadable: InvalidCsvError | None) -> JobError | None:
        rows = self.sent.rows
        if unreadable is None:
            return (
                None if rows else JobError(error="invalid_csv", message="The file has a header but no rows.")
            )
        message = unreadable.message
        if rows:
            message += f" Reading stopped there; the {rows:,} rows before it are processed."
        return JobError(error=unreadable.error, message=message)

    def _queue(self, message: ChunkMessage, end: ReadPosition) -> bool:
        """Add a closed message; send a full batch; checkpoint every so often. False when the
        split was taken over."""
        self.outgoing.append((message, end))
        if len(self.outgoing) < _MESSAGES_PER_SEND:
            return True
        return self._send()

    def _send(self) -> bool:
        quota = self.s._quota
        if self.outgoing and quota is not None:
            rows = sum(len(message.rows) for message, _ in self.outgoing)
            if not self.over_quota and not quota.reserve(self.job.owner, rows=rows, size=0):
                self.over_quota = True
            if self.over_quota:
                # Over the owner's daily quota: the rows read get their outcome (refused), none after.
                refused = f"quota_exceeded: {quota.message(self.job.owner)}"
                self.outgoing = [
                    (message.model_copy(update={"refused": refused}), end) for message, end in self.outgoing
                ]
        if self.outgoing:
            self.s._queue.send_all(
                self.s._queue_url, [message.model_dump_json() for message, _ in self.outgoing]
            )
            self.sent = self.outgoing[-1][1]
            self.sent_chunks = self.outgoing[-1][0].chunk + 1
            self.unsaved += len(self.outgoing)
            self.outgoing = []
            self._start_loops()
        if self.unsaved >= self.s._options.checkpoint_messages:
            return self._save()
        return True

    def _save(self, *, lease_until: int | None = None) -> bool:
        """Checkpoint what was sent; False when another invocation holds the split now."""
        if self.sent == self.checkpoint or self.file_format is None:
            return True
        saved = self.s._jobs.checkpoint_split(
            self.job.job_id,
            self.owner,
            previous=self.checkpoint,
            position=self.sent,
            chunks=self.sent_chunks,
            file_format=self.file_format,
            lease_until=lease_until or self._lease_until(),
            usage=self.meter.take() + _ONE_UPDATE,
        )
        if saved:
            self.checkpoint, self.checkpoint_chunks, self.unsaved = self.sent, self.sent_chunks, 0
        return saved

    def _hand_over(self) -> SplitReport:
        """Send the messages closed so far and checkpoint them, keep the lease for the successor
        a little while, and start it. Rows read into a message not yet closed are read again by
        the successor, into the same message. Each invocation queues at least one message, so a
        split always moves on."""
        handover_lease = clock.epoch_seconds() + self.s._options.lease_grace_seconds
        if not self._send() or not self._save(lease_until=handover_lease):
            return self._report("taken_over")
        self.s._successor.continue_split(self.request.model_copy(update={"owner": self.owner}))
        return self._report("continued")

    def _finish(self, error: JobError | None) -> SplitReport:
        job = self.s._jobs.finish_split(
            self.job.job_id,
            self.owner,
            position=self.sent,
            chunks=self.sent_chunks,
            file_format=self.file_format,
            error=error,
            usage=self.meter.take() + _ONE_UPDATE,
        )
        if job is None:
            return self._report("taken_over")
        self._start_loops()
        self.s._ask_for_results(job)
        return self._report("split", job)

    def _start_loops(self) -> None:
        """Once per invocation, after its first messages are queued: the loops for the whole
        file, estimated from the bytes per message so far (clamped to the maximum by the scaler)."""
        if self.loops_started or self.s._loops is None or self.sent_chunks == 0:
            return
        self.loops_started = True
        assert self.job.upload is not None
        bytes_per_message = max(1, self.sent.offset) / self.sent_chunks
        expected = math.ceil(self.job.upload.size / bytes_per_message)
        already_done = self.job.processed // self.s._options.rows_per_message
        self.s._loops.start_for(max(1, expected - already_done))

    def _lease_until(self) -> int:
        return clock.epoch_seconds() + int(self.seconds_left()) + self.s._options.lease_grace_seconds

    def _report(self, outcome: SplitOutcome, job: Job | None = None) -> SplitReport:
        start = self.job.split.position if self.job.split else ReadPosition()
        return SplitReport(
            outcome,
            rows=self.sent.rows - start.rows,
            messages=self.sent_chunks - self.job.chunks,
            job=job,
        )
