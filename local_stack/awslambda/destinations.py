"""Asynchronous invocation as Lambda configures it per function (``AWS::Lambda::EventInvokeConfig``,
what SAM makes of a function's ``EventInvokeConfig``): how many times a failed event is retried, and
where the record of an event that failed every attempt goes (the on-failure destination).

Lambda's rules ("Configuring error handling for asynchronous invocation" and "Capturing records of
Lambda asynchronous invocations",
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html and
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html):

- a failed event is retried ``MaximumRetryAttempts`` times (0-2; 2 when not configured), one and
  then two minutes later;
- an event that failed every attempt (condition ``RetriesExhausted``) is sent, as an invocation
  record, to the ``OnFailure`` destination: as the ``Message`` of an SNS topic or the body of an SQS
  message, as the event of a Lambda function, or as the ``detail`` of an EventBridge event (source
  ``lambda``, detail-type ``Lambda Function Invocation Result - Failure``). The record holds
  ``version``, ``timestamp``, ``requestContext`` (``requestId``, ``functionArn``, ``condition``,
  ``approximateInvokeCount``), ``requestPayload`` (the event), ``responseContext`` (``statusCode``,
  ``executedVersion``, ``functionError``) and ``responsePayload`` (the function's error).

A record that cannot be delivered is logged and dropped, as Lambda drops it (with its
``DestinationDeliveryFailures`` metric).
"""

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from local_stack.embedded.client import aws_client

if TYPE_CHECKING:
    from local_stack.cloudformation.resources import Resources

log = logging.getLogger(__name__)

EVENT_INVOKE_CONFIG = "AWS::Lambda::EventInvokeConfig"
# Lambda's defaults without an EventInvokeConfig: two retries, events kept six hours.
DEFAULT_RETRY_ATTEMPTS = 2
DEFAULT_EVENT_AGE_SECONDS = 6 * 60 * 60


@dataclass(frozen=True)
class AsyncConfig:
    """One function's asynchronous invocation settings."""

    maximum_retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    maximum_event_age_seconds: int = DEFAULT_EVENT_AGE_SECONDS
    on_failure: str | None = None  # a destination ARN
    on_success: str | None = None


def async_configs(resources: "Resources") -> dict[str, AsyncConfig]:
    """Each configured function's settings, by function name."""
    configs: dict[str, AsyncConfig] = {}
    for logical_id in resources.of_type(EVENT_INVOKE_CONFIG):
        properties = resources.properties(logical_id)
        spec = resources.function_by_name(str(properties["FunctionName"]))
        if spec is None:
            continue
        destinations = properties.get("DestinationConfig", {})
        configs[spec.name] = AsyncConfig(
            maximum_retry_attempts=int(properties.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS)),
            maximum_event_age_seconds=int(
                properties.get("MaximumEventAgeInSeconds", DEFAULT_EVENT_AGE_SECONDS)
            ),
            on_failure=destinations.get("OnFailure", {}).get("Destination"),
            on_success=destinations.get("OnSuccess", {}).get("Destination"),
        )
    return configs


def failure_record(
    *,
    request_id: str,
    function_arn: str,
    event: Any,
    error: Mapping[str, Any],
    invoke_count: int,
    condition: str = "RetriesExhausted",
    now: datetime | None = None,
) -> dict[str, Any]:
    """The invocation record Lambda sends to an on-failure destination."""
    moment = now or datetime.now(UTC)
    return {
        "version": "1.0",
        "timestamp": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "requestContext": {
            "requestId": request_id,
            "functionArn": f"{function_arn}:$LATEST",
            "condition": condition,
            "approximateInvokeCount": invoke_count,
        },
        "requestPayload": event,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {key: value for key, value in error.items() if key != "requestId"},
    }


class DestinationSender:
    """Delivers invocation records to SNS, SQS, Lambda or EventBridge destinations on the embedded
    AWS (Lambda functions through ``invoke_lambda``, the local runtime's asynchronous invoke)."""

    def __init__(self, aws_endpoint: str, region: str, invoke_lambda: Callable[[str, Any], None]) -> None:
        self._endpoint = aws_endpoint
        self._region = region
        self._invoke_lambda = invoke_lambda
        self._clients: dict[str, Any] = {}

    def send(self, destination: str, record: dict[str, Any], *, success: bool = False) -> bool:
        """Deliver ``record``; False (logged) when it could not be."""
        service = destination.split(":")[2] if destination.count(":") >= 5 else ""
        body = json.dumps(record)
        try:
            if service == "sns":
                self._client("sns").publish(TopicArn=destination, Message=body)
            elif service == "sqs":
                name, account = destination.split(":")[5], destination.split(":")[4]
                url = self._client("sqs").get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)
                self._client("sqs").send_message(QueueUrl=url["QueueUrl"], MessageBody=body)
            elif service == "lambda":
                self._invoke_lambda(destination, record)
            elif service == "events":
                result = "Success" if success else "Failure"
                self._client("events").put_events(
                    Entries=[
                        {
                            "Source": "lambda",
                            "DetailType": f"Lambda Function Invocation Result - {result}",
                            "Detail": body,
                            "EventBusName": destination,
                            "Resources": [record["requestContext"]["functionArn"], destination],
                        }
                    ]
                )
            else:
                log.error("Unsupported asynchronous invocation destination %s; record dropped", destination)
                return False
        except Exception:
            log.exception("Delivering an invocation record to %s failed; record dropped", destination)
            return False
        return True

    def _client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = aws_client(service, self._endpoint, self._region)
        return self._clients[service]
