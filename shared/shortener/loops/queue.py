"""The bulk queue: sending messages in batches, long-poll receiving, and deleting in batches."""

import random
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from shortener import aws

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# SendMessageBatch takes at most 10 entries of at most 256 KiB together (the classic limit; newer
# queues allow 1 MiB, but a queue created with the old default would refuse more).
SEND_BATCH_ENTRIES = 10
SEND_BATCH_BYTES = 256 * 1024
_SEND_ATTEMPTS = 6


class QueueSendError(Exception):
    """Messages could not be sent after retries (an operational fault, not the caller's)."""


class BulkQueue:
    """Data access for an SQS queue. The client is created lazily unless one is passed."""

    def __init__(self, client: "SQSClient | None" = None) -> None:
        self._client = client

    @property
    def client(self) -> "SQSClient":
        return self._client or aws.sqs()

    def send_all(self, queue_url: str, bodies: Sequence[str]) -> int:
        """Send every body with as few SendMessageBatch calls as the entry and size limits allow;
        entries that fail for a server-side reason are retried with backoff. The number of calls."""
        calls = 0
        for batch in batches_within_limits(bodies):
            pending = {str(index): body for index, body in enumerate(batch)}
            for attempt in range(_SEND_ATTEMPTS):
                calls += 1
                response = self.client.send_message_batch(
                    QueueUrl=queue_url,
                    Entries=[{"Id": entry_id, "MessageBody": body} for entry_id, body in pending.items()],
                )
                failed = response.get("Failed", [])
                if any(failure.get("SenderFault") for failure in failed):
                    raise QueueSendError(f"the queue refused messages: {failed}")
                pending = {failure["Id"]: pending[failure["Id"]] for failure in failed}
                if not pending:
                    break
                time.sleep(random.uniform(0, min(0.05 * 2**attempt, 2.0)))
            if pending:
                raise QueueSendError(f"{len(pending)} messages could not be sent after retries")
        return calls

    def send(self, queue_url: str, body: str, *, delay_seconds: int = 0) -> None:
        """Send one message, delivered no sooner than ``delay_seconds`` (0-900) from now."""
        self.client.send_message(QueueUrl=queue_url, MessageBody=body, DelaySeconds=delay_seconds)

    def receive(
        self,
        queue_url: str,
        *,
        max_messages: int = 10,
        wait_seconds: int = 20,
        visibility_timeout: int | None = None,
    ) -> list[dict[str, Any]]:
        """Up to ``max_messages`` messages (one long-poll ReceiveMessage), with their system
        attributes (the receive count among them); hidden for ``visibility_timeout`` seconds when
        given, else for the queue's visibility timeout."""
        options: dict[str, Any] = (
            {} if visibility_timeout is None else {"VisibilityTimeout": visibility_timeout}
        )
        response = self.client.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=max_messages,
            WaitTimeSeconds=wait_seconds,
            MessageSystemAttributeNames=["All"],
            **options,
        )
        messages: list[Any] = response.get("Messages", [])
        return messages

    def delete(self, queue_url: str, receipt_handles: Sequence[str]) -> int:
        """Delete messages with DeleteMessageBatch (10 per call). The number that failed: those
        come back after their visibility timeout and are processed again, idempotently."""
        failed = 0
        for start in range(0, len(receipt_handles), SEND_BATCH_ENTRIES):
            handles = receipt_handles[start : start + SEND_BATCH_ENTRIES]
            response = self.client.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[{"Id": str(index), "ReceiptHandle": handle} for index, handle in enumerate(handles)],
            )
            failed += len(response.get("Failed", []))
        return failed

    def extend_visibility(self, queue_url: str, receipt_handles: Sequence[str], timeout_seconds: int) -> int:
        """Give messages still being worked on ``timeout_seconds`` more before SQS delivers them
        again (ChangeMessageVisibilityBatch, 10 per call; the new timeout counts from now). The
        number that failed: deleted meanwhile, or received again by someone else."""
        failed = 0
        for start in range(0, len(receipt_handles), SEND_BATCH_ENTRIES):
            handles = receipt_handles[start : start + SEND_BATCH_ENTRIES]
            response = self.client.change_message_visibility_batch(
                QueueUrl=queue_url,
                Entries=[
                    {"Id": str(index), "ReceiptHandle": handle, "VisibilityTimeout": timeout_seconds}
                    for index, handle in enumerate(handles)
                ],
            )
            failed += len(response.get("Failed", []))
        return failed


def batches_within_limits(bodies: Sequence[str]) -> Iterator[list[str]]:
    """``bodies`` grouped into SendMessageBatch calls: at most 10 entries, at most 256 KiB."""
    batch: list[str] = []
    size = 0
    for body in bodies:
        body_size = len(body.encode())
        if batch and (len(batch) == SEND_BATCH_ENTRIES or size + body_size > SEND_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(body)
        size += body_size
    if batch:
        yield batch
