"""The jobs worker's services, one per container."""

from functools import lru_cache

from shortener import aws
from shortener.aws_usage import metering
from shortener.clicks.compaction import EventCompactor
from shortener.clicks.erasure import EventEraser
from shortener.clicks.event_store import kept_events
from shortener.clicks.export_files import ExportFileWriter
from shortener.clicks.store import ClicksStore
from shortener.clicks.store_erasures import ErasureRecords
from shortener.clicks.store_exports import ExportRecords
from shortener.jobs.batches import BatchRunner
from shortener.jobs.batches_model import Batch
from shortener.jobs.bucket import BulkFiles, FileChangedError
from shortener.jobs.click_reports import ClickReportWriter, job_event_totals
from shortener.jobs.events import JobEndAnnouncer, job_ended_detail
from shortener.jobs.events_bus import JobEventsBus, JobTopics
from shortener.jobs.invoke import JobsWorker
from shortener.jobs.labels import LabelsOptions, LabelsWriter
from shortener.jobs.model import Job
from shortener.jobs.results import ResultsWriter
from shortener.jobs.split import SplitOptions, Splitter
from shortener.jobs.store import JobsStore
from shortener.jobs.store.batches import BatchStore, JobCodes, TaggedLinks
from shortener.links.stage_cache import StageCache
from shortener.links.store_listing import LinkIndex
from shortener.loops.queue import BulkQueue
from shortener.observability import logger
from shortener.services import links
from shortener.services.loops import work_loops
from shortener.services.quotas import daily_quota
from shortener.services.webhooks import webhook_announcer
from shortener.settings import worker_settings
from shortener.webhooks.announce import batch_completed


@lru_cache(maxsize=1)
def splitter() -> Splitter:
    """The splitter of uploaded files."""
    settings = worker_settings()
    return Splitter(
        JobsStore(settings.JOBS_TABLE),
        BulkFiles(),
        BulkQueue(),
        settings.BULK_QUEUE_URL,
        JobsWorker(settings.AWS_LAMBDA_FUNCTION_NAME),
        loops=work_loops(settings),
        quota=daily_quota(settings),
        options=SplitOptions(
            rows_per_message=settings.BULK_ROWS_PER_MESSAGE,
            message_bytes=settings.BULK_MESSAGE_BYTES,
            checkpoint_messages=settings.SPLIT_CHECKPOINT_MESSAGES,
            handover_seconds=settings.SPLIT_HANDOVER_SECONDS,
        ),
        metering=metering(settings.AWS_LAMBDA_FUNCTION_MEMORY_SIZE),
        is_file_changed=lambda exc: isinstance(exc, FileChangedError),
        logger=logger,
    )


@lru_cache(maxsize=1)
def batch_runner() -> BatchRunner:
    """The runner of batches of link changes (POST /links/batch)."""
    settings = worker_settings()
    service = links.link_service(settings)
    return BatchRunner(
        BatchStore(settings.JOBS_TABLE),
        links.link_manager(settings, service),
        job_codes=JobCodes(settings.JOBS_TABLE),
        owner_links=LinkIndex(settings.LINKS_TABLE),
        tagged_links=TaggedLinks(settings.LINKS_TABLE),
        start=JobsWorker(settings.AWS_LAMBDA_FUNCTION_NAME).run_batch,
        stage_cache_for=lambda base_url: StageCache(base_url, settings.AWS_REGION).invalidate,
        policy=settings.url_policy(),
        retention_days=settings.JOB_RETENTION_DAYS,
        on_stale_cache=lambda code: logger.error(
            "The stage cache entry was not refreshed", extra={"code": code}
        ),
        edge=links.edge_cache(settings),
        on_ended=_announce_batch,
    )


def _announce_batch(batch: Batch) -> None:
    announcer = webhook_announcer(worker_settings())
    if announcer is not None:
        announcer.announce(batch.owner, "batch.completed", lambda: batch_completed(batch))


def _announce_job(job: Job) -> None:
    announcer = webhook_announcer(worker_settings())
    if announcer is not None:
        announcer.announce(job.owner, "job.completed", lambda: job_ended_detail(job).model_dump(mode="json"))


@lru_cache(maxsize=1)
def labels_writer() -> LabelsWriter:
    """The builder of a job's QR labels archive, continued by a new invocation of the worker."""
    settings = worker_settings()
    return LabelsWriter(
        JobsStore(settings.JOBS_TABLE),
        BulkFiles(),
        JobsWorker(settings.AWS_LAMBDA_FUNCTION_NAME),
        LabelsOptions(handover_seconds=settings.LABELS_HANDOVER_SECONDS),
    )


@lru_cache(maxsize=1)
def results_writer() -> ResultsWriter:
    """The writer of results files."""
    settings = worker_settings()
    return ResultsWriter(
        JobsStore(settings.JOBS_TABLE),
        BulkFiles(),
        lease_seconds=settings.RESULTS_LEASE_SECONDS,
        metering=metering(settings.AWS_LAMBDA_FUNCTION_MEMORY_SIZE),
        # The job-ended event on the account's default bus, and on the job's own topic if it named one.
        on_ended=JobEndAnnouncer(JobEventsBus(), logger, JobTopics(), also=_announce_job),
    )


@lru_cache(maxsize=1)
def click_report_writer() -> ClickReportWriter:
    """The builder of jobs' click report files (docs/clicks.md)."""
    settings = worker_settings()
    events = kept_events(
        settings.CLICK_EVENTS_WORKGROUP,
        settings.CLICK_EVENTS_DATABASE,
        settings.CLICK_EVENTS_TABLE,
        settings.CLICK_ANSWERS_TABLE,
    )
    return ClickReportWriter(
        JobsStore(settings.JOBS_TABLE),
        ClicksStore(settings.CLICKS_TABLE),
        BulkFiles(),
        # Where the stack keeps no counters, a job's totals are asked of its click events.
        None if settings.CLICK_COUNTERS else job_event_totals(events),
    )


@lru_cache(maxsize=1)
def click_export_writer() -> ExportFileWriter:
    """The writer of click exports' files from their queries' answers."""
    return ExportFileWriter(aws.s3(), ExportRecords(worker_settings().CLICKS_TABLE))


@lru_cache(maxsize=1)
def event_eraser() -> EventEraser:
    """The eraser of click events (DELETE /clicks) from the click events bucket."""
    settings = worker_settings()
    return EventEraser(
        aws.s3(),
        settings.CLICK_EVENTS_BUCKET,
        ErasureRecords(settings.CLICKS_TABLE),
        JobsWorker(settings.AWS_LAMBDA_FUNCTION_NAME).erase_clicks,
    )


@lru_cache(maxsize=1)
def event_compactor() -> EventCompactor:
    """The hourly compaction of the click events bucket's settled days."""
    settings = worker_settings()
    return EventCompactor(aws.s3(), settings.CLICK_EVENTS_BUCKET, ErasureRecords(settings.CLICKS_TABLE))
