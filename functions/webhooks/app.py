"""The webhooks function: the webhooks queue's messages (events announced through EventBridge's
rule, and deliveries waiting for their next attempt), each sent as shortener.webhooks.sender
says. A message that fails (the table unreachable, say) is reported alone and comes back after
the queue's visibility timeout; the others of its batch are done."""

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shortener.observability import logger, metrics
from shortener.services.webhooks import webhook_sender
from shortener.webhooks.sender import message_body

processor = BatchProcessor(event_type=EventType.SQS)


def handle_message(record: SQSRecord) -> None:
    webhook_sender().handle(message_body(record.body))


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=handle_message, processor=processor, context=context
    )
