"""Lambda's SQS event source mappings, locally: what SAM makes of a function's ``Events: X: Type:
SQS`` (an ``AWS::Lambda::EventSourceMapping`` whose EventSourceArn is a queue's) polls that queue
and invokes the function with batches of its messages.

Lambda's rules ("Using Lambda with Amazon SQS", "Lambda parameters for Amazon SQS event source
mappings", "Configuring scaling behavior for SQS event source mappings" and "Handling errors for an
SQS event source in Lambda": https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html,
.../services-sqs-parameters.html, .../services-sqs-scaling.html,
.../services-sqs-errorhandling.html):

- Lambda long-polls the queue and invokes the function synchronously with a batch of up to
  ``BatchSize`` messages (10 by default), gathered for at most ``MaximumBatchingWindowInSeconds``
  (0 by default: what one poll returns), in the event shape of
  `sam local generate-event sqs receive-message`;
- a batch whose invocation succeeds is deleted from the queue. With ``ReportBatchItemFailures`` in
  ``FunctionResponseTypes`` the messages the result names in ``batchItemFailures[].itemIdentifier``
  are not: they come back after the queue's visibility timeout. An empty or null list (or result)
  is a complete success; an identifier that is empty, null, under another key, or not a message of
  the batch, or a result that is no JSON object, makes the whole batch a failure;
- a function error deletes nothing: the whole batch comes back after the visibility timeout (and
  the queue's redrive policy moves a message received ``maxReceiveCount`` times to its dead-letter
  queue: SQS's part, which moto does on receive as SQS does);
- a throttled invocation is retried until the messages' visibility timeout ends, then left to
  come back;
- ``ScalingConfig.MaximumConcurrency`` (2-1000) caps the batches invoked at once. Without it
  Lambda starts at five concurrent batches (and may go as low as two when traffic is low);
- Lambda refuses a mapping whose queue's visibility timeout is shorter than the function's timeout
  (InvalidParameterValueException "Queue visibility timeout: 30 seconds is less than Function
  timeout: 60 seconds"): so does the stack's start.

Locally: one poller thread per enabled mapping receives (``WaitTimeSeconds`` of 1 s instead of
Lambda's 20, so that a stop is not held up by a long poll: more ReceiveMessage requests while
idle, which moto's request log shows as the stack's own, marked as the event source's) and hands
each batch to one of ``MaximumConcurrency`` invokers. Not emulated: ``FilterCriteria`` (a mapping
with filters is refused with a warning), Lambda's backoff of concurrency after errors, and the
scaling beyond the concurrency cap. The time scale does not apply: SQS's visibility timeouts and
the batching window are the queue's and the mapping's seconds. The pollers use the stack's own
credentials, not the function's role (Lambda polls with the execution role, so IAM's checks of
sqs:ReceiveMessage and sqs:DeleteMessage are not made here)."""

import base64
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from local_stack.awslambda.runtime import SYNC_PAYLOAD_LIMIT_BYTES, FunctionThrottledError, LambdaRuntime
from local_stack.cloudformation.resources import EVENT_SOURCE_MAPPING, QUEUE, Resources
from local_stack.embedded.client import EVENT_SOURCE_USER_AGENT, aws_client

log = logging.getLogger(__name__)

REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures"
# Lambda's defaults for an SQS mapping.
DEFAULT_BATCH_SIZE = 10
DEFAULT_CONCURRENCY = 5  # the concurrent batches Lambda starts with, without a MaximumConcurrency
DEFAULT_VISIBILITY_TIMEOUT = 30  # SQS's, for a queue that sets none
# One ReceiveMessage takes at most 10 messages.
RECEIVE_LIMIT = 10
# Lambda long-polls for 20 s; a poll here is short so that stopping the stack waits at most this.
POLL_WAIT_SECONDS = 1
# How long an invoker waits for a free execution environment before trying again (throttled).
THROTTLE_RETRY_SECONDS = 1.0
# After an SQS request failed (the embedded AWS stopping, a queue deleted), the poller waits this.
ERROR_BACKOFF_SECONDS = 1.0
# A batch stops growing once one more receive (10 messages of up to 256 KiB) could take the event
# past the synchronous payload limit.
_GATHER_LIMIT_BYTES = SYNC_PAYLOAD_LIMIT_BYTES - RECEIVE_LIMIT * 256 * 1024
_JOIN_SECONDS = POLL_WAIT_SECONDS + 2.0


@dataclass(frozen=True)
class SqsSource:
    """One enabled mapping from a queue to a function."""

    mapping: str  # the mapping's logical id
    queue_arn: str
    queue_url: str
    function: str  # the function's name
    batch_size: int = DEFAULT_BATCH_SIZE
    batching_window_seconds: float = 0.0
    report_item_failures: bool = False
    maximum_concurrency: int = DEFAULT_CONCURRENCY


class MappingRefused(ValueError):
    """A mapping Lambda's CreateEventSourceMapping refuses."""


def sqs_sources(resources: Resources, warn: Callable[[str], None] = log.warning) -> list[SqsSource]:
    """The template's enabled SQS mappings whose function runs locally (the rest ``warn``);
    MappingRefused for one that Lambda would refuse to create."""
    sources = []
    for logical_id, properties in resources.of_type(EVENT_SOURCE_MAPPING).items():
        arn = str(properties.get("EventSourceArn", ""))
        if not arn.startswith("arn:aws:sqs:"):
            warn(f"{logical_id}: only SQS event sources run locally, not {arn or 'this one'}")
            continue
        if not _true(properties.get("Enabled", True)):
            continue
        if properties.get("FilterCriteria"):
            warn(f"{logical_id}: event filtering (FilterCriteria) is not emulated; the mapping is off")
            continue
        spec = resources.function_by_name(str(properties.get("FunctionName", "")))
        if spec is None:
            warn(f"{logical_id}: {properties.get('FunctionName')} is not running; {arn} is not polled")
            continue
        visibility_timeout = _visibility_timeout(resources, arn)
        if visibility_timeout is not None and visibility_timeout < spec.timeout_seconds:
            raise MappingRefused(
                f"{logical_id}: Queue visibility timeout: {visibility_timeout} seconds is less than "
                f"Function timeout: {spec.timeout_seconds} seconds"
            )
        scaling = properties.get("ScalingConfig") or {}
        response_types = properties.get("FunctionResponseTypes") or []
        sources.append(
            SqsSource(
                mapping=logical_id,
                queue_arn=arn,
                queue_url=queue_url(arn, resources.aws_endpoint),
                function=spec.name,
                batch_size=int(properties.get("BatchSize", DEFAULT_BATCH_SIZE)),
                batching_window_seconds=float(properties.get("MaximumBatchingWindowInSeconds", 0)),
                report_item_failures=REPORT_BATCH_ITEM_FAILURES in response_types,
                maximum_concurrency=int(scaling.get("MaximumConcurrency", DEFAULT_CONCURRENCY)),
            )
        )
    return sources


def _visibility_timeout(resources: Resources, queue_arn: str) -> int | None:
    """The visibility timeout of the template's queue with this ARN (SQS's default 30 s when it
    sets none); None for a queue the template does not make."""
    for logical_id, properties in resources.of_type(QUEUE).items():
        if resources.resolver.attributes[logical_id].get("Arn") == queue_arn:
            return int(properties.get("VisibilityTimeout", DEFAULT_VISIBILITY_TIMEOUT))
    return None


def queue_url(queue_arn: str, aws_endpoint: str) -> str:
    """The embedded AWS's URL of the queue an ARN names (as moto names it)."""
    _, _, _, _, account, name = queue_arn.split(":", 5)
    return f"{aws_endpoint}/{account}/{name}"


def sqs_event(messages: list[dict[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    """The event Lambda invokes a function with for a batch of ReceiveMessage's messages."""
    return {"Records": [_record(message, queue_arn, region) for message in messages]}


def _record(message: Mapping[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    record = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": {
            name: _message_attribute(value) for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def _message_attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    """A message attribute as the event spells it: camelCase, binary values in base64."""
    attribute: dict[str, Any] = {}
    if "StringValue" in value:
        attribute["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        attribute["binaryValue"] = _base64(value["BinaryValue"])
    attribute["stringListValues"] = list(value.get("StringListValues", []))
    attribute["binaryListValues"] = [_base64(item) for item in value.get("BinaryListValues", [])]
    attribute["dataType"] = value["DataType"]
    return attribute


def _base64(value: bytes | str) -> str:
    return base64.b64encode(value.encode() if isinstance(value, str) else value).decode()


class InvalidBatchResponse(Exception):
    """A partial batch response Lambda treats as the failure of the whole batch."""


def failed_message_ids(result: Any, message_ids: set[str]) -> set[str]:
    """The messages a partial batch response (``ReportBatchItemFailures``) says failed; raises
    InvalidBatchResponse when Lambda would fail the whole batch instead."""
    if result is None:
        return set()
    if not isinstance(result, dict):
        raise InvalidBatchResponse(f"the result is no JSON object: {json.dumps(result)[:200]}")
    failures = result.get("batchItemFailures")
    if failures is None:
        return set()
    if not isinstance(failures, list):
        raise InvalidBatchResponse("batchItemFailures is not a list")
    failed = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not isinstance(identifier, str) or not identifier:
            raise InvalidBatchResponse(f"an entry without an itemIdentifier: {json.dumps(failure)[:200]}")
        if identifier not in message_ids:
            raise InvalidBatchResponse(f"itemIdentifier {identifier} is no message of the batch")
        failed.add(identifier)
    return failed


class SqsPoller:
    """One mapping's poller: receives batches and invokes the function with them, at most
    ``maximum_concurrency`` batches at once, until stopped."""

    def __init__(self, source: SqsSource, runtime: LambdaRuntime, aws_endpoint: str, region: str) -> None:
        self.source = source
        self._runtime = runtime
        self._region = region
        self._sqs = aws_client("sqs", aws_endpoint, region, user_agent_extra=EVENT_SOURCE_USER_AGENT)
        self._stopping = threading.Event()
        concurrency = max(1, source.maximum_concurrency)
        self._slots = threading.BoundedSemaphore(concurrency)
        self._invokers = ThreadPoolExecutor(concurrency, thread_name_prefix=f"{source.mapping}-invoke")
        self._thread = threading.Thread(target=self._run, name=f"{source.mapping}-poll", daemon=True)
        self._visibility_timeout: float | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop polling (within about a poll's wait); batches being invoked are left to finish, or
        to end when the runtime stops (their messages then come back, as after a crash)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(_JOIN_SECONDS)
        self._invokers.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while not self._stopping.is_set():
            # A batch is received only when an invoker is free, so that no message waits, invisible,
            # for a place while its visibility timeout runs.
            if not self._slots.acquire(timeout=POLL_WAIT_SECONDS):
                continue
            try:
                batch, received = self._gather()
            except Exception as exc:
                self._slots.release()
                if not self._stopping.is_set():
                    log.warning("%s: polling %s failed: %s", self.source.mapping, self.source.queue_arn, exc)
                    self._stopping.wait(ERROR_BACKOFF_SECONDS)
                continue
            if not batch:
                self._slots.release()
                continue
            try:
                self._invokers.submit(self._handle, batch, received)
            except RuntimeError:  # shut down: the stack is stopping; the batch comes back
                self._slots.release()
                return

    def _gather(self) -> tuple[list[dict[str, Any]], float]:
        """Up to BatchSize messages, received within the batching window (from the first message
        on), and when the first was received (its visibility timeout runs from then)."""
        source = self.source
        # By message id: a message whose visibility timeout ended within the batching window is
        # received again, and is in the batch once, with its newest receipt handle.
        batch: dict[str, dict[str, Any]] = {}
        size = 0
        received = time.monotonic()
        window_end: float | None = None
        while not self._stopping.is_set() and len(batch) < source.batch_size and size < _GATHER_LIMIT_BYTES:
            # The last poll of a window may end up to a poll's wait after it.
            if window_end is not None and time.monotonic() >= window_end:
                break
            polled = time.monotonic()
            answer = self._sqs.receive_message(
                QueueUrl=source.queue_url,
                MaxNumberOfMessages=min(RECEIVE_LIMIT, source.batch_size - len(batch)),
                WaitTimeSeconds=POLL_WAIT_SECONDS,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            messages = answer.get("Messages", [])
            batch.update((message["MessageId"], message) for message in messages)
            size += sum(len(message["Body"]) for message in messages)
            if batch and window_end is None:
                received = polled
                if source.batching_window_seconds <= 0:
                    break
                window_end = time.monotonic() + source.batching_window_seconds
        return list(batch.values()), received

    def _handle(self, batch: list[dict[str, Any]], received: float) -> None:
        try:
            self._invoke_and_settle(batch, received)
        except Exception:
            if not self._stopping.is_set():
                log.exception("%s: a batch of %d messages failed", self.source.mapping, len(batch))
        finally:
            self._slots.release()

    def _invoke_and_settle(self, batch: list[dict[str, Any]], received: float) -> None:
        source = self.source
        event = sqs_event(batch, source.queue_arn, self._region)
        # Throttled: retried until the messages' visibility timeout ends, then they come back.
        deadline = received + self._queue_visibility_timeout()
        while True:
            if self._stopping.is_set():
                return
            try:
                invocation = self._runtime.invoke(source.function, event, slot_timeout=THROTTLE_RETRY_SECONDS)
                break
            except FunctionThrottledError:
                if time.monotonic() >= deadline:
                    log.info(
                        "%s: %s throttled; %d messages come back", source.mapping, source.function, len(batch)
                    )
                    return
        if invocation.error is not None:
            log.info(
                "%s: %s failed (%s: %s); %d messages come back after the visibility timeout",
                source.mapping,
                source.function,
                invocation.error.get("errorType"),
                # The first line: the worker's log has the rest (Powertools' batch errors are long).
                str(invocation.error.get("errorMessage", "")).partition("\n")[0],
                len(batch),
            )
            return
        done = batch
        if source.report_item_failures:
            try:
                failed = failed_message_ids(invocation.result, {message["MessageId"] for message in batch})
            except InvalidBatchResponse as exc:
                log.warning(
                    "%s: invalid partial batch response (%s); the whole batch fails", source.mapping, exc
                )
                return
            done = [message for message in batch if message["MessageId"] not in failed]
        self._delete(done)

    def _delete(self, messages: list[dict[str, Any]]) -> None:
        for start in range(0, len(messages), RECEIVE_LIMIT):
            chunk = messages[start : start + RECEIVE_LIMIT]
            answer = self._sqs.delete_message_batch(
                QueueUrl=self.source.queue_url,
                Entries=[
                    {"Id": str(number), "ReceiptHandle": message["ReceiptHandle"]}
                    for number, message in enumerate(chunk)
                ],
            )
            for failure in answer.get("Failed", []):
                # A receipt handle that expired: the message was received again, and is delivered again.
                log.info("%s: a message was not deleted: %s", self.source.mapping, failure.get("Message"))

    def _queue_visibility_timeout(self) -> float:
        if self._visibility_timeout is None:
            attributes = self._sqs.get_queue_attributes(
                QueueUrl=self.source.queue_url, AttributeNames=["VisibilityTimeout"]
            )["Attributes"]
            self._visibility_timeout = float(attributes.get("VisibilityTimeout", 30))
        return self._visibility_timeout


class SqsPollers:
    """Every enabled SQS mapping's poller, started and stopped together."""

    def __init__(
        self, sources: list[SqsSource], runtime: LambdaRuntime, aws_endpoint: str, region: str
    ) -> None:
        self._pollers = [SqsPoller(source, runtime, aws_endpoint, region) for source in sources]

    def start(self) -> None:
        for poller in self._pollers:
            log.info(
                "%s: polling %s for %s (batches of up to %d)",
                poller.source.mapping,
                poller.source.queue_arn.rsplit(":", 1)[-1],
                poller.source.function,
                poller.source.batch_size,
            )
            poller.start()

    def stop(self) -> None:
        """Stop every poller at once: the stop takes one poll's wait, not one per mapping."""
        stops = [threading.Thread(target=poller.stop, daemon=True) for poller in self._pollers]
        for thread in stops:
            thread.start()
        for thread in stops:
            thread.join(_JOIN_SECONDS + 1.0)


def _true(value: Any) -> bool:
    """A CloudFormation Boolean: true, or "true" from a parameter."""
    return value if isinstance(value, bool) else str(value).strip().lower() == "true"
