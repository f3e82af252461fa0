"""The expirer. Every minute on the prod stage: refresh the stage cache entry of every link whose
``expires_at`` has come, so API Gateway stops answering it with the cached redirect
(shortener.links.expiry)."""

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shortener.observability import logger, metrics, tracer
from shortener.services.expirer import enforce_due_expiries


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # The scheduled event carries nothing the expirer needs: every run reads what is due.
    report = enforce_due_expiries()
    metrics.add_metric(name="ExpiriesEnforced", unit=MetricUnit.Count, value=report.enforced)
    if report.failed:
        metrics.add_metric(name="ExpiryRefreshesFailed", unit=MetricUnit.Count, value=report.failed)
        logger.error("Some expired links' cache entries were not refreshed", extra=report.model_dump())
    elif report.due:
        logger.info("Expired links' cache entries refreshed", extra=report.model_dump())
    return report.model_dump()
