"""Subscription filters on log groups written through CloudWatch Logs' own API: events a client puts
with PutLogEvents (as CloudFront's vended-logs delivery writes the edge's standard logs into
EdgeLogGroup) are delivered to the filter's local function as CloudWatch Logs delivers them,
``{"awslogs": {"data": base64(gzip(json))}}`` ("Using CloudWatch Logs subscription filters", Lambda
example: https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/SubscriptionFilters.html).

moto hands such events to its own Lambda backend, which runs functions in Docker; the patch below
hands them to the stack's Lambda runtime instead (the same delivery as the access log's,
``logs.LogGroup.deliver``: the filter pattern, batches, the ``duplicate-logs`` fault). Delivery is
asynchronous, after the PutLogEvents call has answered, as on AWS."""

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from local_stack.cloudwatch.logs import FilterPattern, FilterPatternError, LogEvent, LogGroup, Subscription

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PutEvents:
    """Events one PutLogEvents call put into a log group, for one of its subscription filters."""

    group: str
    stream: str
    filter_name: str
    pattern: str
    destination_arn: str
    events: list[LogEvent]


Delivery = Callable[[PutEvents], None]

_delivery: Delivery | None = None
_lock = threading.Lock()


def set_delivery(delivery: Delivery | None) -> None:
    """Where events put into a subscribed log group go (None: moto's own behaviour)."""
    global _delivery  # noqa: PLW0603 - one stack's runtime per process, set on connect
    with _lock:
        _delivery = delivery


def install() -> None:
    """Route moto's subscription deliveries to Lambda through ``set_delivery``'s target (once)."""
    from moto.logs.models import LogStream

    if getattr(LogStream, "_local_stack_subscriptions", False):
        return
    original = LogStream._send_log_events

    def send_log_events(
        self: Any, service: str, destination_arn: str, filter_name: str, log_events: list[dict[str, Any]]
    ) -> None:
        delivery = _delivery
        if service != "lambda" or delivery is None:
            original(self, service, destination_arn, filter_name, log_events)
            return
        found = self.log_group.subscription_filters.get(filter_name)
        pattern = str(getattr(found, "filter_pattern", "") or "")
        events = [LogEvent(str(e["id"]), int(e["timestamp"]), str(e["message"])) for e in log_events]
        delivery(
            PutEvents(
                self.log_group.name, self.log_stream_name, filter_name, pattern, destination_arn, events
            )
        )

    LogStream._send_log_events = send_log_events  # type: ignore[method-assign]
    LogStream._local_stack_subscriptions = True  # type: ignore[attr-defined]


def runtime_delivery(
    function_of: Callable[[str], str | None], invoke: Callable[..., Any], duplicate_probability: float = 0.0
) -> Delivery:
    """A delivery to the stack's functions: ``function_of`` maps a destination ARN to a running
    function's name, ``invoke`` is the runtime's asynchronous invoke."""

    def deliver(put: PutEvents) -> None:
        function = function_of(put.destination_arn)
        if function is None:
            log.warning(
                "Subscription filter %s on %s: no running function to deliver to", put.filter_name, put.group
            )
            return
        try:
            parsed = FilterPattern.parse(put.pattern)
        except FilterPatternError:
            log.warning(
                "Subscription filter %s: pattern %r does not run locally", put.filter_name, put.pattern
            )
            return
        subscriber = LogGroup(
            put.group,
            "",
            [Subscription(put.filter_name, parsed, function)],
            invoke,
            duplicate_probability=duplicate_probability,
        )
        subscriber.deliver(put.events, put.stream)

    return deliver


def create_subscribed_groups(
    filters: dict[str, dict[str, Any]], account_id: str, region: str, skip: str | None = None
) -> list[str]:
    """The log groups the template's subscription filters (logical id -> resolved properties)
    subscribe, and those filters, in moto's CloudWatch Logs, so that events put into them are
    delivered (the edge's logs); ``skip`` is the access log's group, which the local API writes and
    delivers itself (logs.py). CloudWatch Logs checks that it may invoke the destination; the stack's
    functions run outside moto, so the filter is recorded without that check. The groups made."""
    from moto.logs.models import SubscriptionFilter, logs_backends

    backend = logs_backends[account_id][region]
    made = []
    for logical_id, properties in filters.items():
        group = str(properties.get("LogGroupName") or "")
        if not group or group == skip:
            continue
        if group not in backend.groups:
            backend.create_log_group(group, tags={})
            made.append(group)
            log.info("Log group %s: events put into it are delivered to its subscriptions", group)
        name = str(properties.get("FilterName") or logical_id)
        backend.groups[group].subscription_filters[name] = SubscriptionFilter(
            name,
            group,
            str(properties.get("FilterPattern", "")),
            str(properties.get("DestinationArn", "")),
            "",
        )
    return made
