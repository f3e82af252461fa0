"""Events put into a subscribed log group through CloudWatch Logs' API reach the subscribed local
function as CloudWatch Logs delivers them (local_stack/cloudwatch/subscriptions.py); the whole path
through moto's PutLogEvents is tests/shortener/clicks/test_edge_collector.py."""

from typing import Any

from local_stack.cloudwatch.logs import LogEvent, decode_subscription_event
from local_stack.cloudwatch.subscriptions import PutEvents, runtime_delivery


def put(
    pattern: str = "", arn: str = "arn:aws:lambda:us-east-1:123456789012:function:collector"
) -> PutEvents:
    events = [LogEvent("1", 1_000, '{"cs-method": "GET"}'), LogEvent("2", 2_000, '{"cs-method": "HEAD"}')]
    return PutEvents("/aws/vendedlogs/cloudfront/t-edge", "stream-1", "clicks", pattern, arn, events)


def test_the_events_are_delivered_gzip_base64_with_their_group_stream_and_filter() -> None:
    invoked: list[tuple[str, dict[str, Any]]] = []
    deliver = runtime_delivery(lambda arn: "collector", lambda name, event: invoked.append((name, event)))
    deliver(put())
    [(name, event)] = invoked
    payload = decode_subscription_event(event)
    assert name == "collector"
    assert (payload["logGroup"], payload["logStream"], payload["subscriptionFilters"]) == (
        "/aws/vendedlogs/cloudfront/t-edge",
        "stream-1",
        ["clicks"],
    )
    assert [e["id"] for e in payload["logEvents"]] == ["1", "2"]


def test_the_filter_pattern_holds_and_duplicate_logs_delivers_twice() -> None:
    invoked: list[dict[str, Any]] = []
    deliver = runtime_delivery(lambda arn: "collector", lambda name, event: invoked.append(event), 1.0)
    deliver(put('{ $.method = "GET" }'))
    assert invoked == []  # no event has that field
    deliver(put(""))
    assert len(invoked) == 2 and invoked[0] == invoked[1]


def test_a_destination_that_is_not_a_running_function_gets_nothing() -> None:
    invoked: list[Any] = []
    runtime_delivery(lambda arn: None, lambda *args: invoked.append(args))(put())
    assert invoked == []
