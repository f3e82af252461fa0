"""API Gateway emulation: routing by the template's paths, proxy events, answers back to HTTP."""

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from local_stack.apigateway.gateway import (
    ApiGateway,
    HttpRequest,
    Route,
    access_record,
    binary_media_types,
    find_route,
    http_response,
    proxy_event,
    routes_from_swagger,
)
from local_stack.apigateway.http_limits import protocol_error
from local_stack.awslambda.runtime import FunctionThrottledError, Invocation

ROUTES = [
    Route("/", "GET", "api"),
    Route("/", "POST", "api"),
    Route("/bulk", "POST", "api"),
    Route("/jobs/{job_id}", "GET", "api"),
    Route("/jobs/{job_id}/results", "GET", "api"),
    Route("/{code}", "GET", "api"),
    Route("/apple-app-site-association", "GET", "api"),
]


def request(
    method: str, target: str, body: bytes = b"", headers: list[tuple[str, str]] | None = None
) -> HttpRequest:
    return HttpRequest(method, target, headers or [("Host", "127.0.0.1:3000")], body, "127.0.0.1", 3000)


def test_static_paths_win_over_parameters() -> None:
    route, parameters = find_route(ROUTES, "GET", "/apple-app-site-association") or (None, None)
    assert route == Route("/apple-app-site-association", "GET", "api")
    assert parameters == {}


def test_parameters_are_matched_per_segment() -> None:
    assert find_route(ROUTES, "GET", "/abc") == (Route("/{code}", "GET", "api"), {"code": "abc"})
    found = find_route(ROUTES, "GET", "/jobs/j1/results")
    assert found == (Route("/jobs/{job_id}/results", "GET", "api"), {"job_id": "j1"})


def test_unknown_paths_and_methods_have_no_route() -> None:
    assert find_route(ROUTES, "GET", "/jobs/j1/results/x") is None
    assert find_route(ROUTES, "DELETE", "/abc") is None


def test_greedy_and_any_routes() -> None:
    routes = [Route("/files/{proxy+}", "ANY", "f")]
    assert find_route(routes, "PUT", "/files/a/b") == (routes[0], {"proxy": "a/b"})


def test_routes_come_from_the_sam_generated_swagger() -> None:
    function_arn = "arn:aws:lambda:us-east-1:123456789012:function:fn"
    uri = f"arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/{function_arn}/invocations"
    body = {"paths": {"/{code}": {"get": {"x-amazon-apigateway-integration": {"uri": uri}}}}}
    assert routes_from_swagger(body) == [Route("/{code}", "GET", "fn")]
    assert binary_media_types({"BinaryMediaTypes": ["text~1csv"]}) == ["text/csv"]


def test_the_proxy_event_has_the_rest_api_shape() -> None:
    event = proxy_event(
        request("GET", "/jobs/j%201?a=1&a=2&b=", headers=[("Host", "127.0.0.1:3000"), ("Accept", "x")]),
        Route("/jobs/{job_id}", "GET", "api"),
        {"job_id": "j 1"},
        ["text/csv"],
        "local",
    )
    assert event["resource"] == "/jobs/{job_id}"
    assert event["path"] == "/jobs/j 1"
    assert event["pathParameters"] == {"job_id": "j 1"}
    assert event["queryStringParameters"] == {"a": "2", "b": ""}
    assert event["multiValueQueryStringParameters"] == {"a": ["1", "2"], "b": [""]}
    assert event["headers"]["Host"] == "127.0.0.1:3000"
    assert event["headers"]["X-Forwarded-Proto"] == "http"
    assert event["multiValueHeaders"]["Accept"] == ["x"]
    assert event["requestContext"]["stage"] == "local"
    assert event["requestContext"]["requestId"]
    assert event["body"] is None
    assert event["isBase64Encoded"] is False


def test_binary_media_types_arrive_base64_encoded() -> None:
    csv = b"url\nhttps://example.com/\n"
    headers = [("Host", "h"), ("Content-Type", "text/csv; charset=utf-8")]
    event = proxy_event(
        request("POST", "/bulk", csv, headers), Route("/bulk", "POST", "api"), {}, ["text/csv"], "x"
    )
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == csv


def test_text_bodies_arrive_as_text() -> None:
    headers = [("Host", "h"), ("Content-Type", "application/json")]
    event = proxy_event(
        request("POST", "/", b'{"url": "x"}', headers), Route("/", "POST", "api"), {}, ["text/csv"], "x"
    )
    assert (event["body"], event["isBase64Encoded"]) == ('{"url": "x"}', False)


def test_answers_merge_headers_and_decode_base64() -> None:
    status, headers, body = http_response(
        {
            "statusCode": 301,
            "headers": {"Location": "https://example.com/", "Content-Type": "text/plain"},
            "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"], "Content-Type": ["text/html"]},
            "body": base64.b64encode(b"\x00\x01").decode(),
            "isBase64Encoded": True,
        }
    )
    assert status == 301
    assert ("Location", "https://example.com/") in headers
    assert [value for key, value in headers if key == "Set-Cookie"] == ["a=1", "b=2"]
    assert [value for key, value in headers if key == "Content-Type"] == ["text/html"]
    assert body == b"\x00\x01"


def test_a_malformed_answer_is_a_502() -> None:
    status, _, body = http_response({"body": "no status"})
    assert status == 502
    assert b"Internal server error" in body


class FakeRuntime:
    """Answers every invocation with one outcome, and remembers how long API Gateway would wait."""

    def __init__(self, error: dict[str, Any] | None = None, throttled: bool = False) -> None:
        self.error = error
        self.throttled = throttled
        self.slot_timeouts: list[float | None] = []

    def invoke(self, name: str, event: Any, slot_timeout: float | None = 10.0) -> Invocation:
        self.slot_timeouts.append(slot_timeout)
        if self.throttled:
            raise FunctionThrottledError(name)
        return Invocation("request-1", result={"statusCode": 200, "body": "{}"}, error=self.error)


@pytest.fixture
def gateway() -> Iterator[Callable[[FakeRuntime], ApiGateway]]:
    made: list[ApiGateway] = []

    def make(runtime: FakeRuntime) -> ApiGateway:
        made.append(ApiGateway(ROUTES, [], runtime, "api", 0))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for server in made:
        server.server_close()


def test_a_crashed_function_is_a_502(gateway: Callable[[FakeRuntime], ApiGateway]) -> None:
    runtime = FakeRuntime(error={"errorType": "Runtime.ExitError", "errorMessage": "exit status 137"})
    status, _, body = gateway(runtime).answer(request("GET", "/abc"))
    assert (status, json.loads(body)) == (502, {"message": "Internal server error"})


def test_a_function_that_ran_out_of_time_is_a_504(gateway: Callable[[FakeRuntime], ApiGateway]) -> None:
    runtime = FakeRuntime(error={"errorType": "Sandbox.Timedout", "errorMessage": "Task timed out"})
    status, _, body = gateway(runtime).answer(request("GET", "/abc"))
    assert (status, json.loads(body)) == (504, {"message": "Endpoint request timed out"})


def test_a_request_waits_for_a_busy_function_as_long_as_api_gateway_waits(
    gateway: Callable[[FakeRuntime], ApiGateway],
) -> None:
    # Given a function whose every environment stays busy
    runtime = FakeRuntime(throttled=True)
    # When a request comes
    status, _, body = gateway(runtime).answer(request("GET", "/abc"))
    # Then it waited for a free environment up to API Gateway's 29 s integration timeout, and is
    # then answered as an integration timeout, not a throttle
    assert runtime.slot_timeouts == [29.0]
    assert (status, json.loads(body)) == (504, {"message": "Endpoint request timed out"})


@pytest.mark.parametrize("code", [400, 408, 413, 414, 431, 501])
def test_the_gateways_own_refusals_say_nosniff(code: int) -> None:
    _, headers, _ = protocol_error(code, "FROB")
    assert ("X-Content-Type-Options", "nosniff") in headers


def test_the_event_and_the_access_log_line_carry_the_same_request_id(
    gateway: Callable[[FakeRuntime], ApiGateway],
) -> None:
    # As $context.requestId on API Gateway: the collector joins a click (the access log line) to
    # the rule that answered it (the function's line, from its event) by this id
    sent = request("GET", "/abc")
    event = proxy_event(sent, Route("/{code}", "GET", "api"), {"code": "abc"}, [], "local")
    logged = access_record(sent, 301, 0, gateway(FakeRuntime())).variables()["requestId"]
    assert event["requestContext"]["requestId"] == logged == sent.request_id
    assert request("GET", "/abc").request_id != sent.request_id
