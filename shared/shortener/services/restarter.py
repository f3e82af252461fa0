"""The restarter's services, one per container."""

from collections.abc import Sequence
from dataclasses import asdict
from functools import lru_cache

from shortener.jobs.dead_letters import DeadLetterSettler
from shortener.jobs.invoke import JobsWorker
from shortener.jobs.store import JobsStore
from shortener.links.backfill import BackfillReport, PageReport, run_backfill
from shortener.links.store_backfill import TagIndexBackfillStore
from shortener.loops import healing
from shortener.loops.model import LoopInvocation
from shortener.loops.queue import BulkQueue
from shortener.loops.queue_metrics import QueueMetrics
from shortener.loops.scaling import LoopScaler
from shortener.loops.scaling_model import LoopTarget, RestarterReport
from shortener.loops.store import LoopsStore
from shortener.observability import logger
from shortener.services.loops import loop_scaler
from shortener.settings import restarter_settings


@lru_cache(maxsize=1)
def tokens() -> LoopsStore:
    return LoopsStore(restarter_settings().TOKENS_TABLE)


@lru_cache(maxsize=1)
def scaler() -> LoopScaler:
    return loop_scaler(restarter_settings(), tokens())


@lru_cache(maxsize=1)
def dead_letters() -> DeadLetterSettler:
    settings = restarter_settings()
    return DeadLetterSettler(
        JobsStore(settings.JOBS_TABLE),
        BulkQueue(),
        QueueMetrics(),
        retention_days=settings.JOB_RETENTION_DAYS,
        # A settlement that completes a job asks the jobs worker for its results file.
        results=JobsWorker(settings.FILES_FUNCTION) if settings.FILES_FUNCTION else None,
        last_attempt_delay_seconds=settings.LAST_ATTEMPT_DELAY_SECONDS,
    )


@lru_cache(maxsize=1)
def targets() -> list[LoopTarget]:
    # Queue URLs never change for a container: resolved once, not on every idle run.
    return scaler().targets()


def heal_and_reconcile() -> RestarterReport:
    """One scheduled run over this stack's queues and tokens (shortener.loops.healing)."""
    return healing.heal_and_reconcile(
        scaler(),
        tokens(),
        targets(),
        restarter_settings().STALE_HEARTBEAT_SECONDS,
        dead_letters=dead_letters(),
    )


def revive_failed_loops(failed: Sequence[LoopInvocation]) -> RestarterReport:
    """Revive the loops whose invocations ``failed`` (shortener.loops.healing)."""
    functions = {target.queue_url: target.function_name for target in targets()}
    return healing.revive_failed_loops(tokens(), scaler().starter, functions, failed)


@lru_cache(maxsize=1)
def tag_backfill() -> TagIndexBackfillStore | None:
    table = restarter_settings().LINKS_TABLE
    return TagIndexBackfillStore(table) if table else None


def backfill_tag_index() -> BackfillReport | None:
    """Go on with the tag index's backfill for this run's share of time (shortener.links.backfill);
    None without a links table. A line in the log per page scanned."""
    store = tag_backfill()
    if store is None:
        return None
    return run_backfill(store, restarter_settings().TAG_BACKFILL_SECONDS, on_page=_log_page)


def _log_page(page: PageReport) -> None:
    logger.info("Tag index backfill: a page scanned", extra=asdict(page))
