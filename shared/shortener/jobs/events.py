"""Telling the world a bulk job ended: the job-ended event (``shortener.jobs.events_model``) once
its results file is recorded, so a program that started a job need not poll for its end."""

from collections.abc import Callable
from typing import Any, Protocol

from shortener.jobs.events_model import JobEndedDetail, JobEventNotPutError, JobResultsLocation
from shortener.jobs.model import Job


class JobEventsPort(Protocol):
    """Where job events go (``shortener.jobs.events_bus.JobEventsBus``, or a fake)."""

    def job_ended(self, detail: JobEndedDetail, resources: list[str]) -> None: ...


class JobTopicsPort(Protocol):
    """The SNS topics jobs named (``shortener.jobs.events_bus.JobTopics``, or a fake)."""

    def job_ended(self, topic_arn: str, detail: JobEndedDetail) -> None: ...


class Logger(Protocol):
    def exception(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


def job_ended_detail(job: Job) -> JobEndedDetail:
    """The event's detail for ``job``, whose results file is recorded."""
    if job.results is None:
        raise ValueError(f"job {job.job_id} has no results file yet")
    status_url = f"{job.api_url or job.base_url}jobs/{job.job_id}"
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
    """Puts the job-ended event, and publishes it to the SNS topic the job named (if any). The
    results file is recorded first (a consumer that fetches the results at once finds them); an
    event or message not taken is logged with the job id, and never fails the job."""

    def __init__(
        self,
        events: JobEventsPort,
        logger: Logger,
        topics: JobTopicsPort | None = None,
        also: Callable[[Job], None] | None = None,
    ) -> None:
        self._events = events
        self._logger = logger
        self._topics = topics
        # Told after the event (the owners' job.completed webhooks).
        self._also = also

    def __call__(self, job: Job) -> None:
        detail = job_ended_detail(job)
        resources = [f"arn:aws:s3:::{detail.results.bucket}/{detail.results.key}"]
        try:
            self._events.job_ended(detail, resources)
        except JobEventNotPutError:
            self._logger.exception("The job-ended event was not put", extra={"job_id": job.job_id})
        if job.notify_topic and self._topics is not None:
            try:
                self._topics.job_ended(job.notify_topic, detail)
            except JobEventNotPutError:
                self._logger.exception(
                    "The job-ended message was not published",
                    extra={"job_id": job.job_id, "topic": job.notify_topic},
                )
        if self._also is not None:
            self._also(job)
