"""Counting the AWS requests a piece of work makes, for a job's cost line.

Every client made by ``shortener.aws`` carries two botocore hooks: before a DynamoDB call its
write units are worked out from the items it writes, and after any call the request is counted on
the meter open in the calling context (a ``contextvars`` variable, so concurrent work in other
threads is not mixed in; ``shortener.jobs.metering.map_in_context`` carries it into worker threads).
With no meter open the hooks do nothing.

What is counted, and how it is billed (the price table is ``shortener.jobs.cost``):
- DynamoDB write units: 1 per started KB of each item written (twice that in a transaction), from
  the request; an UpdateItem by the size of its key and new values, so an update of a large item
  costs more on AWS than counted here. An item put with the key attributes of a ByOwner index
  (every owned link and job) is written to that index too, which DynamoDB bills as a write of its
  own: its units once more (the indexes project ALL). Updates of indexed items (a job's counts)
  write the index again; those few are not counted. Read units: 1 per read request.
- SQS: 1 request per started 64 KB of a message payload sent, 1 per other call.
- S3: PUT, POST, LIST and multipart calls as write requests; GET and HEAD as read requests.
- Lambda: each Invoke call (it is an invocation billed to the target).
- Lambda compute: the meter's open time times the function's memory, in GB-seconds.
- Throttled DynamoDB requests: each attempt DynamoDB throttled (botocore retried it) and each
  batch whose items it handed back; whoever listens (``on_throttle``: a loop's write pacer) hears
  of each as it happens."""

import base64
import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any, Self

from shortener.jobs.model import JobUsage

_CURRENT: ContextVar["Meter | None"] = ContextVar("shortener_usage_meter", default=None)
_WRITE_UNITS = "shortener_write_units"
_SQS_CHUNK_BYTES = 64 * 1024
_S3_READS = frozenset({"GetObject", "HeadObject"})
_DYNAMODB_READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan"})


class Meter:
    """Counts the requests made in its context while open; ``take`` hands over the counts (and
    the compute time) since the last take."""

    def __init__(self, memory_mb: int = 0) -> None:
        self._memory_gb = memory_mb / 1024
        self._lock = threading.Lock()
        self._counts: dict[str, float] = {}
        self._token: Token[Meter | None] | None = None
        self._since = time.monotonic()

    def __enter__(self) -> Self:
        self._token = _CURRENT.set(self)
        self._since = time.monotonic()
        return self

    def __exit__(self, *_: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None

    def add(self, field: str, amount: float) -> None:
        with self._lock:
            self._counts[field] = self._counts.get(field, 0) + amount

    def take(self) -> JobUsage:
        """What was counted since the last take (or since the meter was opened)."""
        now = time.monotonic()
        with self._lock:
            counts, self._counts = self._counts, {}
            seconds, self._since = now - self._since, now
        counts["lambda_gb_seconds"] = round(seconds * self._memory_gb, 6)
        return JobUsage.model_validate(counts)


def metering(memory_mb: int) -> "Any":
    """A factory of meters for a function of ``memory_mb`` (``shortener.jobs.metering.Metering``)."""
    return lambda: Meter(memory_mb)


def install(client: Any) -> Any:
    """Add the counting hooks to a boto3 client; the client."""
    events = client.meta.events
    events.register("before-parameter-build.dynamodb", _note_write_units)
    events.register("after-call", _count)
    events.register("needs-retry.dynamodb", _note_throttled_attempt)
    return client


# DynamoDB's answers to a request it throttled (botocore retries them).
_THROTTLED = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)
_ON_THROTTLE: ContextVar[Callable[[], None] | None] = ContextVar("shortener_on_throttle", default=None)


@contextmanager
def on_throttle(listener: Callable[[], None] | None) -> Iterator[None]:
    """Within the block, ``listener`` is called for each DynamoDB throttle of this context."""
    token = _ON_THROTTLE.set(listener)
    try:
        yield
    finally:
        _ON_THROTTLE.reset(token)


def count_throttle() -> None:
    """A DynamoDB request of the current work was throttled: counted, and its listener told."""
    meter = _CURRENT.get()
    if meter is not None:
        meter.add("throttled_requests", 1)
    listener = _ON_THROTTLE.get()
    if listener is not None:
        listener()


def _note_throttled_attempt(response: Any = None, **_: Any) -> None:
    """botocore's needs-retry event, after each attempt: returns None, so the retry decision stays
    botocore's."""
    if response is not None and response[1].get("Error", {}).get("Code") in _THROTTLED:
        count_throttle()


def _note_write_units(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
    if _CURRENT.get() is not None:
        context[_WRITE_UNITS] = write_units(model.name, params)


def _count(model: Any, context: dict[str, Any], **_: Any) -> None:
    meter = _CURRENT.get()
    if meter is None:
        return
    service, operation = model.service_model.endpoint_prefix, model.name
    if service == "dynamodb":
        meter.add("dynamodb_requests", 1)
        if operation in _DYNAMODB_READS:
            meter.add("read_units", 1)
        meter.add("write_units", context.get(_WRITE_UNITS, 0))
    elif service == "sqs":
        meter.add("sqs_requests", context.get("shortener_sqs_requests", 1))
    elif service == "s3":
        meter.add("s3_read_requests" if operation in _S3_READS else "s3_write_requests", 1)
    elif service == "lambda":
        meter.add("lambda_requests", 1)


def _note_sqs_payload(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
    if _CURRENT.get() is None:
        return
    if model.name == "SendMessageBatch":
        size = sum(len(entry.get("MessageBody", "").encode()) for entry in params.get("Entries", []))
    elif model.name == "SendMessage":
        size = len(params.get("MessageBody", "").encode())
    else:
        return
    context["shortener_sqs_requests"] = max(1, math.ceil(size / _SQS_CHUNK_BYTES))


def install_sqs(client: Any) -> Any:
    """``install``, plus SQS's billing by 64 KB chunks of payload."""
    client.meta.events.register("before-parameter-build.sqs", _note_sqs_payload)
    return install(client)


# ---- DynamoDB write units from a request ---------------------------------------------------------


# The key attributes of the tables' ByOwner indexes (template.yaml: links, then jobs).
_INDEX_KEYS = (("list_pk", "list_sk"), ("owner", "created_at"))


def write_units(operation: str, request: dict[str, Any], *, indexes: bool = True) -> int:
    """The write units a DynamoDB request consumes, worked out from the items it writes: the
    tables' and (unless ``indexes`` is False) those of the index writes they cause."""

    def _put_units(item: dict[str, Any]) -> int:
        indexed = indexes and any(all(key in item for key in keys) for keys in _INDEX_KEYS)
        return _units(item_size(item)) * (2 if indexed else 1)

    if operation == "PutItem":
        return _put_units(request["Item"])
    if operation == "UpdateItem":
        return _units(update_size(request))
    if operation == "DeleteItem":
        return 1
    if operation == "BatchWriteItem":
        return sum(
            _put_units(write["PutRequest"]["Item"]) if "PutRequest" in write else 1
            for writes in request["RequestItems"].values()
            for write in writes
        )
    if operation == "TransactWriteItems":
        total = 0
        for action in request["TransactItems"]:
            kind, detail = next(iter(action.items()))
            total += 2 * (_put_units(detail["Item"]) if kind == "Put" else _units(update_size(detail)))
        return total
    return 0


def update_size(request: dict[str, Any]) -> int:
    """An UpdateItem's item as far as the request shows it: its key and the values it writes,
    plus a margin for the attributes the item already has."""
    values = request.get("ExpressionAttributeValues", {})
    return item_size(request.get("Key", {})) + sum(value_size(value) for value in values.values()) + 120


def _units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def item_size(item: dict[str, Any]) -> int:
    """An item's size by DynamoDB's rules: attribute names plus values."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def value_size(value: dict[str, Any]) -> int:  # noqa: PLR0911
    """One attribute value's size by DynamoDB's rules."""
    kind, content = next(iter(value.items()))
    if kind == "S":
        return len(str(content).encode())
    if kind == "N":
        return len(str(content)) // 2 + 2
    if kind == "B":
        return len(content) if isinstance(content, bytes) else len(base64.b64decode(content))
    if kind in ("SS", "NS"):
        return sum(len(str(part)) for part in content)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + value_size(part) for part in content)
    if kind == "M":
        return 3 + sum(1 + len(key) + value_size(part) for key, part in content.items())
    return len(json.dumps(content))
