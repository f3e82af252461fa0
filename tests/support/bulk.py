"""Bulk test helpers: the template's queues in moto, CSV and multipart bodies, a poller context
whose remaining time runs down, and a hook that makes DynamoDB throttle."""

import csv
import io
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse

from local_stack.cloudformation.template import load_template, resources_of_type

BOUNDARY = "----bulk-test-boundary"


def create_bulk_queues(visibility_timeout: int | None = None, max_receive_count: int | None = None) -> str:
    """BulkQueue and BulkDeadLetterQueue created in moto from the template's properties (a test
    may shorten the visibility timeout or the receive count so redelivery happens quickly). The
    bulk queue's URL."""
    sqs = boto3.client("sqs")
    queues = resources_of_type("AWS::SQS::Queue")
    dlq_url = sqs.create_queue(
        QueueName="test-BulkDeadLetterQueue", Attributes=_queue_attributes(queues["BulkDeadLetterQueue"])
    )["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    attributes = _queue_attributes(queues["BulkQueue"])
    redrive = dict(queues["BulkQueue"]["Properties"]["RedrivePolicy"])
    redrive["deadLetterTargetArn"] = dlq_arn
    if max_receive_count is not None:
        redrive["maxReceiveCount"] = max_receive_count
    attributes["RedrivePolicy"] = json.dumps(redrive)
    if visibility_timeout is not None:
        attributes["VisibilityTimeout"] = str(visibility_timeout)
    return sqs.create_queue(QueueName="test-BulkQueue", Attributes=attributes)["QueueUrl"]


def dead_letter_queue_url() -> str:
    return boto3.client("sqs").get_queue_url(QueueName="test-BulkDeadLetterQueue")["QueueUrl"]


def _queue_attributes(resource: dict[str, Any]) -> dict[str, str]:
    parameters = load_template()["Parameters"]
    # A property set from a template parameter takes the parameter's default, as a deploy would.
    properties = {
        key: parameters[value["Ref"]]["Default"] if isinstance(value, dict) and "Ref" in value else value
        for key, value in resource["Properties"].items()
    }
    return {
        key: str(properties[key]).lower() if isinstance(properties[key], bool) else str(properties[key])
        for key in (
            "VisibilityTimeout",
            "MessageRetentionPeriod",
            "ReceiveMessageWaitTimeSeconds",
            "SqsManagedSseEnabled",
        )
        if key in properties
    }


def csv_text(rows: Iterable[Sequence[str]], header: Sequence[str] = ("url",)) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def multipart_body(file_content: bytes, *, field_name: str = "file", filename: str = "links.csv") -> bytes:
    """A multipart/form-data body with one file field, as a browser sends it."""
    return (
        (
            f"--{BOUNDARY}\r\n"
            f'Content-Disposition: form-data; name="{field_name}"; filename="{filename}"\r\n'
            "Content-Type: text/csv\r\n\r\n"
        ).encode()
        + file_content
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


def parse_results(body: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(body, newline="")))


@dataclass
class PollerContext:
    """A Lambda context whose remaining time runs down with the wall clock."""

    budget_seconds: float
    function_name: str = "test-poller"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:test-poller"
    aws_request_id: str = "00000000-0000-0000-0000-000000000001"
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.budget_seconds - (time.monotonic() - self.started)) * 1000))


def cancel_for_throttling(client: Any, times: int, items: int) -> Callable[[], int]:
    """Make the next ``times`` TransactWriteItems calls on ``client`` come back cancelled because
    DynamoDB throttled their first item (the answer DynamoDB gives, which botocore does not retry)."""
    reasons = [{"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity"}]
    reasons += [{"Code": "None"}] * (items - 1)
    return throttle(
        client,
        "TransactWriteItems",
        times,
        error_code="TransactionCanceledException",
        fields={"CancellationReasons": reasons},
    )


def throttle(
    client: Any,
    operation: str,
    times: int,
    *,
    error_code: str = "ProvisionedThroughputExceededException",
    fields: dict[str, Any] | None = None,
) -> Callable[[], int]:
    """Make the next ``times`` calls of ``operation`` on ``client`` fail at the HTTP level with
    ``error_code`` and any further error ``fields`` (so botocore's retry logic sees them, as it
    would see AWS). A function that tells how many were injected."""
    injected = 0

    def before_send(request: Any, **_: Any) -> AWSResponse | None:
        nonlocal injected
        if injected >= times:
            return None
        injected += 1
        body = json.dumps(
            {
                "__type": f"com.amazonaws.dynamodb.v20120810#{error_code}",
                "message": "Throttled",
                **(fields or {}),
            }
        )
        answer = AWSResponse(request.url, 400, {"x-amzn-ErrorType": error_code}, _RawBody(body.encode()))
        # botocore calls every before-send hook and uses the first answer; pointing the request
        # elsewhere keeps in-process moto from also carrying it out.
        request.url = "https://throttled.invalid/"
        return answer

    client.meta.events.register_first(f"before-send.dynamodb.{operation}", before_send)
    return lambda: injected


class _RawBody:
    """The minimal urllib3-like body AWSResponse reads."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterable[bytes]:
        yield self._data

    def read(self, *_: Any) -> bytes:
        return self._data


BUCKET = "test-bulk-bucket"


def create_bulk_bucket() -> str:
    """The bulk bucket in moto (its name in BULK_BUCKET is the test's business)."""
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    return BUCKET
