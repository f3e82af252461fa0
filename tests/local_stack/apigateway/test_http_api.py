"""The edge's origin, locally (local_stack/apigateway/http_api.py): an HTTP API's routes read from
the template, each request turned into a payload format 1.0 event for its function, and no route
answered as an HTTP API answers it."""

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from local_stack.apigateway.http_api import HttpApi, HttpApiDefinition, http_apis
from local_stack.apigateway.routes import Route
from local_stack.awslambda.runtime import Invocation
from local_stack.ports import listening_socket
from tests.tooling.test_template_clicks import resolved

pytestmark = pytest.mark.integration


class RecordingRuntime:
    """Answers every invocation with a redirect and keeps the events it was given."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def invoke(self, function: str, event: dict[str, Any], slot_timeout: float = 0) -> Invocation:
        self.events.append((function, event))
        return Invocation(
            "req-1", result={"statusCode": 301, "headers": {"Location": "https://example.com/"}, "body": ""}
        )


@pytest.fixture
def origin() -> Iterator[tuple[HttpApi, RecordingRuntime]]:
    runtime = RecordingRuntime()
    definition = HttpApiDefinition(
        "Origin", "abc123", (Route("/{code}", "GET", "api-fn"), Route("/", "GET", "api-fn"))
    )
    server = HttpApi(definition, runtime, listening_socket(0))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, runtime
    server.shutdown()
    server.server_close()


def request(
    server: HttpApi, method: str, path: str, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    try:
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_a_request_becomes_a_payload_1_0_event_for_the_routes_function(
    origin: tuple[HttpApi, RecordingRuntime],
) -> None:
    server, runtime = origin
    # When the edge asks for a short link
    status, headers, _ = request(server, "GET", "/abc?x=1", {"X-Shortener-Edge": "s", "User-Agent": "ua"})
    # Then the function's answer comes back as HTTP
    assert (status, headers["Location"]) == (301, "https://example.com/")
    # and the function got the payload 1.0 event: the REST fields, a version, $default, lower-case names
    [(function, event)] = runtime.events
    assert function == "api-fn"
    assert event["version"] == "1.0"
    assert (event["httpMethod"], event["path"], event["resource"]) == ("GET", "/abc", "/{code}")
    assert event["pathParameters"] == {"code": "abc"}
    assert event["queryStringParameters"] == {"x": "1"}
    assert event["headers"]["x-shortener-edge"] == "s"
    assert event["multiValueHeaders"]["user-agent"] == ["ua"]
    assert event["requestContext"]["stage"] == "$default"
    assert event["requestContext"]["apiId"] == "abc123"


def test_a_request_no_route_matches_gets_the_http_apis_404(origin: tuple[HttpApi, RecordingRuntime]) -> None:
    server, runtime = origin
    status, _, body = request(server, "DELETE", "/abc", {})
    assert (status, json.loads(body)) == (404, {"message": "Not Found"})
    assert runtime.events == []


def test_the_templates_origin_routes_are_read_with_their_function() -> None:
    resources = resolved()
    [definition] = http_apis(resources)
    function = resources.functions["ApiFunction"].name
    assert {(route.method, route.resource, route.function) for route in definition.routes} == {
        ("GET", "/{code}", function),
        ("HEAD", "/{code}", function),
        ("POST", "/{code}", function),
        ("GET", "/", function),
        ("POST", "/", function),
        ("GET", "/apple-app-site-association", function),
        ("GET", "/.well-known/apple-app-site-association", function),
    }
