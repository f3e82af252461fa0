"""Recording a chunk's outcomes, shared by its deliveries (shortener.logic.bulk) and by the
settlement of a dead-lettered message (shortener.logic.dead_letters): what both need of the jobs
table, and how long job items are kept. Kept apart from bulk processing so that the restarter,
which only settles dead letters, does not import (and cold-start) the whole of it."""

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from shortener.models.jobs import Job, JobUsage, RecordedChunk, RowOutcome


class ChunkOutcomes(Protocol):
    """Recording and counting a chunk's outcomes (``shortener.dal.jobs.JobsStore``)."""

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


def expiry(start: datetime, retention_days: int) -> int:
    """The TTL (epoch seconds) of job items created at ``start``."""
    return int((start + timedelta(days=retention_days)).timestamp())
