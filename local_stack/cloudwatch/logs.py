"""CloudWatch Logs for the API's access log, locally: the stage's AccessLogSetting writes one line per
answered request (its Format with the `$context` variables substituted, stage-cache hits included),
and the log group's subscription filters deliver the matching lines to their functions as CloudWatch
Logs does: batched, asynchronously, as ``{"awslogs": {"data": base64(gzip(json))}}`` with
messageType, owner, logGroup, logStream, subscriptionFilters and logEvents [id, timestamp, message]
("Using CloudWatch Logs subscription filters", Lambda example, CloudWatch Logs user guide).

- Variables the local API cannot know (integration latencies, the WAF's verdict, ...) are written
  "-", as API Gateway writes a variable without a value.
- Delivery is at least once: CloudWatch Logs may deliver a batch again, so under the
  ``duplicate-logs=P`` fault each batch is delivered a second time with probability P.
- Filter patterns: the empty pattern (every line) and JSON patterns of the form
  ``{ $.field = "value" && $.other != "value" }`` (CloudWatch Logs' "Filter pattern syntax", JSON
  log events). Any other pattern is refused when the stack starts, rather than matched wrongly.
- CloudWatch Logs allows at most two subscription filters per log group (its quotas page); a third
  is refused at start, as CloudFormation would fail to create it.
"""

import base64
import gzip
import itertools
import json
import logging
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from local_stack.awslambda.runtime import LambdaRuntime
from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudformation.resources import API_STAGE, Resources

log = logging.getLogger(__name__)

SUBSCRIPTION_FILTER = "AWS::Logs::SubscriptionFilter"
LOG_GROUP = "AWS::Logs::LogGroup"
MAX_FILTERS_PER_GROUP = 2
# A function's own log group (Lambda's default name for it, which the template gives each function).
FUNCTION_LOG_GROUP_PREFIX = "/aws/lambda/"
# CloudWatch Logs sends a subscription's events in batches of at most about 1 MB (uncompressed);
# locally a batch is cut at this many events or this many bytes, whichever comes first.
BATCH_MAX_EVENTS = 10_000
BATCH_MAX_BYTES = 1_000_000
# How often the buffered lines are delivered (local seconds; CloudWatch Logs takes a few seconds).
FLUSH_INTERVAL_SECONDS = 1.0
_CONTEXT_VARIABLE = re.compile(r"\$context\.([A-Za-z0-9_.]+)")
_JSON_TERM = re.compile(r'^\$\.([A-Za-z0-9_.]+)\s*(=|!=)\s*"((?:[^"\\]|\\.)*)"$')

# (function name, event[, on_done]) -> None: the runtime's asynchronous invoke; ``on_done`` (given
# only when the lines are kept durably) is called once the invocation is over.
Invoke = Callable[..., Any]


class LineKeeper(Protocol):
    """Where the lines not yet delivered are kept durably (``local_stack.cloudwatch.log_state``)."""

    def line_written(self, group: str, event: "LogEvent") -> None: ...
    def flushed(self, group: str, stream: str, events: "list[LogEvent]") -> Callable[[], None]: ...


class FilterPatternError(ValueError):
    """A subscription filter pattern the local stack cannot evaluate."""


@dataclass(frozen=True)
class FilterPattern:
    """A JSON filter pattern: alternatives (||) of conjunctions (&&) of `$.field = "value"` terms;
    no term at all matches every line."""

    text: str
    alternatives: tuple[tuple[tuple[str, str, str], ...], ...] = ()

    @classmethod
    def parse(cls, text: str) -> "FilterPattern":
        stripped = text.strip()
        if not stripped:
            return cls(text)
        if not (stripped.startswith("{") and stripped.endswith("}")):
            raise FilterPatternError(f"filter pattern {text!r}: only JSON patterns {{ ... }} run locally")
        alternatives = []
        for alternative in stripped[1:-1].split("||"):
            terms = []
            for term in alternative.split("&&"):
                match = _JSON_TERM.match(term.strip().strip("()").strip())
                if match is None:
                    raise FilterPatternError(
                        f'filter pattern {text!r}: only terms like $.field = "value" run locally'
                    )
                terms.append((match[1], match[2], json.loads(f'"{match[3]}"')))
            alternatives.append(tuple(terms))
        return cls(text, tuple(alternatives))

    def matches(self, message: str) -> bool:
        if not self.alternatives:
            return True
        try:
            document = json.loads(message)
        except ValueError:
            return False
        return any(all(_term_holds(document, term) for term in terms) for terms in self.alternatives)


def _term_holds(document: Any, term: tuple[str, str, str]) -> bool:
    selector, operator, value = term
    found: Any = document
    for part in selector.split("."):
        if not isinstance(found, dict) or part not in found:
            return operator == "!="
        found = found[part]
    equal = str(found) == value
    return equal if operator == "=" else not equal


@dataclass(frozen=True)
class Subscription:
    """One subscription filter of the log group: its name, pattern and destination function."""

    name: str
    pattern: FilterPattern
    function: str


@dataclass(frozen=True)
class LogEvent:
    id: str
    timestamp: int
    message: str


@dataclass(frozen=True)
class AccessRecord:
    """What the local API knows of one answered request, for its access log line."""

    method: str
    path: str
    resource_path: str | None
    status: int
    source_ip: str
    user_agent: str | None
    response_length: int
    api_id: str
    stage: str
    domain_name: str
    protocol: str = "HTTP/1.1"
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    epoch_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def variables(self) -> dict[str, str]:
        moment = datetime.fromtimestamp(self.epoch_ms / 1000, UTC)
        return {
            "requestId": self.request_id,
            "extendedRequestId": self.request_id,
            "requestTime": moment.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "requestTimeEpoch": str(self.epoch_ms),
            "httpMethod": self.method,
            "path": self.path,
            "resourcePath": self.resource_path or "-",
            "status": str(self.status),
            "identity.sourceIp": self.source_ip,
            "identity.userAgent": self.user_agent if self.user_agent is not None else "-",
            "responseLength": str(self.response_length),
            "apiId": self.api_id,
            "stage": self.stage,
            "domainName": self.domain_name,
            "protocol": self.protocol,
            "accountId": ACCOUNT_ID,
        }


def render(log_format: str, record: AccessRecord) -> str:
    """The access log line: ``log_format`` with each `$context` variable replaced by its value, "-"
    for one without a value. In a JSON format the value is escaped for JSON, so a user agent with a
    quote in it leaves the line parseable."""
    values = record.variables()
    is_json = log_format.lstrip().startswith("{")

    def substitute(match: re.Match[str]) -> str:
        value = values.get(match[1], "-")
        return json.dumps(value)[1:-1] if is_json else value

    return _CONTEXT_VARIABLE.sub(substitute, log_format)


class LogGroup:
    """One log group that the stage writes its access log to, and its subscriptions."""

    def __init__(
        self,
        name: str,
        log_format: str,
        subscriptions: list[Subscription],
        invoke: Invoke,
        *,
        duplicate_probability: float = 0.0,
        flush_interval: float = FLUSH_INTERVAL_SECONDS,
        rng: random.Random | None = None,
    ) -> None:
        if len(subscriptions) > MAX_FILTERS_PER_GROUP:
            raise FilterPatternError(
                f"log group {name}: {len(subscriptions)} subscription filters; CloudWatch Logs allows "
                f"{MAX_FILTERS_PER_GROUP}"
            )
        self.name = name
        self.log_format = log_format
        self.subscriptions = subscriptions
        self.stream = f"local-{uuid.uuid4().hex[:16]}"
        self._invoke = invoke
        self._duplicate = duplicate_probability
        self._chance = rng or random.Random()
        self._interval = flush_interval
        self._pending: list[LogEvent] = []
        self._lock = threading.Lock()
        self._sequence = itertools.count()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        # Set when the stack persists: each line is kept until its delivery is over.
        self.keeper: LineKeeper | None = None
        # How many lines were written and batches delivered (the stack's log, tests).
        self.written = 0
        self.delivered_batches = 0

    def write(self, record: AccessRecord) -> LogEvent:
        """Append the request's access log line; it is delivered with the next batch."""
        return self._append(render(self.log_format, record), record.epoch_ms)

    def write_line(self, line: str) -> None:
        """One line a function wrote to its output, which Lambda sends to the function's log group
        (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs.html). Only a line
        that a subscription's pattern matches is kept: the others would only be stored."""
        message = line.rstrip("\n")
        if any(subscription.pattern.matches(message) for subscription in self.subscriptions):
            self._append(message, int(time.time() * 1000))

    def _append(self, message: str, epoch_ms: int) -> LogEvent:
        # CloudWatch Logs' event ids are 56-digit strings, unique in the log group.
        event = LogEvent(f"{epoch_ms:020d}{next(self._sequence):036d}", epoch_ms, message)
        keeper = self.keeper
        if keeper is not None:  # journaled before the request is answered
            keeper.line_written(self.name, event)
        with self._lock:
            self._pending.append(event)
            self.written += 1
        return event

    def requeue(self, events: list[LogEvent]) -> None:
        """Lines of a previous run never flushed: delivered with the next flush, before the new."""
        with self._lock:
            self._pending[:0] = events

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"logs-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.flush()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            try:
                self.flush()
            except Exception:  # a failed delivery must not end the log group's thread
                log.exception("Delivering the access log of %s failed", self.name)

    def flush(self) -> int:
        """Deliver the buffered lines to each subscription, in batches; the number of batches."""
        with self._lock:
            events, self._pending = self._pending, []
        if not events:
            return 0
        keeper = self.keeper
        return self.deliver(
            events, self.stream, keeper.flushed(self.name, self.stream, events) if keeper else None
        )

    def deliver(self, events: list[LogEvent], stream: str, on_done: Callable[[], None] | None = None) -> int:
        """Deliver ``events`` (one flush: the same events and stream always make the same batches,
        which the collector counts once) to each subscription; the number of batches. ``on_done``
        is called once every batch's invocation is over."""
        invocations = []
        for subscription in self.subscriptions:
            matching = [event for event in events if subscription.pattern.matches(event.message)]
            invocations += [
                (subscription.function, self.subscription_event(subscription, batch, stream), len(batch))
                for batch in _batches(matching)
            ]
        finished = _AllDone(len(invocations), on_done)
        for function, event, size in invocations:
            if on_done is None:
                self._invoke(function, event)
            else:
                self._invoke(function, event, finished.one_done)
            if self._duplicate > 0 and self._chance.random() < self._duplicate:
                log.info("duplicate-logs: %s's batch of %d delivered again", self.name, size)
                self._invoke(function, event)
        self.delivered_batches += len(invocations)
        return len(invocations)

    def subscription_event(
        self, subscription: Subscription, batch: list[LogEvent], stream: str | None = None
    ) -> dict[str, Any]:
        """The event CloudWatch Logs invokes a subscribed function with."""
        payload = {
            "messageType": "DATA_MESSAGE",
            "owner": ACCOUNT_ID,
            "logGroup": self.name,
            "logStream": stream or self.stream,
            "subscriptionFilters": [subscription.name],
            "logEvents": [{"id": e.id, "timestamp": e.timestamp, "message": e.message} for e in batch],
        }
        data = base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()
        return {"awslogs": {"data": data}}


class _AllDone:
    """Calls ``on_done`` once ``count`` invocations are over (at once when there are none)."""

    def __init__(self, count: int, on_done: Callable[[], None] | None) -> None:
        self._left = count
        self._on_done = on_done
        self._lock = threading.Lock()
        if count == 0 and on_done is not None:
            on_done()

    def one_done(self) -> None:
        with self._lock:
            self._left -= 1
            last = self._left == 0
        if last and self._on_done is not None:
            self._on_done()


def _batches(events: list[LogEvent]) -> Iterable[list[LogEvent]]:
    batch: list[LogEvent] = []
    size = 0
    for event in events:
        length = len(event.message.encode()) + 26  # CloudWatch Logs counts 26 bytes per event
        if batch and (len(batch) >= BATCH_MAX_EVENTS or size + length > BATCH_MAX_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(event)
        size += length
    if batch:
        yield batch


def decode_subscription_event(event: dict[str, Any]) -> dict[str, Any]:
    """The payload of a subscription event (what a subscribed function decodes first)."""
    return dict(json.loads(gzip.decompress(base64.b64decode(event["awslogs"]["data"]))))


def access_log_group(
    stage: dict[str, Any],
    filters: Iterable[dict[str, Any]],
    subscription_names: Iterable[str],
    function_of: Callable[[str], str | None],
    invoke: Invoke,
    *,
    duplicate_probability: float = 0.0,
    flush_interval: float = FLUSH_INTERVAL_SECONDS,
) -> LogGroup | None:
    """The log group a stage's (resolved) AccessLogSetting writes to, with the subscription filters
    (resolved properties, and their names) that deliver it to local functions; None when the stage
    has no access log. ``function_of`` maps a destination ARN to a running function's name."""
    setting = stage.get("AccessLogSetting") or {}
    destination, log_format = setting.get("DestinationArn"), setting.get("Format")
    if not destination or not log_format:
        return None
    # arn:aws:logs:<region>:<account>:log-group:<name>[:*]
    group = str(destination).split(":log-group:", 1)[-1].removesuffix(":*")
    return LogGroup(
        group,
        str(log_format),
        _subscriptions(group, filters, subscription_names, function_of),
        invoke,
        duplicate_probability=duplicate_probability,
        flush_interval=flush_interval,
    )


def _subscriptions(
    group: str,
    filters: Iterable[dict[str, Any]],
    subscription_names: Iterable[str],
    function_of: Callable[[str], str | None],
) -> list[Subscription]:
    """The subscription filters (resolved properties, and their names) on ``group`` whose
    destination is a running function."""
    pairs = zip(filters, subscription_names, strict=True)
    listed = [(properties, name) for properties, name in pairs if properties.get("LogGroupName") == group]
    if len(listed) > MAX_FILTERS_PER_GROUP:
        raise FilterPatternError(
            f"log group {group}: {len(listed)} subscription filters; CloudWatch Logs allows "
            f"{MAX_FILTERS_PER_GROUP}"
        )
    subscriptions = []
    for properties, name in listed:
        function = function_of(str(properties.get("DestinationArn", "")))
        if function is None:
            log.warning("Subscription filter %s: its destination is not a running function", name)
            continue
        pattern = FilterPattern.parse(str(properties.get("FilterPattern", "")))
        subscriptions.append(Subscription(str(properties.get("FilterName") or name), pattern, function))
    return subscriptions


def stack_function_logs(
    resources: Resources, runtime: LambdaRuntime, duplicate_probability: float = 0.0, time_scale: float = 1.0
) -> list[LogGroup]:
    """The functions' own log groups (``/aws/lambda/<name>``) that the template subscribes to
    functions (the API function's destination lines, for the collector): each such function's
    output lines go to its group, delivered as the access log's are."""
    filters = resources.of_type(SUBSCRIPTION_FILTER)
    # A filter names its group by Ref, which the local stack resolves to the group's physical id; the
    # group's own LogGroupName says whose it is (/aws/lambda/<function>).
    named = {
        resources.physical_id(logical_id): str(properties.get("LogGroupName", ""))
        for logical_id, properties in resources.of_type(LOG_GROUP).items()
    }
    subscribed = {str(properties.get("LogGroupName", "")) for properties in filters.values()}
    groups = sorted(
        group for group in subscribed if named.get(group, group).startswith(FUNCTION_LOG_GROUP_PREFIX)
    )

    def function_of(arn: str) -> str | None:
        spec = runtime.function(arn)
        return spec.name if spec is not None else None

    log_groups = []
    for group in groups:
        writer = runtime.function(named.get(group, group).removeprefix(FUNCTION_LOG_GROUP_PREFIX))
        if writer is None:
            continue
        log_group = LogGroup(
            group,
            "",
            _subscriptions(group, filters.values(), filters.keys(), function_of),
            runtime.invoke_async,
            duplicate_probability=duplicate_probability,
            flush_interval=FLUSH_INTERVAL_SECONDS / time_scale,
        )
        runtime.send_output(writer.name, log_group.write_line)
        log_groups.append(log_group)
    return log_groups


def stack_access_log(
    resources: Resources, runtime: LambdaRuntime, duplicate_probability: float = 0.0, time_scale: float = 1.0
) -> LogGroup | None:
    """The access log of the template's API stage, subscribed as the template says; None without one.
    The edge's stage has none (the edge's own logs count what comes through it)."""
    stages = [stage for stage in resources.of_type(API_STAGE).values() if stage.get("AccessLogSetting")]
    if not stages:
        return None
    filters = resources.of_type(SUBSCRIPTION_FILTER)

    def function_of(arn: str) -> str | None:
        spec = runtime.function(arn)
        return spec.name if spec is not None else None

    return access_log_group(
        stages[0],
        filters.values(),
        filters.keys(),
        function_of,
        runtime.invoke_async,
        duplicate_probability=duplicate_probability,
        flush_interval=FLUSH_INTERVAL_SECONDS / time_scale,
    )
