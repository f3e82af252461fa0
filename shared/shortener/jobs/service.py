"""What the API does with jobs, one method per route: start one (a CSV in the body, or a direct
upload to S3), and, for a job its caller may see, its status, its results, its click report and
its QR labels. Every read finds the job through ``JobQueries.find`` (the job or JobNotFoundError:
another owner's job is no job at all), and a read of a job whose worker died asks for the work
again, so a job never waits on a lost event."""

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from shortener import clock
from shortener.access.model import Caller
from shortener.clicks.model import ReportState
from shortener.exceptions import ServiceUnavailableError
from shortener.http.paging import decode_cursor, encode_cursor, page_size
from shortener.jobs import status
from shortener.jobs.click_reports import (
    BUILD_UNDER_WAY,
    JobTotals,
    TotalsReader,
    report_delivery,
    report_key,
    report_text,
)
from shortener.jobs.csv_reader import read_upload
from shortener.jobs.labels import labels_key, labels_state
from shortener.jobs.metering import Metering, null_metering
from shortener.jobs.model import Job, RowOutcome
from shortener.jobs.quotas import DailyQuota
from shortener.jobs.results import ending_line, results_page
from shortener.jobs.submit import (
    BulkOptions,
    JobOrigin,
    JobRecords,
    MessageSender,
    UploadSigner,
    WorkLoops,
    create_upload_job,
    is_job_id,
    job_for,
    submit_job,
)
from shortener.jobs.tasks_model import LabelsRequest, SplitRequest
from shortener.jobs.view_model import DirectUploadRequest, JobList, JobStatusView, PresignedUpload
from shortener.links.management import require_key
from shortener.links.qr_model import QrFormat


class JobReads(Protocol):
    """What reading jobs needs of the jobs table (``shortener.jobs.store.JobsStore``)."""

    def get_job(self, job_id: str) -> Job | None: ...
    def list_jobs(self, owner: str, *, before: str | None, limit: int) -> tuple[list[Job], str | None]: ...
    def iter_chunk_outcomes(
        self, job_id: str, from_chunk: int = 0
    ) -> Iterator[tuple[int, list[RowOutcome]]]: ...


class JobFiles(Protocol):
    """What reading jobs needs of the bulk bucket (``shortener.jobs.bucket.BulkFiles``)."""

    def download_url(
        self, bucket: str, key: str, file_name: str, expires_in: int, *, content_type: str = ...
    ) -> tuple[str, datetime]: ...
    def uploaded_etag(self, bucket: str, key: str) -> str | None: ...
    def modified_at(self, bucket: str, key: str) -> datetime | None: ...


class WorkerTasks(Protocol):
    """The jobs worker, asked for work asynchronously (``shortener.jobs.invoke.JobsWorker``)."""

    def continue_split(self, request: SplitRequest) -> None: ...
    def request_results(self, job_id: str) -> None: ...
    def request_click_report(self, job_id: str) -> None: ...
    def request_labels(self, request: LabelsRequest) -> None: ...


class ClickReportRecords(TotalsReader, Protocol):
    """What a job's click report needs of the clicks table (``shortener.clicks.store.ClicksStore``)."""

    def report_state(self, job_id: str) -> ReportState | None: ...
    def request_report(self, job_id: str, now: datetime, under_way: timedelta) -> bool: ...


@dataclass(frozen=True, slots=True)
class CsvAnswer:
    """A CSV answered in the response itself; ``next_chunk``: where the next page starts."""

    text: str
    file_name: str
    next_chunk: int | None = None


@dataclass(frozen=True, slots=True)
class FileLink:
    """A presigned link to a file in the bulk bucket, and when it expires."""

    url: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class NotReady:
    """The file is being made (or waits for the job): ask again later. ``error``: a stable word."""

    error: str
    message: str


@dataclass(frozen=True, slots=True)
class JobReadOptions:
    """How jobs' files are served: presigned links' lifetime, and up to how many rows a body
    upload's results and click report are answered inline."""

    url_seconds: int = 3600
    inline_rows: int = 20_000
    results_page_bytes: int = 5_000_000


class JobQueries:
    """A caller's jobs: find one or raise, list them, and each job's status, results, click report
    and QR labels. ``worker``: None where the stack has no jobs worker (no work is restarted);
    ``clicks``: None where it counts no clicks."""

    def __init__(
        self,
        jobs: JobReads,
        files: JobFiles,
        worker: WorkerTasks | None,
        *,
        clicks: Callable[[], ClickReportRecords] | None = None,
        job_totals: JobTotals | None = None,
        options: JobReadOptions = JobReadOptions(),
        now: Callable[[], datetime] = clock.now,
        logger: logging.Logger | Any = None,
    ) -> None:
        self._jobs = jobs
        self._files = files
        self._worker = worker
        self._clicks = clicks
        # Where the stack keeps no counters: a job's totals from its click events.
        self._job_totals = job_totals
        self._options = options
        self._now = now
        # The container's Powertools Logger in Lambda (logic does not import observability).
        self._log = logger or logging.getLogger(__name__)

    def find(self, caller: Caller, job_id: str) -> Job:
        """The job ``job_id`` if ``caller`` may see it, else JobNotFoundError (a malformed id costs
        no database call)."""
        job = self._jobs.get_job(job_id) if is_job_id(job_id) else None
        return job_for(caller, job, job_id)

    def page(self, caller: Caller, *, cursor: str | None, limit: Callable[[], int], base_url: str) -> JobList:
        """A page of the caller's jobs, newest first (ForbiddenError without a key, before
        ``limit``, the query's page size, is read)."""
        require_key(caller)
        found, position = self._jobs.list_jobs(
            caller.owner_id, before=decode_cursor(cursor), limit=page_size(limit())
        )
        return JobList(
            jobs=[status.status_view(job, results_url=results_url(base_url, job.job_id)) for job in found],
            next_cursor=encode_cursor(position) if position else None,
        )

    def status(self, caller: Caller, job_id: str, base_url: str) -> JobStatusView:
        """The job's progress; stalled work is asked for again first."""
        job = self.find(caller, job_id)
        self._restart_stalled_work(job)
        return status.status_view(
            job, results_url=results_url(base_url, job.job_id), results_file=self._results_file(job)
        )

    def results(
        self, caller: Caller, job_id: str, base_url: str, from_chunk: Callable[[], int] = lambda: 0
    ) -> CsvAnswer | FileLink | NotReady:
        """Small body uploads: the CSV (a page from ``from_chunk``, read only then: a file has no
        pages), also while running. Larger jobs: the results file once written, else NotReady
        (stalled work asked for again)."""
        job = self.find(caller, job_id)
        if status.delivers_inline(job, self._options.inline_rows):
            page = results_page(
                self._jobs.iter_chunk_outcomes(job.job_id, from_chunk()),
                job.short_urls(base_url),
                max_bytes=self._options.results_page_bytes,
                ending=ending_line(job) if job.complete else "",
            )
            return CsvAnswer(page.text, f"{job.job_id}.csv", page.next_chunk)
        written = self._results_file(job)
        if written is not None:
            return FileLink(*written)
        self._restart_stalled_work(job)
        message = (
            f"The results of this job are written as one file once every row is done ({job.processed:,} "
            f"of {job.total:,} so far); ask again in a few seconds."
            if not job.complete
            else "The results file is being written; ask again in a few seconds."
        )
        return NotReady("results_not_ready", message)

    def click_report(self, caller: Caller, job_id: str, base_url: str) -> CsvAnswer | FileLink | NotReady:
        """The job's clicks per row: the CSV itself for up to ``inline_rows`` rows; for larger jobs
        the report file, built on request (NotReady while it is built)."""
        job = self.find(caller, job_id)
        if self._clicks is None:
            raise ServiceUnavailableError("This stack counts no clicks (it has no clicks table).")
        clicks = self._clicks()
        if job.total <= self._options.inline_rows:
            reader = self._job_totals(job) if self._job_totals is not None else clicks
            urls = job.short_urls(job.base_url or base_url)
            text = report_text(self._jobs.iter_chunk_outcomes(job.job_id), reader, urls)
            return CsvAnswer(text, f"{job.job_id}-clicks.csv")
        now = self._now()
        delivery = report_delivery(clicks.report_state(job.job_id), now)
        if delivery == "file":
            return FileLink(
                *self._files.download_url(
                    job.bucket, report_key(job.job_id), f"{job.job_id}-clicks.csv", self._options.url_seconds
                )
            )
        if self._worker is None:
            raise ServiceUnavailableError("This stack cannot build click report files (no jobs worker).")
        if delivery == "build" and clicks.request_report(job.job_id, now, BUILD_UNDER_WAY):
            self._worker.request_click_report(job.job_id)
        return NotReady(
            "report_not_ready",
            f"The click report of this job ({job.total:,} rows) is being built; ask again soon.",
        )

    def labels(self, caller: Caller, job_id: str, image_format: QrFormat) -> FileLink | NotReady | None:
        """A done job's QR labels ZIP; None while it is being built (the first request, or one after
        a builder died, asks the worker to build it); NotReady while the job is not done."""
        job = self.find(caller, job_id)
        if job.status != "done" or not job.bucket:
            return NotReady("job_not_done", "The job's labels are made once the job is done; ask again then.")
        state = labels_state(self._files, job, image_format, self._now)
        if state == "ready":
            return FileLink(
                *self._files.download_url(
                    job.bucket,
                    labels_key(job.job_id, image_format),
                    f"{job.job_id}-qr-{image_format}.zip",
                    self._options.url_seconds,
                    content_type="application/zip",
                )
            )
        if state == "absent" and self._worker is not None:
            self._worker.request_labels(LabelsRequest(job_id=job.job_id, format=image_format))
        return None

    def _results_file(self, job: Job) -> tuple[str, datetime] | None:
        if job.results is None or not job.bucket:
            return None
        return self._files.download_url(
            job.bucket, job.results.key, f"{job.job_id}.csv", self._options.url_seconds
        )

    def _restart_stalled_work(self, job: Job) -> None:
        """A split or a results file whose worker died is asked for again (see status.stalled_work)."""
        worker = self._worker
        now = self._now()
        if worker is not None and job.upload is not None and status.may_have_lost_its_upload_event(job, now):
            etag = self._files.uploaded_etag(job.bucket, job.upload.key)
            if etag is not None:
                self._log.warning("Splitting an upload whose S3 event was lost", extra={"job_id": job.job_id})
                worker.continue_split(
                    SplitRequest(job_id=job.job_id, bucket=job.bucket, key=job.upload.key, etag=etag)
                )
            return
        stalled = status.stalled_work(job, now)
        if worker is None or stalled is None:
            return
        self._log.warning("Restarting stalled work", extra={"job_id": job.job_id, "work": stalled})
        if stalled == "results":
            worker.request_results(job.job_id)
        elif job.upload is not None and job.upload.etag is not None:
            worker.continue_split(
                SplitRequest(job_id=job.job_id, bucket=job.bucket, key=job.upload.key, etag=job.upload.etag)
            )


@dataclass(frozen=True, slots=True)
class UploadLimits:
    """How large an upload may be: in the body (bytes, rows), and straight to S3 (bytes; without a
    key, ``anonymous_bytes`` if set); how long a presigned PUT works."""

    body_bytes: int = 4_000_000
    body_rows: int = 100_000
    direct_bytes: int = 5 * 1024**3
    anonymous_bytes: int | None = None
    url_seconds: int = 3600


class JobSubmissions:
    """Starting jobs: a CSV in the body, queued at once; or a job waiting for its file in S3.
    ``check_code_key``: refuses rows that could not be shortened (the code key changed) before
    they wait in the queue; ``quota``: each owner's daily quota, if any."""

    def __init__(
        self,
        jobs: JobRecords,
        queue: MessageSender,
        files: UploadSigner,
        *,
        queue_url: str,
        options: BulkOptions,
        limits: UploadLimits,
        check_code_key: Callable[[], None],
        loops: Callable[[], WorkLoops | None] = lambda: None,
        quota: Callable[[], DailyQuota | None] = lambda: None,
        metering: Callable[[], Metering] = lambda: null_metering,
    ) -> None:
        self._jobs = jobs
        self._queue = queue
        self._files = files
        self._queue_url = queue_url
        self._options = options
        self._limits = limits
        self._check_code_key = check_code_key
        self._loops = loops
        self._quota = quota
        self._metering = metering

    def submit_csv(
        self, raw: bytes, content_type: str | None, origin: JobOrigin, defaults: Mapping[str, str]
    ) -> Job:
        """A job for the CSV ``raw`` (400, 413 or 415 if it cannot be read), its rows queued."""
        uploaded = read_upload(
            raw, content_type, max_bytes=self._limits.body_bytes, max_rows=self._limits.body_rows
        )
        self._check_code_key()
        return submit_job(
            uploaded.rows,
            jobs=self._jobs,
            queue=self._queue,
            queue_url=self._queue_url,
            origin=origin,
            options=self._options,
            loops=self._loops(),
            metering=self._metering(),
            encoding=uploaded.encoding,
            quota=self._quota(),
            size=len(raw),
            defaults=defaults,
            file_name=uploaded.file_name,
            ignored_columns=uploaded.ignored_columns,
        )

    def start_upload(
        self, request: DirectUploadRequest, origin: JobOrigin, defaults: Mapping[str, str]
    ) -> tuple[Job, PresignedUpload]:
        """A job waiting for its file, and a presigned PUT for it (503 without a bulk bucket)."""
        if not origin.bucket:
            raise ServiceUnavailableError("Direct uploads are not configured on this deployment.")
        return create_upload_job(
            request,
            jobs=self._jobs,
            files=self._files,
            origin=origin,
            options=self._options,
            url_seconds=self._limits.url_seconds,
            max_bytes=self._limits.direct_bytes,
            quota=self._quota(),
            anonymous_max_bytes=self._limits.anonymous_bytes,
            defaults=defaults,
        )


def results_url(base_url: str, job_id: str) -> str:
    """Where a job's results are read."""
    return status_url(base_url, job_id) + "/results"


def status_url(base_url: str, job_id: str) -> str:
    """Where a job's status is read."""
    return base_url + f"jobs/{job_id}"
