"""The click collector: batches of the API's access log lines and of the edge's standard log records,
delivered by their log groups' subscription filters, counted into hourly per-link counters
(shortener.clicks.counting), and each click's event sent to the event store (Firehose, to S3 as
Parquet). A malformed record is skipped and counted in a metric; the batch goes on. A batch
delivered twice counts once."""

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import CloudWatchLogsEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from shortener.clicks.counting import batch_key
from shortener.observability import logger, metrics
from shortener.services.collector import click_collector

_SKIP_METRICS = {
    "malformed": "ClickLinesMalformed",
    "not_a_redirect": "ClickLinesNotRedirects",
    "not_a_follow": "ClickLinesNotFollows",
    "cache_refresh": "ClickLinesCacheRefreshes",
    "edge_stage": "ClickLinesEdgeStage",
}


@logger.inject_lambda_context
@metrics.log_metrics
@event_source(data_class=CloudWatchLogsEvent)
def lambda_handler(event: CloudWatchLogsEvent, context: LambdaContext) -> dict:
    data = event.parse_logs_data()
    events = data.log_events
    key = batch_key(data.log_group, data.log_stream, (e.get_id for e in events))
    outcome = click_collector().collect(key, (e.message for e in events))
    if not outcome.already_counted:
        metrics.add_metric(name="Clicks", unit=MetricUnit.Count, value=outcome.clicks)
        metrics.add_metric(name="BotClicks", unit=MetricUnit.Count, value=outcome.bots)
    for reason, count in outcome.skipped.items():
        metrics.add_metric(name=_SKIP_METRICS[reason], unit=MetricUnit.Count, value=count)
    if outcome.already_counted:
        metrics.add_metric(name="ClickBatchesRedelivered", unit=MetricUnit.Count, value=1)
    if outcome.limits is not None:
        # Click-limited links on the cached stage that reached their limit: ended and refreshed.
        metrics.add_metric(name="ClickLimitsReached", unit=MetricUnit.Count, value=len(outcome.limits.ended))
        if outcome.limits.refresh_failed:
            metrics.add_metric(
                name="StageCacheInvalidationFailed",
                unit=MetricUnit.Count,
                value=len(outcome.limits.refresh_failed),
            )
            logger.error(
                "Click-limited links were ended but their cache entries not refreshed",
                extra={"codes": outcome.limits.refresh_failed[:20]},
            )
    if outcome.skipped.get("malformed"):
        logger.warning("Malformed log records skipped", extra={"count": outcome.skipped["malformed"]})
    summary = {
        "lines": len(events),
        "clicks": outcome.clicks,
        "humans": outcome.humans,
        "bots": outcome.bots,
        # Which rule answered rule, password and preview links (the API function's lines): no clicks.
        "answers": outcome.answers,
        # Click events sent to the event store (every delivery: the queries count a request once).
        "events": outcome.events,
        "skipped": outcome.skipped,
        "items_written": outcome.items_written,
        "already_counted": outcome.already_counted,
    }
    logger.info("Batch counted", extra=summary)
    return summary
