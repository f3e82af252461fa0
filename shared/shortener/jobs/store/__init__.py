"""The jobs table (key ``job_id`` + ``sk``) and every kind of item it stores, one module each:

- ``items``: the job, one ``sk = "job"`` item per bulk upload (its source, totals, progress
  counters and usage); listed by owner through the ByOwner index;
- ``chunk_records``: the chunks, one ``sk = "chunk#<n>"`` item per SQS message of a job (its id
  block, then each row's outcome), counted once on the job item;
- ``leases`` and ``labels_lease``: the leases, held on the job item itself (the split lease, the
  results lease and the QR labels lease with where its build stands);
- ``batches``: changes in bulk, one ``sk = "batch"`` item per batch and one ``"batchpage#<n>"`` per
  page of links it reached (never among an owner's jobs: no ByOwner keys);
- ``quotas``: each owner's bulk usage per UTC day, one item per owner (``job_id = "#quota#<owner>"``)
  and day (``sk``), expiring by TTL.

``JobsStore`` is the job, its chunks and its leases over one table; ``BatchStore`` and
``DailyQuotaStore`` are their own stores on the same table."""

from shortener.jobs.store.chunk_records import ChunkRecords
from shortener.jobs.store.labels_lease import LabelsLease
from shortener.jobs.store.leases import JobLeases


class JobsStore(JobLeases, LabelsLease, ChunkRecords):
    """Data access for the jobs table."""


__all__ = ["JobsStore"]
