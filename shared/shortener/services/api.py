"""The API function's services, one per container (its redirect cache lives as long as the
container)."""

from functools import lru_cache

from shortener.access.takedown import HostTakedowns
from shortener.aws_usage import metering
from shortener.clicks.store import ClicksStore
from shortener.exceptions import ServiceUnavailableError
from shortener.jobs.batches import Batches
from shortener.jobs.bucket import BulkFiles
from shortener.jobs.invoke import FilesFunction
from shortener.jobs.metering import Metering
from shortener.jobs.quotas import DailyQuota
from shortener.jobs.store import JobsStore
from shortener.jobs.store.batches import BatchStore
from shortener.links.bulk_create import InlineBulk
from shortener.links.codes import code_generator
from shortener.links.management import LinkManager, StageCacheInvalidator
from shortener.links.shortening import LinkService
from shortener.links.stage_cache import StageCache
from shortener.links.store import LinksStore
from shortener.links.store_hosts import LinkHostScan
from shortener.loops.queue import BulkQueue
from shortener.loops.scaling import WorkStarter
from shortener.services import links, loops, quotas
from shortener.settings import api_settings


@lru_cache(maxsize=1)
def api_links() -> LinkService:
    """The API container's LinkService (its redirect cache lives as long as the container)."""
    return links.link_service(api_settings())


@lru_cache(maxsize=1)
def api_link_manager() -> LinkManager:
    """The API container's LinkManager."""
    return links.link_manager(api_settings(), api_links())


@lru_cache(maxsize=1)
def api_takedowns() -> HostTakedowns | None:
    """Blocking and unblocking hosts, with their links' takedown (None without a blocklist table)."""
    settings = api_settings()
    guard = api_links().guard
    if guard is None:
        return None
    return HostTakedowns(guard, LinkHostScan(settings.LINKS_TABLE), snapshot=links.blocked_hosts(settings))


def daily_quota() -> DailyQuota | None:
    """Each owner's daily quota of bulk rows and bytes."""
    return quotas.daily_quota(api_settings())


@lru_cache(maxsize=1)
def jobs() -> JobsStore:
    return JobsStore(api_settings().JOBS_TABLE)


@lru_cache(maxsize=1)
def queue() -> BulkQueue:
    return BulkQueue()


@lru_cache(maxsize=1)
def files() -> BulkFiles:
    return BulkFiles()


@lru_cache(maxsize=1)
def files_function() -> FilesFunction | None:
    name = api_settings().FILES_FUNCTION
    return FilesFunction(name) if name else None


@lru_cache(maxsize=1)
def work_loops() -> WorkStarter | None:
    return loops.work_loops(api_settings())


def bulk_metering() -> Metering:
    """What counts the work of an upload, for its job's usage."""
    return metering(api_settings().AWS_LAMBDA_FUNCTION_MEMORY_SIZE)


def stage_cache_invalidator(base_url: str) -> StageCacheInvalidator:
    """What refreshes one code's entry in the cache of the stage at ``base_url``."""
    return StageCache(base_url, api_settings().AWS_REGION).invalidate


@lru_cache(maxsize=1)
def api_batches() -> Batches:
    """Accepting batches of link changes and reporting on them (the files function runs them)."""
    settings = api_settings()
    function = files_function()
    if function is None:
        raise ServiceUnavailableError("This stack has no files function to run batches.")
    return Batches(
        BatchStore(settings.JOBS_TABLE),
        jobs(),
        function.run_batch,
        retention_days=settings.JOB_RETENTION_DAYS,
    )


@lru_cache(maxsize=1)
def api_clicks() -> ClicksStore:
    """The reader of click counters (and of large jobs' click report state)."""
    name = api_settings().CLICKS_TABLE
    if not name:
        raise ServiceUnavailableError("This stack counts no clicks (it has no clicks table).")
    return ClicksStore(name)


@lru_cache(maxsize=1)
def api_bulk_links() -> InlineBulk:
    """The API container's shortener of ``POST /links/bulk`` calls."""
    settings = api_settings()
    return InlineBulk(
        LinksStore(settings.LINKS_TABLE),
        api_links(),
        code_generator(settings.CODE_ALPHABET, settings.CODE_KEY),
        strategy=settings.CODE_STRATEGY,
        find_if_exists=settings.FIND_IF_EXISTS,
    )
