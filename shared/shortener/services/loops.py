"""The LoopScaler (built here only), used by the scaler, the restarter, and the functions that
queue work and start the loops it needs (the API and the jobs worker)."""

from shortener.loops.queue_metrics import QueueMetrics
from shortener.loops.scaling import LoopBounds, LoopScaler, WorkStarter
from shortener.loops.scaling_model import LoopTarget
from shortener.loops.store import LoopsStore, LoopStarter
from shortener.observability import logger
from shortener.settings import (
    ApiSettings,
    LoopBoundsMixin,
    RestarterSettings,
    ScalerSettings,
    WorkerSettings,
)


def loop_scaler(
    settings: ApiSettings | WorkerSettings | ScalerSettings | RestarterSettings,
    tokens: LoopsStore | None = None,
) -> LoopScaler:
    """The loops of the queues ``settings.LOOP_FUNCTIONS`` names, over its tokens table (or
    ``tokens``, a store of it the caller also uses)."""
    return LoopScaler(
        tokens if tokens is not None else LoopsStore(settings.TOKENS_TABLE),
        LoopStarter(),
        QueueMetrics(),
        settings.LOOP_FUNCTIONS,
        loop_bounds(settings),
    )


def loop_bounds(settings: LoopBoundsMixin) -> LoopBounds:
    return LoopBounds(
        settings.MIN_LOOPS, settings.MAX_LOOPS, settings.MESSAGES_PER_LOOP, settings.LOOPS_FOR_NEW_WORK
    )


def work_loops(settings: ApiSettings | WorkerSettings) -> WorkStarter | None:
    """What starts the loops for work queued on the bulk queue (None when no loop function is
    configured for it: then the alarms and the restarter do)."""
    queue_name = settings.BULK_QUEUE_URL.rstrip("/").rsplit("/", 1)[-1]
    function_name = settings.LOOP_FUNCTIONS.get(queue_name)
    if not function_name:
        return None
    target = LoopTarget(queue_name=queue_name, queue_url=settings.BULK_QUEUE_URL, function_name=function_name)
    return WorkStarter(loop_scaler(settings), target, logger)
