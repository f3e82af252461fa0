"""A job as its owner sees it: status, phase, progress of its file, results and cost; and the
work of a job that stalled (a split or a results file whose worker died), which a status read
asks for again, so a job never waits on a lost event."""

from datetime import datetime, timedelta
from typing import Literal

from shortener.jobs.cost import cost_line
from shortener.jobs.model import Job
from shortener.jobs.view_model import JobStatusView, UploadProgress

StalledWork = Literal["split", "results"]
# A complete job whose results file nobody has claimed this long after its last count has lost
# the request for it (the one that completed it died before asking).
RESULTS_REQUEST_GRACE = timedelta(seconds=30)
# How long after a job was accepted its status reads leave the arrival of its file to S3's event
# before they look in the bucket themselves (an event whose invocations all failed before claiming
# the split would otherwise leave the job at awaiting_upload until it expires).
UPLOAD_EVENT_GRACE = timedelta(seconds=30)


def status_view(
    job: Job, *, results_url: str, results_file: tuple[str, datetime] | None = None
) -> JobStatusView:
    """What ``GET /jobs/{id}`` answers for ``job``; ``results_file`` is a presigned link to its
    results file and when the link expires (once the file is written)."""
    upload = None
    if job.upload is not None:
        read = job.upload.size if job.split_done else job.split.position.offset if job.split else 0
        upload = UploadProgress(file_name=job.upload.file_name, size=job.upload.size, bytes_read=read)
    return JobStatusView(
        job_id=job.job_id,
        status=job.status,
        phase=job.phase,
        total=job.total,
        succeeded=job.succeeded,
        failed=job.failed,
        processed=job.processed,
        created_at=job.created_at,
        updated_at=job.updated_at or job.created_at,
        results_url=results_url,
        results_ready=job.results is not None,
        results_file_url=results_file[0] if results_file else None,
        results_file_expires_at=results_file[1] if results_file else None,
        upload=upload,
        file_name=job.upload.file_name if job.upload is not None else job.file_name,
        error=job.error,
        ended_early=job.ended_early,
        encoding=job.encoding.encoding if job.encoding else None,
        fallback_encoding=job.encoding.fallback if job.encoding and job.encoding.fallback_lines else None,
        fallback_lines=job.encoding.fallback_lines if job.encoding else 0,
        ignored_columns=job.ignored_columns,
        cost=cost_line(job.usage),
        owner=job.owner,
        throttled_by="table" if job.usage.throttled_requests else None,
    )


def stalled_work(job: Job, now: datetime) -> StalledWork | None:
    """The work ``job`` waits for that nobody is doing: a split whose file arrived but whose lease
    ran out (its invocation died and was not retried), or the results file of a complete job
    whose writer's lease ran out or that nobody claimed in time."""
    epoch = int(now.timestamp())
    if not job.split_done:
        lease = job.split.lease_until if job.split else None
        return "split" if job.file_arrived and (lease is None or lease < epoch) else None
    if not job.complete or job.results is not None or not job.bucket:
        return None
    if job.results_lease_until is not None:
        return "results" if job.results_lease_until < epoch else None
    last_progress = job.updated_at or job.created_at
    return "results" if now - last_progress > RESULTS_REQUEST_GRACE else None


def may_have_lost_its_upload_event(job: Job, now: datetime) -> bool:
    """Whether ``job`` still waits for its file long enough after it was accepted that the file may
    be in the bucket with its S3 event lost (every invocation for it failed before claiming the
    split): its status read then looks for the file and asks for the split itself."""
    return (
        job.kind == "upload"
        and job.upload is not None
        and not job.split_done
        and not job.file_arrived
        and bool(job.bucket)
        and now - job.created_at > UPLOAD_EVENT_GRACE
    )


def delivers_inline(job: Job, inline_rows: int) -> bool:
    """Whether ``GET /jobs/{id}/results`` answers with the CSV itself (small jobs, as before
    results files existed) rather than only with the file."""
    return job.kind == "body" and job.total <= inline_rows
