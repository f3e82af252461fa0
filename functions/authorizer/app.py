"""The Lambda authorizer of the REST API (REQUEST type): checks the X-Api-Key header against the
keys table and answers with a policy for the whole stage, the caller as context, and the key's
usage identifier for the usage plan. The rules live in shortener.access.keys."""

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shortener.http import web
from shortener.observability import logger, metrics
from shortener.services.authorizer import authorize


@logger.inject_lambda_context
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    decision = authorize(web.header(event.get("headers"), "x-api-key") or None, event["methodArn"])
    if not decision.allow:
        logger.info("API key refused", extra={"reason": decision.reason, "key_id": decision.principal_id})
    metrics.add_metric(
        name="KeysAllowed" if decision.allow else "KeysRefused", unit=MetricUnit.Count, value=1
    )
    return decision.response()
