"""The jobs table, by concern: job items (``items``), chunk records and their counting
(``chunk_records``), and the split and results leases (``leases``). ``JobsStore`` is all of them
over one table."""

from shortener.dal.jobs.chunk_records import ChunkRecords
from shortener.dal.jobs.leases import JobLeases


class JobsStore(JobLeases, ChunkRecords):
    """Data access for the jobs table."""


__all__ = ["JobsStore"]
