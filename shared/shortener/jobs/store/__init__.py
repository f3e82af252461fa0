"""The jobs table, by concern: job items (``items``), chunk records and their counting
(``chunk_records``), the split and results leases (``leases``) and the labels lease
(``labels_lease``). ``JobsStore`` is all of them over one table."""

from shortener.jobs.store.chunk_records import ChunkRecords
from shortener.jobs.store.labels_lease import LabelsLease
from shortener.jobs.store.leases import JobLeases


class JobsStore(JobLeases, LabelsLease, ChunkRecords):
    """Data access for the jobs table."""


__all__ = ["JobsStore"]
