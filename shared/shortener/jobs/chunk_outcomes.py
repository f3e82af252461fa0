"""Recording a chunk's outcomes, shared by its deliveries (shortener.jobs.bulk) and by the
settlement of a dead-lettered message (shortener.jobs.dead_letters): what both need of the jobs
table, and how long job items are kept. Kept apart from bulk processing so that the restarter,
which only settles dead letters, does not import (and cold-start) the whole of it."""

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from shortener import clock
from shortener.jobs.message_model import ChunkMessage
from shortener.jobs.model import Job, JobUsage, RecordedChunk, RowOutcome


class ChunkOutcomes(Protocol):
    """Recording and counting a chunk's outcomes (``shortener.jobs.store.JobsStore``)."""

    def record_outcomes(
        self,
        job_id: str,
        chunk: int,
        *,
        first_row: int,
        outcomes: Sequence[RowOutcome],
        now: int,
        expires_at: int,
        dead_letter: bool = False,
    ) -> RecordedChunk: ...
    def count_chunk(
        self,
        job_id: str,
        chunk: int,
        *,
        succeeded: int,
        failed: int,
        now: datetime,
        usage: JobUsage | None = None,
    ) -> Job | None: ...
    def get_job(self, job_id: str) -> Job | None: ...


class ResultsRequester(Protocol):
    """Asks for a job's results file to be written (``shortener.jobs.invoke.JobsWorker``)."""

    def request_results(self, job_id: str) -> None: ...


def request_results_if_complete(
    jobs: ChunkOutcomes, job_id: str, counted: Job | None, results: ResultsRequester | None
) -> None:
    """Ask for the results file of a job that a chunk's count completed, whoever counted it (a
    delivery or a dead-letter settlement). ``counted`` is the job as count_chunk returned it; None
    means the chunk was counted before, by work that may have died before asking, so the job is
    read to know."""
    if results is None:
        return
    job = counted if counted is not None else jobs.get_job(job_id)
    if job is not None and job.complete and job.results is None:
        results.request_results(job_id)


def fail_chunk(
    jobs: ChunkOutcomes,
    message: ChunkMessage,
    error: str,
    *,
    retention_days: int,
    results: ResultsRequester | None = None,
) -> RecordedChunk:
    """Fail every row of ``message`` with ``error`` (``"<word>: <sentence>"``), count them on the
    job and ask for the results file of a job this completes. The rows are written only if no
    delivery recorded the chunk first (then that delivery's outcomes stand and are what is
    returned), so a row never gets two outcomes; repeating this is harmless."""
    now = clock.now()
    outcomes = [
        RowOutcome(row=message.row_number(index), url=url, error=error)
        for index, (url, _) in enumerate(message.rows)
    ]
    recorded = jobs.record_outcomes(
        message.job_id,
        message.chunk,
        first_row=message.first_row,
        outcomes=outcomes,
        now=int(now.timestamp()),
        expires_at=expiry(now, retention_days),
        dead_letter=True,
    )
    job = jobs.count_chunk(
        message.job_id, message.chunk, succeeded=recorded.succeeded, failed=recorded.failed, now=now
    )
    request_results_if_complete(jobs, message.job_id, job, results)
    return recorded


def expiry(start: datetime, retention_days: int) -> int:
    """The TTL (epoch seconds) of job items created at ``start``."""
    return int((start + timedelta(days=retention_days)).timestamp())
