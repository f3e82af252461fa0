"""The files function's services, one per container."""

from functools import lru_cache

from shortener.dal.files import BulkFiles, FileChangedError
from shortener.dal.invoke import FilesFunction
from shortener.dal.jobs import JobsStore
from shortener.dal.queue import BulkQueue
from shortener.dal.usage import metering
from shortener.logic.bulk.results import ResultsWriter
from shortener.logic.bulk.split import SplitOptions, Splitter
from shortener.logic.labels import LabelsWriter
from shortener.observability import logger
from shortener.services.loops import work_loops
from shortener.settings import files_settings


@lru_cache(maxsize=1)
def splitter() -> Splitter:
    """The splitter of uploaded files."""
    settings = files_settings()
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


@lru_cache(maxsize=1)
def labels_writer() -> LabelsWriter:
    """The writer of a job's QR labels archive."""
    return LabelsWriter(JobsStore(files_settings().JOBS_TABLE), BulkFiles())


@lru_cache(maxsize=1)
def results_writer() -> ResultsWriter:
    """The writer of results files."""
    settings = files_settings()
    return ResultsWriter(
        JobsStore(settings.JOBS_TABLE),
        BulkFiles(),
        lease_seconds=settings.RESULTS_LEASE_SECONDS,
        metering=metering(settings.AWS_LAMBDA_FUNCTION_MEMORY_SIZE),
    )
