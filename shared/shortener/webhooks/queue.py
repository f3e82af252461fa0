"""The webhooks queue (SQS): EventBridge's rule puts the announced events on it, and the sender
puts back each delivery that waits for its next attempt. SQS delays a message at most 15 minutes
(``DelaySeconds``, SQS Developer Guide "Amazon SQS delay queues"): a longer wait is a message that,
received before it is due, goes back for at most 15 minutes more."""

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from shortener import aws

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

MAX_DELAY_SECONDS = 900
DELIVERY_KEY = "webhook_delivery"


@dataclass(frozen=True)
class DeliveryDue:
    """A queued delivery: which one, and when it is due (unix seconds)."""

    owner: str
    webhook_id: str
    position: str
    due: float


class WebhooksQueue:
    """Sends deliveries to the queue by its URL; the client is created lazily unless passed."""

    def __init__(self, queue_url: str, client: "SQSClient | None" = None) -> None:
        self.queue_url = queue_url
        self._client = client

    @property
    def client(self) -> "SQSClient":
        return self._client or aws.sqs()

    def send(self, due: DeliveryDue, delay_seconds: float) -> None:
        self.client.send_message(
            QueueUrl=self.queue_url,
            MessageBody=json.dumps({DELIVERY_KEY: asdict(due)}),
            DelaySeconds=max(0, min(MAX_DELAY_SECONDS, int(delay_seconds + 0.999))),
        )


def delivery_due(body: dict[str, object]) -> DeliveryDue | None:
    """The delivery a queue message names (None: the message is an announced event)."""
    fields = body.get(DELIVERY_KEY)
    return DeliveryDue(**fields) if isinstance(fields, dict) else None
