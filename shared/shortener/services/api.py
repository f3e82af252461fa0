"""The API function's services, one per container (its redirect cache lives as long as the
container). Each is named for what the routes do with it; none hands a store to a handler."""

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from botocore.exceptions import ClientError

from shortener import aws
from shortener.access.takedown import HostTakedowns
from shortener.audit.store import AuditStore
from shortener.audit.trail import AuditTrail
from shortener.aws_usage import metering
from shortener.clicks.erasures import ClickErasures
from shortener.clicks.event_store import ClickEventStore, kept_events
from shortener.clicks.export_files import ExportFileRequest
from shortener.clicks.exports import ClickExports
from shortener.clicks.reports import ClickReports
from shortener.clicks.store import ClicksStore
from shortener.clicks.store_erasures import ErasureRecords
from shortener.clicks.store_exports import ExportRecords
from shortener.exceptions import ServiceUnavailableError, StorageThrottledError
from shortener.jobs.batches import Batches
from shortener.jobs.bucket import BulkFiles
from shortener.jobs.click_reports import job_event_totals
from shortener.jobs.invoke import JobsWorker
from shortener.jobs.service import JobQueries, JobReadOptions, JobSubmissions, UploadLimits
from shortener.jobs.store import JobsStore
from shortener.jobs.store.batches import BatchStore
from shortener.jobs.submit import BulkOptions
from shortener.links.bulk_create import BulkCreate
from shortener.links.codes import code_generator
from shortener.links.edge_cache import EdgeCache
from shortener.links.management import LinkManager, StageCacheInvalidator
from shortener.links.protection import PasswordTries
from shortener.links.shortening import LinkService
from shortener.links.stage_cache import StageCache
from shortener.links.store import LinksStore
from shortener.links.store_hosts import LinkHostScan
from shortener.links.store_listing import LinkIndex
from shortener.links.store_tries import MemoryPasswordTries, PasswordTriesStore
from shortener.links.unlocking import PasswordGate
from shortener.loops.queue import BulkQueue
from shortener.loops.scaling import WorkStarter
from shortener.observability import logger
from shortener.services import links, loops, quotas, webhooks
from shortener.settings import api_settings
from shortener.webhooks.announce import WebhookAnnouncer
from shortener.webhooks.endpoints import WebhookEndpoints
from shortener.webhooks.queue import WebhooksQueue
from shortener.webhooks.store import WebhooksStore

# A Lambda response is at most 6 MB; results beyond this continue on a next page (a Link header),
# which only small jobs with very long URLs need (larger jobs are served as a file).
RESULTS_PAGE_BYTES = 5_000_000


@lru_cache(maxsize=1)
def api_links() -> LinkService:
    """The API container's LinkService (its redirect cache lives as long as the container)."""
    return links.link_service(api_settings())


@lru_cache(maxsize=1)
def api_password_gate() -> PasswordGate:
    """The API container's opener of password links: wrong tries counted in the clicks table, so
    that every container agrees (in this container's memory on a stack without one)."""
    name = api_settings().CLICKS_TABLE
    tries: PasswordTries = PasswordTriesStore(name) if name else MemoryPasswordTries()
    return PasswordGate(api_links(), tries)


@lru_cache(maxsize=1)
def api_link_manager() -> LinkManager:
    """The API container's LinkManager."""
    return links.link_manager(api_settings(), api_links())


def short_link_base() -> str:
    """The base of short URLs when the request's own host is not it: the configured one, else the
    edge's host (docs/edge.md), else "" (the host each request came to)."""
    settings = api_settings()
    if settings.PUBLIC_BASE_URL:
        return settings.PUBLIC_BASE_URL
    edge = _api_edge()
    return (edge.base_url() if edge is not None else None) or ""


@lru_cache(maxsize=1)
def _api_edge() -> EdgeCache | None:
    """The edge's distribution, found once per container (None without the edge)."""
    return links.edge_cache(api_settings())


@lru_cache(maxsize=1)
def api_takedowns() -> HostTakedowns | None:
    """Blocking and unblocking hosts, with their links' takedown (None without a blocklist table)."""
    settings = api_settings()
    guard = api_links().guard
    if guard is None:
        return None
    return HostTakedowns(
        guard,
        LinkHostScan(settings.LINKS_TABLE),
        snapshot=links.blocked_hosts(settings),
        edge=links.edge_invalidator(settings),
    )


@lru_cache(maxsize=1)
def job_queries() -> JobQueries:
    """A caller's jobs: each one's status, results, click report and QR labels (the jobs, clicks
    and QR routes share it)."""
    settings = api_settings()
    return JobQueries(
        JobsStore(settings.JOBS_TABLE),
        BulkFiles(),
        _jobs_worker(),
        clicks=_click_counters,
        # Where the stack keeps no counters, a job's totals are asked of its click events.
        job_totals=None if settings.CLICK_COUNTERS else job_event_totals(_click_events()),
        options=JobReadOptions(
            url_seconds=settings.RESULTS_URL_SECONDS,
            inline_rows=settings.INLINE_RESULTS_ROWS,
            results_page_bytes=RESULTS_PAGE_BYTES,
        ),
        logger=logger,
    )


@lru_cache(maxsize=1)
def job_submissions() -> JobSubmissions:
    """Starting jobs: a CSV in the body, or a job waiting for its file in the bulk bucket."""
    settings = api_settings()
    return JobSubmissions(
        JobsStore(settings.JOBS_TABLE),
        BulkQueue(),
        BulkFiles(),
        queue_url=settings.BULK_QUEUE_URL,
        options=BulkOptions(
            rows_per_message=settings.BULK_ROWS_PER_MESSAGE,
            message_bytes=settings.BULK_MESSAGE_BYTES,
            retention_days=settings.JOB_RETENTION_DAYS,
        ),
        limits=UploadLimits(
            body_bytes=settings.MAX_UPLOAD_BYTES,
            body_rows=settings.MAX_UPLOAD_ROWS,
            direct_bytes=settings.MAX_DIRECT_UPLOAD_BYTES,
            anonymous_bytes=settings.ANONYMOUS_MAX_UPLOAD_BYTES or None,
            url_seconds=settings.UPLOAD_URL_SECONDS,
        ),
        check_code_key=lambda: api_links().check_code_key(),
        loops=_work_loops,
        quota=lambda: quotas.daily_quota(api_settings()),
        # What counts the work of an upload, for its job's usage.
        metering=lambda: metering(api_settings().AWS_LAMBDA_FUNCTION_MEMORY_SIZE),
    )


@lru_cache(maxsize=1)
def audit_trail() -> AuditTrail | None:
    """The audit log of changes, where the stack keeps one."""
    settings = api_settings()
    if not settings.AUDIT_TABLE:
        return None
    return AuditTrail(AuditStore(settings.AUDIT_TABLE), settings.AUDIT_RETENTION_DAYS)


@lru_cache(maxsize=1)
def api_announcer() -> WebhookAnnouncer | None:
    """Announcing link changes to their owners' webhooks, where the stack has them."""
    return webhooks.webhook_announcer(api_settings())


@lru_cache(maxsize=1)
def api_webhooks() -> WebhookEndpoints:
    """The caller's webhook endpoints."""
    settings = api_settings()
    if not settings.WEBHOOKS_TABLE or not settings.WEBHOOKS_QUEUE_URL:
        raise ServiceUnavailableError("This stack sends no webhooks (it has no webhooks table).")
    return WebhookEndpoints(
        WebhooksStore(settings.WEBHOOKS_TABLE),
        WebhooksQueue(settings.WEBHOOKS_QUEUE_URL),
        allow_loopback=settings.LOOPBACK_RECEIVERS,
    )


@lru_cache(maxsize=1)
def click_reports() -> ClickReports:
    """A link's clicks over a range, and the caller's most followed links."""
    return ClickReports(
        api_link_manager(),
        _kept_counters,
        events=_click_events,
        tagged=_tagged_codes,
        link_domains=_link_domains,
    )


@lru_cache(maxsize=1)
def click_exports() -> ClickExports:
    """Exports of the caller's click events (files in the click events bucket, written by the
    jobs worker from Athena's answers)."""
    return ClickExports(
        _click_events,
        lambda: ExportRecords(_click_counters().table_name),
        BulkFiles().download_url,
        _write_export_file,
        tagged=_tagged_codes,
    )


def click_erasures() -> ClickErasures:
    """Erasures of click events (DELETE /clicks), done by the jobs worker."""
    return ClickErasures(lambda: ErasureRecords(_click_counters().table_name), _erase_clicks)


def _erase_clicks(**asked: Any) -> None:
    worker = _jobs_worker()
    if worker is None:
        raise ServiceUnavailableError("This stack has no jobs worker to erase clicks.")
    worker.erase_clicks(**asked)


def _write_export_file(request: ExportFileRequest) -> None:
    worker = _jobs_worker()
    if worker is None:
        raise ServiceUnavailableError("This stack has no jobs worker to write exports.")
    worker.write_click_export(request)


# The most codes a click report by tag counts (the links a tag names, newest first).
MAX_TAGGED_CODES = 1000


def _link_domains(codes: Sequence[str]) -> dict[str, str | None]:
    """The domain of each code's link (None: the default domain), for the short URLs of reports."""
    links = LinksStore(api_settings().LINKS_TABLE).get_many(codes)
    return {code: link.domain for code, link in links.items()}


def _tagged_codes(owner: str, tag: str) -> list[str]:
    """The codes of the owner's newest links with the tag, at most MAX_TAGGED_CODES."""
    index = LinkIndex(api_settings().LINKS_TABLE)
    codes: list[str] = []
    before: str | None = None
    while len(codes) < MAX_TAGGED_CODES:
        page = index.list_links(owner, before=before, limit=min(250, MAX_TAGGED_CODES - len(codes)), tag=tag)
        codes += [link.code for link in page.links]
        if page.next_position is None:
            break
        before = page.next_position
    return codes


@lru_cache(maxsize=1)
def _click_events() -> ClickEventStore | None:
    """The click events, where the stack keeps them."""
    settings = api_settings()
    return kept_events(
        settings.CLICK_EVENTS_WORKGROUP,
        settings.CLICK_EVENTS_DATABASE,
        settings.CLICK_EVENTS_TABLE,
        settings.CLICK_ANSWERS_TABLE,
    )


@lru_cache(maxsize=1)
def _jobs_worker() -> JobsWorker | None:
    name = api_settings().FILES_FUNCTION
    return JobsWorker(name) if name else None


@lru_cache(maxsize=1)
def _work_loops() -> WorkStarter | None:
    return loops.work_loops(api_settings())


def stage_cache_invalidator(base_url: str) -> StageCacheInvalidator:
    """What refreshes one code's entry in the cache of the stage at ``base_url``."""
    return StageCache(base_url, api_settings().AWS_REGION).invalidate


@lru_cache(maxsize=1)
def api_batches() -> Batches:
    """Accepting batches of link changes and reporting on them (the jobs worker runs them)."""
    settings = api_settings()
    function = _jobs_worker()
    if function is None:
        raise ServiceUnavailableError("This stack has no jobs worker to run batches.")
    return Batches(
        BatchStore(settings.JOBS_TABLE),
        JobsStore(settings.JOBS_TABLE),
        function.run_batch,
        retention_days=settings.JOB_RETENTION_DAYS,
    )


def _kept_counters() -> ClicksStore | None:
    """The click counters; None where the stack keeps none (every report asks the events)."""
    return _click_counters() if api_settings().CLICK_COUNTERS else None


@lru_cache(maxsize=1)
def _click_counters() -> ClicksStore:
    """The reader of click counters (and of large jobs' click report state)."""
    name = api_settings().CLICKS_TABLE
    if not name:
        raise ServiceUnavailableError("This stack counts no clicks (it has no clicks table).")
    return ClicksStore(name)


@lru_cache(maxsize=1)
def api_bulk_links() -> BulkCreate:
    """The API container's shortener of ``POST /links/bulk`` calls."""
    settings = api_settings()
    return BulkCreate(
        LinksStore(settings.LINKS_TABLE),
        api_links(),
        code_generator(settings.CODE_ALPHABET, settings.CODE_KEY),
        strategy=settings.CODE_STRATEGY,
        find_if_exists=settings.FIND_IF_EXISTS,
        quota=quotas.daily_quota(settings),
    )


def answer_throttling_as_busy(
    app: APIGatewayRestResolver, answer: Callable[[StorageThrottledError], Response[str]]
) -> None:
    """Throttling that outlasted a call's retries, on any route, is answered as the busy service
    (``answer``, the route's answer to ``StorageThrottledError``: 503), never as the function's
    failure (API Gateway's 502). The stores that say so themselves raise it before this sees it."""

    @app.exception_handler(ClientError)
    def throttled(error: ClientError) -> Response[str]:
        if aws.is_throttling(error):
            return answer(StorageThrottledError(aws.THROTTLED_MESSAGE))
        raise error
