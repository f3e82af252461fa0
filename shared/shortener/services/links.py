"""A LinkService and what it needs, shared by the API and the poller."""

from functools import lru_cache

from shortener.access.blocklist import HostGuard
from shortener.access.store_blocklist import BlocklistStore
from shortener.access.takedown import BlockedHostsSnapshot, EdgeInvalidator
from shortener.jobs.store.items import JobItems
from shortener.links.codes import code_generator
from shortener.links.edge_cache import EdgeCache
from shortener.links.management import LinkManager
from shortener.links.shortening import LinkService
from shortener.links.store import LinksStore
from shortener.links.store_changes import LinkChangesStore
from shortener.links.store_listing import LinkIndex
from shortener.services.quotas import daily_quota
from shortener.settings import ApiSettings, PollerSettings, WorkerSettings


def link_service(settings: ApiSettings | PollerSettings | WorkerSettings) -> LinkService:
    """A LinkService over the links table that ``settings`` names."""
    redirects = settings if isinstance(settings, ApiSettings) else None
    return LinkService(
        LinksStore(settings.LINKS_TABLE),
        code_generator(settings.CODE_ALPHABET, settings.CODE_KEY),
        strategy=settings.CODE_STRATEGY,
        find_if_exists=settings.FIND_IF_EXISTS,
        id_block_size=settings.ID_BLOCK_SIZE,
        cache_seconds=redirects.REDIRECT_CACHE_SECONDS if redirects else 0,
        cache_size=redirects.REDIRECT_CACHE_SIZE if redirects else 0,
        cache_check_seconds=redirects.REDIRECT_CACHE_CHECK_SECONDS if redirects else 0,
        guard=host_guard(settings),
        blocked_hosts=blocked_hosts(redirects) if redirects else None,
        # Only the API's links count here; a job's rows count as its file is split.
        quota=daily_quota(redirects) if redirects else None,
    )


@lru_cache(maxsize=1)
def _snapshot(table: str, refresh_seconds: float) -> BlockedHostsSnapshot:
    return BlockedHostsSnapshot(BlocklistStore(table), refresh_seconds=refresh_seconds)


def blocked_hosts(settings: ApiSettings) -> BlockedHostsSnapshot | None:
    """The container's snapshot of the blocklist that redirects check (one per container)."""
    if not settings.BLOCKLIST_TABLE:
        return None
    return _snapshot(settings.BLOCKLIST_TABLE, settings.BLOCKLIST_REFRESH_SECONDS)


def host_guard(settings: ApiSettings | PollerSettings | WorkerSettings) -> HostGuard | None:
    """The blocklist check, when the stack has a blocklist table."""
    return HostGuard(BlocklistStore(settings.BLOCKLIST_TABLE)) if settings.BLOCKLIST_TABLE else None


def link_manager(settings: ApiSettings | WorkerSettings, service: LinkService) -> LinkManager:
    """The link-management rules over the links table that ``settings`` names."""
    return LinkManager(
        LinksStore(settings.LINKS_TABLE),
        LinkChangesStore(settings.LINKS_TABLE),
        LinkIndex(settings.LINKS_TABLE),
        service,
        redirect_status=settings.REDIRECT_STATUS,
        jobs=JobItems(settings.JOBS_TABLE) if settings.JOBS_TABLE else None,
        # The API's changes, one request each; a batch invalidates each page's changes in one
        # request instead (shortener.jobs.batches).
        edge=edge_invalidator(settings) if isinstance(settings, ApiSettings) else None,
    )


def edge_invalidator(settings: ApiSettings) -> EdgeInvalidator | None:
    """What invalidates changed codes at the edge (None without the edge)."""
    cache = edge_cache(settings)
    return cache.invalidate if cache is not None else None


def edge_cache(settings: ApiSettings | WorkerSettings) -> EdgeCache | None:
    """The edge's cache (None without the edge)."""
    return EdgeCache(settings.EDGE_DISTRIBUTION) if settings.EDGE_DISTRIBUTION else None
