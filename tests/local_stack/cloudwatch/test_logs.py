"""The local access log and its subscription delivery (local_stack/cloudwatch/logs.py): the template's format
with $context variables substituted, filter patterns, and batches delivered as CloudWatch Logs
delivers them (gzip + base64), possibly twice."""

import http.client
import json
import random
import threading
from typing import Any

import pytest

from local_stack.apigateway.cache import CachedMethod, StageCache
from local_stack.apigateway.gateway import ApiGateway, Route
from local_stack.awslambda.runtime import Invocation
from local_stack.cloudwatch.logs import (
    AccessRecord,
    FilterPattern,
    FilterPatternError,
    LogGroup,
    Subscription,
    access_log_group,
    decode_subscription_event,
    render,
)

FORMAT = (
    '{"requestId":"$context.requestId","time":"$context.requestTimeEpoch","method":"$context.httpMethod",'
    '"resourcePath":"$context.resourcePath","status":"$context.status","ip":"$context.identity.sourceIp",'
    '"userAgent":"$context.identity.userAgent","latency":"$context.integrationLatency"}'
)


def record(**changes: Any) -> AccessRecord:
    values: dict[str, Any] = {
        "method": "GET",
        "path": "/abc",
        "resource_path": "/{code}",
        "status": 301,
        "source_ip": "203.0.113.9",
        "user_agent": "Mozilla/5.0",
        "response_length": 0,
        "api_id": "api1",
        "stage": "local",
        "domain_name": "127.0.0.1",
        "epoch_ms": 1_764_133_200_000,
    }
    return AccessRecord(**{**values, **changes})


def test_the_format_gets_each_variable_and_a_dash_for_one_without_a_value() -> None:
    line = json.loads(render(FORMAT, record(user_agent='evil " agent\\')))
    assert line["method"] == "GET" and line["resourcePath"] == "/{code}" and line["status"] == "301"
    assert line["time"] == "1764133200000" and line["ip"] == "203.0.113.9"
    # A quote in a header stays inside its JSON string; an unknown variable is "-"
    assert line["userAgent"] == 'evil " agent\\'
    assert line["latency"] == "-"
    assert json.loads(render(FORMAT, record(resource_path=None, user_agent=None)))["resourcePath"] == "-"


@pytest.mark.parametrize(
    ("pattern", "message", "matches"),
    [
        ("", "not json at all", True),
        ('{ $.resourcePath = "/{code}" }', '{"resourcePath": "/{code}"}', True),
        ('{ $.resourcePath = "/{code}" }', '{"resourcePath": "/links/{code}"}', False),
        ('{ $.resourcePath = "/{code}" }', "not json", False),
        ('{ $.a = "1" && $.b != "2" }', '{"a": "1", "b": "3"}', True),
        ('{ $.a = "1" && $.b != "2" }', '{"a": "1", "b": "2"}', False),
        ('{ ($.a = "1") || ($.a = "2") }', '{"a": "2"}', True),
    ],
)
def test_json_filter_patterns_select_lines(pattern: str, message: str, matches: bool) -> None:
    assert FilterPattern.parse(pattern).matches(message) is matches


@pytest.mark.parametrize("pattern", ["ERROR", "{ $.a > 1 }", "[ip, user]"])
def test_a_pattern_the_local_stack_cannot_evaluate_is_refused(pattern: str) -> None:
    with pytest.raises(FilterPatternError):
        FilterPattern.parse(pattern)


def group(duplicate: float = 0.0) -> tuple[LogGroup, list[tuple[str, dict[str, Any]]]]:
    delivered: list[tuple[str, dict[str, Any]]] = []
    subscription = Subscription("clicks", FilterPattern.parse('{ $.resourcePath = "/{code}" }'), "collector")
    log_group = LogGroup(
        "/aws/apigateway/x-access",
        FORMAT,
        [subscription],
        lambda name, event: delivered.append((name, event)),
        duplicate_probability=duplicate,
        rng=random.Random(1),
    )
    return log_group, delivered


def test_matching_lines_are_delivered_in_one_batch_shaped_as_cloudwatch_logs_sends_it() -> None:
    log_group, delivered = group()
    for index in range(3):
        log_group.write(record(request_id=f"r{index}"))
    log_group.write(record(resource_path="/links/{code}", path="/links/abc"))
    assert log_group.flush() == 1
    [(function, event)] = delivered
    assert function == "collector" and set(event) == {"awslogs"}
    payload = decode_subscription_event(event)
    assert payload["messageType"] == "DATA_MESSAGE"
    assert payload["logGroup"] == "/aws/apigateway/x-access"
    assert payload["subscriptionFilters"] == ["clicks"]
    assert payload["logStream"] == log_group.stream
    events = payload["logEvents"]
    assert [json.loads(e["message"])["requestId"] for e in events] == ["r0", "r1", "r2"]
    assert len({e["id"] for e in events}) == 3 and all(len(e["id"]) == 56 for e in events)
    assert all(e["timestamp"] == 1_764_133_200_000 for e in events)
    # Nothing new: nothing delivered
    assert log_group.flush() == 0 and len(delivered) == 1


def test_the_duplicate_fault_delivers_the_same_batch_twice() -> None:
    log_group, delivered = group(duplicate=1.0)
    log_group.write(record())
    log_group.flush()
    assert len(delivered) == 2 and delivered[0] == delivered[1]


def test_a_big_backlog_is_cut_into_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("local_stack.cloudwatch.logs.BATCH_MAX_EVENTS", 2)
    log_group, delivered = group()
    for _ in range(5):
        log_group.write(record())
    assert log_group.flush() == 3
    assert [len(decode_subscription_event(e)["logEvents"]) for _, e in delivered] == [2, 2, 1]


def test_the_stage_setting_names_the_group_and_only_its_filters_subscribe() -> None:
    stage = {
        "AccessLogSetting": {
            "DestinationArn": "arn:aws:logs:us-east-1:123456789012:log-group:/aws/apigateway/x-access:*",
            "Format": FORMAT,
        }
    }
    filters = [
        {"LogGroupName": "/aws/apigateway/x-access", "DestinationArn": "arn:fn:c", "FilterPattern": ""},
        {"LogGroupName": "/other", "DestinationArn": "arn:fn:collector", "FilterPattern": ""},
    ]
    found = access_log_group(stage, filters, ["A", "B"], lambda arn: arn.rsplit(":", 1)[-1], lambda *_: None)
    assert found is not None and found.name == "/aws/apigateway/x-access"
    assert [(s.name, s.function) for s in found.subscriptions] == [("A", "c")]
    assert access_log_group({}, [], [], lambda arn: None, lambda *_: None) is None
    # A third filter on one log group is refused, as CloudWatch Logs refuses it
    with pytest.raises(FilterPatternError):
        access_log_group(stage, [filters[0]] * 3, ["A", "B", "C"], lambda arn: "f", lambda *_: None)


class RedirectingRuntime:
    """A function that answers every request with a redirect, counting its invocations."""

    def __init__(self) -> None:
        self.invocations = 0

    def invoke(self, name: str, event: Any, slot_timeout: float | None = 10.0) -> Invocation:
        self.invocations += 1
        return Invocation("r", result={"statusCode": 301, "headers": {"Location": "https://example.com/"}})


def test_the_gateway_logs_every_answer_its_stage_cache_answers_included() -> None:
    # Given the local API with the prod stage's cache on GET /{code} and an access log
    runtime = RedirectingRuntime()
    cache = StageCache([CachedMethod("GET", "/{code}", 300, ("method.request.path.code",))])
    log_group, delivered = group()
    routes = [Route("/{code}", "GET", "api")]
    api = ApiGateway(routes, [], runtime, "api", 0, cache=cache, access_log=log_group)  # type: ignore[arg-type]
    thread = threading.Thread(target=api.serve_forever, daemon=True)
    thread.start()
    try:
        # When a link is followed three times, and a path with no route is asked for
        statuses = []
        for target in ("/abc", "/abc", "/abc", "/x/y"):
            connection = http.client.HTTPConnection("127.0.0.1", api.server_address[1], timeout=10)
            connection.request("GET", target, headers={"User-Agent": "Mozilla/5.0 (X11)"})
            statuses.append(connection.getresponse().status)
            connection.close()
    finally:
        api.shutdown()
        api.server_close()
    # Then the function ran once (the cache answered twice) but every answer has its line
    assert statuses == [301, 301, 301, 403] and runtime.invocations == 1
    assert log_group.written == 4
    log_group.flush()
    [(_, event)] = delivered
    lines = [json.loads(e["message"]) for e in decode_subscription_event(event)["logEvents"]]
    # the subscription's pattern passes the redirect route's lines only
    assert [(line["status"], line["resourcePath"]) for line in lines] == [("301", "/{code}")] * 3
    assert {line["userAgent"] for line in lines} == {"Mozilla/5.0 (X11)"}
    assert {line["ip"] for line in lines} == {"127.0.0.1"}
