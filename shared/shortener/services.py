"""The composition root: builds a container's services from its settings (the API's, once per
container)."""

from functools import lru_cache

from shortener.dal.blocklist import BlocklistStore
from shortener.dal.files import BulkFiles, FileChangedError
from shortener.dal.invoke import FilesFunction
from shortener.dal.jobs import JobsStore
from shortener.dal.link_changes import LinkChangesStore
from shortener.dal.link_listing import LinkIndex
from shortener.dal.links import LinksStore
from shortener.dal.loops import LoopsStore, LoopStarter
from shortener.dal.queue import BulkQueue
from shortener.dal.queue_metrics import QueueMetrics
from shortener.dal.usage import metering
from shortener.logic.blocklist import HostGuard
from shortener.logic.bulk.results import ResultsWriter
from shortener.logic.bulk.split import SplitOptions, Splitter
from shortener.logic.codes import code_generator
from shortener.logic.labels import LabelsWriter
from shortener.logic.link_management import LinkManager
from shortener.logic.links import LinkService
from shortener.logic.scaling import LoopBounds, LoopScaler, WorkStarter
from shortener.models.scaling import LoopTarget
from shortener.observability import logger
from shortener.settings import ApiSettings, FilesSettings, PollerSettings, WorkLoopsMixin, api_settings


def link_service(settings: ApiSettings | PollerSettings) -> LinkService:
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
    )


def host_guard(settings: ApiSettings | PollerSettings) -> HostGuard | None:
    """The blocklist check, when the stack has a blocklist table."""
    return HostGuard(BlocklistStore(settings.BLOCKLIST_TABLE)) if settings.BLOCKLIST_TABLE else None


def link_manager(settings: ApiSettings, service: LinkService) -> LinkManager:
    """The link-management rules over the links table that ``settings`` names."""
    return LinkManager(
        LinksStore(settings.LINKS_TABLE),
        LinkChangesStore(settings.LINKS_TABLE),
        LinkIndex(settings.LINKS_TABLE),
        service,
        redirect_status=settings.REDIRECT_STATUS,
    )


@lru_cache(maxsize=1)
def api_links() -> LinkService:
    """The API container's LinkService (its redirect cache lives as long as the container)."""
    return link_service(api_settings())


@lru_cache(maxsize=1)
def api_link_manager() -> LinkManager:
    """The API container's LinkManager."""
    return link_manager(api_settings(), api_links())


def work_loops(settings: ApiSettings | FilesSettings) -> WorkStarter | None:
    """What starts the loops for work queued on the bulk queue (None when no loop function is
    configured for it: then the alarms and the restarter do)."""
    queue_name = settings.BULK_QUEUE_URL.rstrip("/").rsplit("/", 1)[-1]
    function_name = settings.LOOP_FUNCTIONS.get(queue_name)
    if not function_name:
        return None
    scaler = LoopScaler(
        LoopsStore(settings.TOKENS_TABLE),
        LoopStarter(),
        QueueMetrics(),
        settings.LOOP_FUNCTIONS,
        loop_bounds(settings),
    )
    target = LoopTarget(queue_name=queue_name, queue_url=settings.BULK_QUEUE_URL, function_name=function_name)
    return WorkStarter(scaler, target, logger)


def loop_bounds(settings: WorkLoopsMixin) -> LoopBounds:
    return LoopBounds(settings.MIN_LOOPS, settings.MAX_LOOPS, settings.MESSAGES_PER_LOOP)


def splitter(settings: FilesSettings) -> Splitter:
    """The files function's splitter of uploaded files."""
    return Splitter(
        JobsStore(settings.JOBS_TABLE),
        BulkFiles(),
        BulkQueue(),
        settings.BULK_QUEUE_URL,
        FilesFunction(settings.AWS_LAMBDA_FUNCTION_NAME),
        loops=work_loops(settings),
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


def labels_writer(settings: FilesSettings) -> LabelsWriter:
    """The files function's writer of a job's QR labels archive."""
    return LabelsWriter(JobsStore(settings.JOBS_TABLE), BulkFiles())


def results_writer(settings: FilesSettings) -> ResultsWriter:
    """The files function's writer of results files."""
    return ResultsWriter(
        JobsStore(settings.JOBS_TABLE),
        BulkFiles(),
        lease_seconds=settings.RESULTS_LEASE_SECONDS,
        metering=metering(settings.AWS_LAMBDA_FUNCTION_MEMORY_SIZE),
    )
