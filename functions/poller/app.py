"""The poller: one loop over the bulk queue. Started (and re-invoked by itself) with a
LoopInvocation {queue_url, token, loop_id, seq}; the loop itself is shortener.loops.poller."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shortener.loops.model import LoopInvocation
from shortener.observability import logger, metrics, tracer
from shortener.services.poller import poll_loop


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    loop = LoopInvocation.model_validate(event)

    def seconds_left() -> float:
        return context.get_remaining_time_in_millis() / 1000

    report = poll_loop().run(loop, context.function_name, seconds_left)
    return {
        "stopped": report.stopped,
        "claimed": report.claimed,
        "reinvoked": report.reinvoked,
        "messages": report.messages,
    }
