"""The scaler: CloudWatch alarm notifications (via SNS) -> add or remove loops, then reconcile the
alarm's queue with its backlog. The rules live in shortener.loops.scaling."""

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import envelopes, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from shortener.loops.alarms_model import AlarmNotification
from shortener.loops.scaling_model import ScalingOutcome
from shortener.observability import logger, metrics, tracer
from shortener.services.scaler import scaler


def report(outcomes: list[ScalingOutcome]) -> None:
    for outcome in outcomes:
        if outcome.action == "unknown_queue":
            logger.warning("Alarm for a queue this scaler does not manage", extra=outcome.model_dump())
        elif outcome.failed:
            # The restarter's next run revives these tokens.
            logger.error("Scaling outcome, with loops that failed to start", extra=outcome.model_dump())
        else:
            logger.info("Scaling outcome", extra=outcome.model_dump())
    started = sum(len(outcome.started) for outcome in outcomes)
    stopped = sum(len(outcome.stopped) for outcome in outcomes)
    failed = sum(len(outcome.failed) for outcome in outcomes)
    metrics.add_metric(name="LoopsStarted", unit=MetricUnit.Count, value=started)
    metrics.add_metric(name="LoopsStopped", unit=MetricUnit.Count, value=stopped)
    metrics.add_metric(name="LoopStartsFailed", unit=MetricUnit.Count, value=failed)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
@event_parser(model=AlarmNotification, envelope=envelopes.SnsEnvelope)
def lambda_handler(alarms: list[AlarmNotification | None], context: LambdaContext) -> list[dict]:
    outcomes = scaler().handle_alarms(alarms)
    report(outcomes)
    return [outcome.model_dump() for outcome in outcomes]
