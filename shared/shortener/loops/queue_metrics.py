"""SQS as the scaler sees it: a queue's URL from its name, and how deep its backlog is."""

import json
from functools import lru_cache
from typing import TYPE_CHECKING

import boto3

from shortener import aws
from shortener.loops.scaling_model import DeadLetterTarget, QueueDepth

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeFilterType

_DEPTH_ATTRIBUTES: list["QueueAttributeFilterType"] = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
]


class QueueMetrics:
    """Queue lookups for the scaler and the restarter. The client is created lazily unless passed."""

    def __init__(self, client: "SQSClient | None" = None) -> None:
        self._client = client

    def client_for(self, region: str | None = None) -> "SQSClient":
        """The SQS client of ``region`` (default: this function's own region)."""
        default = self._client or aws.sqs()
        if region is None or region == default.meta.region_name:
            return default
        return _regional_client(region)

    def queue_url(self, queue_name: str, account_id: str | None = None, region: str | None = None) -> str:
        """The URL of ``queue_name``, owned by ``account_id`` (default: the caller's account)."""
        client = self.client_for(region)
        if account_id:
            return client.get_queue_url(QueueName=queue_name, QueueOwnerAWSAccountId=account_id)["QueueUrl"]
        return client.get_queue_url(QueueName=queue_name)["QueueUrl"]

    def depth(self, queue_url: str, region: str | None = None) -> QueueDepth:
        """The approximate number of visible, in-flight and delayed messages of a queue."""
        attributes = (
            self.client_for(region)
            .get_queue_attributes(QueueUrl=queue_url, AttributeNames=_DEPTH_ATTRIBUTES)
            .get("Attributes", {})
        )
        return QueueDepth(
            visible=int(attributes.get("ApproximateNumberOfMessages", 0)),
            in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
            delayed=int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
        )

    def dead_letter_target(self, queue_url: str, region: str | None = None) -> DeadLetterTarget | None:
        """Where SQS moves a queue's failed messages, and after how many receives, from the
        queue's own redrive policy; None when it has none."""
        client = self.client_for(region)
        attributes = client.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["RedrivePolicy"]).get(
            "Attributes", {}
        )
        if "RedrivePolicy" not in attributes:
            return None
        policy = json.loads(attributes["RedrivePolicy"])
        # arn:aws:sqs:<region>:<account>:<name>
        _, _, _, dlq_region, account, name = str(policy["deadLetterTargetArn"]).split(":", 5)
        dlq_url = self.queue_url(name, account, dlq_region)
        return DeadLetterTarget(
            queue_url=dlq_url, max_receive_count=int(policy["maxReceiveCount"]), region=dlq_region
        )


@lru_cache(maxsize=4)
def _regional_client(region: str) -> "SQSClient":
    # Only for a queue in another region than the function's own; boto3 keeps the endpoint override.
    return boto3.client("sqs", region_name=region)
