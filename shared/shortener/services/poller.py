"""The poller's service: its loop over the bulk queue, one per container."""

from functools import lru_cache

from shortener.aws_usage import metering
from shortener.jobs.bulk import ChunkProcessor
from shortener.jobs.invoke import JobsWorker
from shortener.jobs.store import JobsStore
from shortener.links.codes import code_generator
from shortener.links.store import LinksStore
from shortener.loops.pacing import PacedHeartbeats, WritePacer
from shortener.loops.poller import LoopOptions, PollLoop
from shortener.loops.queue import BulkQueue
from shortener.loops.store import LoopsStore, LoopStarter
from shortener.observability import logger, metrics
from shortener.services.links import link_service
from shortener.settings import poller_settings


@lru_cache(maxsize=1)
def poll_loop() -> PollLoop:
    settings = poller_settings()
    # One pacer per container: the loop's write rate, adapted to the table's throttles; its
    # heartbeats tell the scaler when the table throttled it.
    pacer = WritePacer() if settings.WRITE_PACING else None
    loops = LoopsStore(settings.TOKENS_TABLE)
    processor = ChunkProcessor(
        LinksStore(settings.LINKS_TABLE, pacer=pacer),
        JobsStore(settings.JOBS_TABLE),
        link_service(settings),
        code_generator(settings.CODE_ALPHABET, settings.CODE_KEY),
        settings.url_policy(),
        strategy=settings.CODE_STRATEGY,
        find_if_exists=settings.FIND_IF_EXISTS,
        retention_days=settings.JOB_RETENTION_DAYS,
        threads=settings.WRITE_THREADS,
        # The count that completes a job asks the jobs worker for its results file.
        results=JobsWorker(settings.FILES_FUNCTION) if settings.FILES_FUNCTION else None,
        metering=metering(settings.AWS_LAMBDA_FUNCTION_MEMORY_SIZE),
    )
    return PollLoop(
        PacedHeartbeats(loops, pacer) if pacer is not None else loops,
        BulkQueue(),
        LoopStarter(),
        processor,
        metrics=metrics,
        logger=logger,
        options=LoopOptions(
            reinvoke_margin_seconds=settings.REINVOKE_MARGIN_SECONDS,
            receive_wait_seconds=settings.RECEIVE_WAIT_SECONDS,
            heartbeat_interval_seconds=settings.HEARTBEAT_INTERVAL_SECONDS,
            visibility_timeout_seconds=settings.VISIBILITY_TIMEOUT_SECONDS,
            metrics_flush_seconds=settings.METRICS_FLUSH_SECONDS,
        ),
    )
