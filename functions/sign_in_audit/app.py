"""The sign-in audit function: the user pool's post-authentication trigger. Each sign-in becomes a
``user.signed_in`` entry in the audit log (shortener.audit.sign_ins). The event goes back to
Cognito unchanged, also when the entry could not be written: that is logged and counted
(SignInAuditWritesFailed), and the person is signed in all the same."""

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shortener.audit.sign_ins import SignInNotRecorded
from shortener.observability import logger, metrics
from shortener.services.sign_in_audit import record_sign_in


@logger.inject_lambda_context
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        record_sign_in(event)
    except SignInNotRecorded:
        metrics.add_metric(name="SignInAuditWritesFailed", unit=MetricUnit.Count, value=1)
        logger.exception("A sign-in was not recorded in the audit log", extra={"user": event.get("userName")})
    else:
        metrics.add_metric(name="SignInsRecorded", unit=MetricUnit.Count, value=1)
    return event
