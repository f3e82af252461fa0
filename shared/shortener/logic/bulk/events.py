"""Telling the world a bulk job ended: the job-ended event (``shortener.models.job_events``) once
its results file is recorded, so a program that started a job need not poll for its end."""

from typing import Any, Protocol

from shortener.models.job_events import JobEndedDetail, JobEventNotPutError, JobResultsLocation
from shortener.models.jobs import Job


class JobEventsPort(Protocol):
    """Where job events go (``shortener.dal.job_events.JobEventsBus``, or a fake)."""

    def job_ended(self, detail: JobEndedDetail, resources: list[str]) -> None: ...


class Logger(Protocol):
    def exception(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


def job_ended_detail(job: Job) -> JobEndedDetail:
    """The event's detail for ``job``, whose results file is recorded."""
    if job.results is None:
        raise ValueError(f"job {job.job_id} has no results file yet")
    status_url = f"{job.base_url}jobs/{job.job_id}"
    return JobEndedDetail(
        job_id=job.job_id,
        owner=job.owner,
        status=job.status,
        total=job.total,
        succeeded=job.succeeded,
        failed=job.failed,
        created_at=job.created_at,
        ended_at=job.results.written_at,
        status_url=status_url,
        results=JobResultsLocation(
            results_url=status_url + "/results",
            bucket=job.bucket,
            key=job.results.key,
            rows=job.results.rows,
            size=job.results.size,
        ),
        error=job.error,
    )


class JobEndAnnouncer:
    """Puts the job-ended event. The results file is recorded first (a consumer that fetches the
    results at once finds them); an event that EventBridge did not take is logged with the job id,
    and never fails the job."""

    def __init__(self, events: JobEventsPort, logger: Logger) -> None:
        self._events = events
        self._logger = logger

    def __call__(self, job: Job) -> None:
        detail = job_ended_detail(job)
        resources = [f"arn:aws:s3:::{detail.results.bucket}/{detail.results.key}"]
        try:
            self._events.job_ended(detail, resources)
        except JobEventNotPutError:
            self._logger.exception("The job-ended event was not put", extra={"job_id": job.job_id})
