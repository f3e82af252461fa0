"""The API function's services, one per container (its redirect cache lives as long as the
container)."""

from functools import lru_cache

from shortener.dal.api_cache import StageCache
from shortener.dal.files import BulkFiles
from shortener.dal.invoke import FilesFunction
from shortener.dal.jobs import JobsStore
from shortener.dal.queue import BulkQueue
from shortener.dal.usage import metering
from shortener.logic.bulk.metering import Metering
from shortener.logic.link_management import LinkManager, StageCacheInvalidator
from shortener.logic.links import LinkService
from shortener.logic.scaling import WorkStarter
from shortener.services import links, loops
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
