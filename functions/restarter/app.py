"""The restarter. Subscribed to the operations topic, where Lambda sends the record of a poller
invocation that failed: it revives that loop at once. On a schedule: reconcile every configured
queue with its backlog (which also keeps the minimum number of loops running), revive loops whose
heartbeat went stale, and settle the rows of messages that reached a dead-letter queue, so every
job ends; and, until it is done, backfill the tag index of links tagged before it existed. The
rules live in shortener.loops.healing, shortener.loops.scaling, shortener.jobs.dead_letters and
shortener.links.backfill."""

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shortener.loops.healing import failed_invocations
from shortener.observability import logger, metrics, tracer
from shortener.services.restarter import backfill_tag_index, heal_and_reconcile, revive_failed_loops


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "Records" in event or "requestContext" in event:
        return revive_failed(event)
    # The scheduled event carries nothing the restarter needs: every run does the same work.
    report = heal_and_reconcile()
    changed = (
        report.revived
        or report.failed
        or any(outcome.started or outcome.stopped for outcome in report.reconciled)
        or any(
            settled.settled or settled.already_recorded or settled.unreadable or settled.retried
            for settled in report.dead_letters
        )
    )
    # Every minute: a line only when something was done, so the log shows the healing.
    if report.errors or report.failed:
        logger.error("Loops healed and reconciled, with failures", extra=report.model_dump())
    elif changed:
        logger.info("Loops healed and reconciled", extra=report.model_dump())
    else:
        logger.debug("Loops healthy", extra=report.model_dump())
    if report.skipped:
        logger.warning("Stale loops of queues with no loop function", extra={"tokens": report.skipped})
    metrics.add_metric(name="LoopsRevived", unit=MetricUnit.Count, value=len(report.revived))
    started = sum(len(outcome.started) for outcome in report.reconciled)
    metrics.add_metric(name="LoopsStarted", unit=MetricUnit.Count, value=started)
    # Loops running after this run, every minute: the dashboard's "Loops running".
    running = sum(outcome.loops_after or 0 for outcome in report.reconciled)
    metrics.add_metric(name="LoopsRunning", unit=MetricUnit.Count, value=running)
    metrics.add_metric(name="LoopStartsFailed", unit=MetricUnit.Count, value=len(report.failed))
    metrics.add_metric(name="RestarterErrors", unit=MetricUnit.Count, value=len(report.errors))
    rows = sum(settled.rows_failed for settled in report.dead_letters)
    metrics.add_metric(name="DeadLetterRowsFailed", unit=MetricUnit.Count, value=rows)
    answer = report.model_dump()
    answer["tag_backfill"] = backfill()
    return answer


def backfill() -> dict[str, Any] | None:
    """The tag index backfill's share of a run, after the loops' (a failure is logged and left
    to the next run, which goes on from the last page saved)."""
    try:
        backfilled = backfill_tag_index()
    except Exception:
        logger.exception("Tag index backfill failed; the next run goes on from its last page")
        metrics.add_metric(name="RestarterErrors", unit=MetricUnit.Count, value=1)
        return {"error": True}
    if backfilled is None or not backfilled.pages:
        return None
    metrics.add_metric(name="TagEntriesBackfilled", unit=MetricUnit.Count, value=backfilled.entries_written)
    if backfilled.done:
        logger.info("Tag index backfill done", extra={"entries_written": backfilled.entries_written})
    return {
        "done": backfilled.done,
        "items_read": backfilled.items_read,
        "entries_written": backfilled.entries_written,
    }


def revive_failed(event: dict[str, Any]) -> dict[str, Any]:
    """Revive the loops whose failed invocations ``event`` reports (other notifications of the
    topic are ignored)."""
    failed = failed_invocations(event)
    if not failed:
        return {"revived": [], "failed": [], "skipped": []}
    report = revive_failed_loops(failed)
    extra = {"invocations": [invocation.model_dump() for invocation in failed], **report.model_dump()}
    if report.failed:
        logger.error("Failed loops could not all be revived", extra=extra)
    else:
        logger.info("Loops whose invocation failed revived", extra=extra)
    metrics.add_metric(name="LoopsRevived", unit=MetricUnit.Count, value=len(report.revived))
    metrics.add_metric(name="LoopStartsFailed", unit=MetricUnit.Count, value=len(report.failed))
    return {"revived": report.revived, "failed": report.failed, "skipped": report.skipped}
