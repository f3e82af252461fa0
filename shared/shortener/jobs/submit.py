"""Accepting bulk jobs: a small file in the request body is packed into messages and queued at
once; a file of any size is uploaded straight to S3 with a presigned URL, and its arrival starts
the split (``shortener.jobs.split``). Either way the loops the work needs are started at once."""

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from shortener import clock
from shortener.access.model import ANONYMOUS_OWNER, Caller
from shortener.exceptions import JobNotFoundError, PayloadTooLargeError
from shortener.jobs.chunk_outcomes import expiry
from shortener.jobs.message_model import BulkRow, QueueUnavailableError
from shortener.jobs.metering import Metering, null_metering
from shortener.jobs.model import FileEncoding, Job, JobUsage, UploadSource
from shortener.jobs.packing import pack_rows
from shortener.jobs.quotas import DailyQuota
from shortener.jobs.tasks_model import upload_key
from shortener.jobs.view_model import DirectUploadRequest, PresignedUpload
from shortener.links.domains import JobDomains

JOB_ID_PATTERN = re.compile(r"[0-9a-f]{32}")
# S3 takes at most 5 GiB in one PUT (larger objects need a multipart upload).
MAX_SINGLE_PUT_BYTES = 5 * 1024**3
# What a job's own creation costs: one PutItem of a small item.
_ONE_WRITE = JobUsage(dynamodb_requests=1, write_units=1)


class JobRecords(Protocol):
    """What job submission and status need of storage (``shortener.jobs.store.JobsStore``)."""

    def create_job(self, job: Job, expires_at: int) -> None: ...
    def delete_job(self, job_id: str) -> None: ...
    def get_job(self, job_id: str) -> Job | None: ...
    def add_usage(self, job_id: str, usage: JobUsage) -> None: ...


class MessageSender(Protocol):
    """What job submission needs of the queue (``shortener.loops.queue.BulkQueue``)."""

    def send_all(self, queue_url: str, bodies: Sequence[str]) -> int: ...


class UploadSigner(Protocol):
    """What a direct upload needs of S3 (``shortener.jobs.bucket.BulkFiles``)."""

    def upload_url(self, bucket: str, key: str, size: int, expires_in: int) -> PresignedUpload: ...


class WorkLoops(Protocol):
    """Starts the loops a new backlog needs (``shortener.loops.scaling.WorkStarter``)."""

    def start_for(self, messages: int) -> None: ...


@dataclass(frozen=True, slots=True)
class BulkOptions:
    """How uploads are packed and how long jobs are kept."""

    rows_per_message: int = 250
    message_bytes: int = 64_000
    retention_days: int = 30


@dataclass(frozen=True, slots=True)
class JobOrigin:
    """Where a job came from: the host of its request (links back to it are refused), the base
    of its short URLs and of the API's own links, the bucket of its files, and its owner (once API
    keys say who)."""

    own_host: str | None = None
    base_url: str = ""
    api_url: str = ""
    bucket: str = ""
    owner: str | None = None
    # Every other name the request reached this API by (its execute-api host, the custom domain).
    own_hosts: tuple[str, ...] = ()
    # The SNS topic that gets the job-ended message too (checked: shortener.jobs.topics).
    notify_topic: str | None = None
    # The stack's domains and those the uploader may use (``JobDomains.of``).
    domains: JobDomains | None = None

    def check_default_domain(self, defaults: Mapping[str, str] | None) -> None:
        """UnknownDomainError (422) or DomainNotAllowedError (403) for a job default domain the
        uploader could not make links on, as ``POST /`` refuses it: before anything is written."""
        if self.domains is not None:
            self.domains.for_row((defaults or {}).get("domain"))


def submit_job(
    rows: Sequence[BulkRow],
    *,
    jobs: JobRecords,
    queue: MessageSender,
    queue_url: str,
    origin: JobOrigin,
    options: BulkOptions,
    loops: WorkLoops | None = None,
    metering: Metering = null_metering,
    encoding: FileEncoding | None = None,
    quota: DailyQuota | None = None,
    size: int = 0,
    defaults: Mapping[str, str] | None = None,
    file_name: str | None = None,
    ignored_columns: Sequence[str] = (),
) -> Job:
    """Create a job for ``rows``: the job record first (so progress always has a total to count
    towards), then the rows packed into messages and sent in batches, then the loops they need.
    ``encoding`` says how the file's text was decoded (shown with the job's status). ``quota``:
    the owner's daily quota, which the rows and the file's ``size`` must fit (QuotaExceededError,
    nothing written, otherwise). ``file_name``: the uploaded file's name, and ``ignored_columns``
    its columns read for nothing, shown with the job."""
    origin.check_default_domain(defaults)
    if quota is not None:
        quota.require(origin.owner, rows=len(rows), size=size)
    with metering() as meter:
        job_id = uuid.uuid4().hex
        messages = pack_rows(
            job_id,
            rows,
            own_host=origin.own_host,
            max_rows=options.rows_per_message,
            max_bytes=options.message_bytes,
            owner=origin.owner,
            own_hosts=origin.own_hosts,
            defaults=defaults,
            domains=origin.domains,
        )
        job = _new_job(job_id, origin, total=len(rows), chunks=len(messages)).model_copy(
            update={
                "encoding": encoding,
                "file_name": safe_file_name(file_name) if file_name else None,
                "ignored_columns": list(ignored_columns),
            }
        )
        jobs.create_job(job, expires_at=expiry(job.created_at, options.retention_days))
        meter.take()  # the creation is in the job's usage already
        try:
            queue.send_all(queue_url, [message.model_dump_json() for message in messages])
        except Exception as exc:
            # A job whose rows are not all queued would never be done: withdraw it. Rows already
            # sent are processed, but their counts find no job and are dropped.
            jobs.delete_job(job_id)
            raise QueueUnavailableError(
                "The rows could not be queued; please upload the file again."
            ) from exc
        if loops is not None:
            loops.start_for(len(messages))
        jobs.add_usage(job_id, meter.take() + _ONE_WRITE)
    return job


def create_upload_job(
    request: DirectUploadRequest,
    *,
    jobs: JobRecords,
    files: UploadSigner,
    origin: JobOrigin,
    options: BulkOptions,
    url_seconds: int,
    max_bytes: int = MAX_SINGLE_PUT_BYTES,
    quota: DailyQuota | None = None,
    anonymous_max_bytes: int | None = None,
    defaults: Mapping[str, str] | None = None,
) -> tuple[Job, PresignedUpload]:
    """Create a job waiting for its file, and a presigned PUT of exactly the declared size into
    the bulk bucket (``uploads/<job id>.csv``); the object's arrival starts the split."""
    origin.check_default_domain(defaults)
    if request.size > max_bytes:
        raise PayloadTooLargeError(
            f"The file is {request.size:,} bytes; a direct upload takes at most {max_bytes:,} bytes "
            "(S3's limit for a single PUT). Split it into several files."
        )
    if (
        anonymous_max_bytes is not None
        and origin.owner == ANONYMOUS_OWNER
        and request.size > anonymous_max_bytes
    ):
        # Without a key, anyone could ask for 5 GiB uploads: callers without one get small ones.
        raise PayloadTooLargeError(
            f"The file is {request.size:,} bytes; without an API key a direct upload takes at most "
            f"{anonymous_max_bytes:,} bytes (AnonymousMaxUploadBytes). Use an API key for larger files."
        )
    if quota is not None:
        # The declared size counts now; the rows as the file is read (shortener.jobs.split).
        quota.require(origin.owner, rows=0, size=request.size)
    job_id = uuid.uuid4().hex
    key = upload_key(job_id)
    upload = UploadSource(
        key=key, file_name=safe_file_name(request.file_name), size=request.size, defaults=dict(defaults or {})
    )
    job = _new_job(job_id, origin, total=0, chunks=0).model_copy(
        update={"kind": "upload", "split_done": False, "upload": upload}
    )
    jobs.create_job(job, expires_at=expiry(job.created_at, options.retention_days))
    return job, files.upload_url(origin.bucket, key, request.size, url_seconds)


def _new_job(job_id: str, origin: JobOrigin, *, total: int, chunks: int) -> Job:
    return Job(
        job_id=job_id,
        total=total,
        chunks=chunks,
        created_at=clock.now(),
        bucket=origin.bucket,
        base_url=origin.base_url,
        api_url=origin.api_url,
        own_host=origin.own_host,
        own_hosts=list(origin.own_hosts),
        owner=origin.owner,
        domains=origin.domains,
        notify_topic=origin.notify_topic,
        usage=_ONE_WRITE,
    )


def safe_file_name(name: str) -> str:
    """A file name as shown back to people and used for downloads: no folders, no control or
    quoting characters."""
    base = re.split(r"[\\/]", name)[-1]
    cleaned = "".join(char for char in base if char.isprintable() and char not in '"<>|*?:')
    return cleaned.strip()[:255] or "upload.csv"


def job_for(caller: Caller, job: Job | None, job_id: str) -> Job:
    """``job`` if ``caller`` may see it (its owner, or an admin; a job from before owners existed
    is for admins only), else JobNotFoundError: another owner's job is indistinguishable from no
    job at all. Without a key every caller is the anonymous owner: its jobs are found by their
    unguessable ids, as before keys existed."""
    if job is None or not (caller.is_admin or (job.owner is not None and job.owner == caller.owner_id)):
        raise JobNotFoundError(f"No job has the id '{job_id[:64]}'.")
    return job


def is_job_id(text: str) -> bool:
    """Whether ``text`` could be a job id (a malformed one is a 404 with no database call)."""
    return JOB_ID_PATTERN.fullmatch(text) is not None
