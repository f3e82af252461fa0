"""API Gateway, locally: the template's REST API served on loopback, each request turned into a
proxy event (the shape `sam local generate-event apigateway aws-proxy` prints) for the function the
route integrates, and its answer turned back into HTTP."""

import base64
import fnmatch
import json
import logging
import socket
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from local_stack.apigateway.cache import StageCache
from local_stack.apigateway.http_limits import (
    PAYLOAD_LIMIT_BYTES,
    GatewayAnswer,
    error_answer,
    protocol_error,
)
from local_stack.apigateway.routes import (
    INTEGRATION_TIMEOUT_SECONDS,
    STAGE,
    Guard,
    HttpRequest,
    Route,
    binary_media_types,
    find_route,
    routes_from_swagger,
    security_schemes,
)
from local_stack.awslambda.runtime import FunctionThrottledError, LambdaRuntime
from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.http_reading import BoundedConnections, BoundedRequestHandler, ReadRefused
from local_stack.ports import LISTEN_BACKLOG, adopt

if TYPE_CHECKING:
    from local_stack.cloudwatch.logs import AccessRecord, LogGroup

__all__ = [
    "INTEGRATION_TIMEOUT_SECONDS",
    "STAGE",
    "ApiGateway",
    "HttpRequest",
    "Route",
    "binary_media_types",
    "find_route",
    "http_response",
    "proxy_event",
    "routes_from_swagger",
    "security_schemes",
]

log = logging.getLogger(__name__)

_HOP_BY_HOP = {"connection", "content-length", "transfer-encoding", "keep-alive"}


def proxy_event(
    request: HttpRequest, route: Route, path_parameters: dict[str, str], binary_types: list[str], api_id: str
) -> dict[str, Any]:
    """The REST API proxy event API Gateway would send for ``request``."""
    split = urlsplit(request.target)
    path = unquote(split.path) or "/"
    headers = [
        *((k, v) for k, v in request.headers if k.lower() not in ("x-forwarded-proto", "x-forwarded-port")),
        ("X-Forwarded-Proto", "http"),
        ("X-Forwarded-Port", str(request.port)),
    ]
    if not any(k.lower() == "x-forwarded-for" for k, _ in headers):
        headers.append(("X-Forwarded-For", request.source_ip))
    query = parse_qsl(split.query, keep_blank_values=True)
    content_type = next((v for k, v in headers if k.lower() == "content-type"), "")
    is_binary = bool(request.body) and _is_binary(content_type, binary_types)
    body: str | None = None
    if request.body:
        body = (
            base64.b64encode(request.body).decode() if is_binary else request.body.decode("utf-8", "replace")
        )
    now = datetime.now(UTC)
    user_agent = next((v for k, v in headers if k.lower() == "user-agent"), None)
    host = next((v for k, v in headers if k.lower() == "host"), "")
    return {
        "body": body,
        "resource": route.resource,
        "path": path,
        "httpMethod": request.method,
        "isBase64Encoded": is_binary,
        "queryStringParameters": dict(query) or None,
        "multiValueQueryStringParameters": _multi(query) or None,
        "pathParameters": path_parameters or None,
        "stageVariables": None,
        "headers": dict(headers),
        "multiValueHeaders": _multi(headers),
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "resourceId": uuid.uuid5(uuid.NAMESPACE_URL, route.resource).hex[:6],
            "stage": STAGE,
            "requestId": request.request_id,
            "extendedRequestId": str(uuid.uuid4()),
            "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "requestTimeEpoch": int(now.timestamp() * 1000),
            "identity": {
                "cognitoIdentityPoolId": None,
                "accountId": None,
                "cognitoIdentityId": None,
                "caller": None,
                "accessKey": None,
                "sourceIp": request.source_ip,
                "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None,
                "userArn": None,
                "userAgent": user_agent,
                "user": None,
            },
            # Served at the root, like a custom domain mapped to the stage: no stage in the path.
            "path": path,
            "resourcePath": route.resource,
            "httpMethod": request.method,
            "apiId": api_id,
            "domainName": host.split(":", 1)[0],
            "protocol": "HTTP/1.1",
        },
    }


def http_response(
    result: Any, binary_types: Sequence[str] = ("*/*",), accept: str = "*/*"
) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body) for a proxy integration's answer; a malformed answer is a 502,
    as API Gateway gives. A base64-encoded body is decoded only when the client's first Accept
    value matches one of the API's binary media types; otherwise the client gets the base64 text
    (API Gateway developer guide, "Binary media types for REST APIs": "API Gateway uses the first
    Accept header from clients to determine if a response should return binary media"). A request
    without Accept is read as accepting anything (*/*)."""
    if not isinstance(result, dict) or not isinstance(result.get("statusCode"), int):
        return _gateway_error(HTTPStatus.BAD_GATEWAY, "Internal server error")
    headers: list[tuple[str, str]] = []
    for key, values in (result.get("multiValueHeaders") or {}).items():
        headers += [(key, str(value)) for value in values]
    listed = {key.lower() for key, _ in headers}
    headers += [(k, str(v)) for k, v in (result.get("headers") or {}).items() if k.lower() not in listed]
    headers = [(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP]
    body = result.get("body") or ""
    first_accept = accept.split(",", 1)[0].strip() or "*/*"
    binary = bool(result.get("isBase64Encoded")) and _is_binary(first_accept, list(binary_types))
    raw = base64.b64decode(body) if binary else str(body).encode()
    if not any(k.lower() == "content-type" for k, _ in headers):
        headers.append(("Content-Type", "application/json"))
    return result["statusCode"], headers, raw


class ApiGateway(BoundedConnections, ThreadingHTTPServer):
    """The REST API on loopback; requests read within bounds (local_stack/http_reading.py)."""

    block_on_close = False
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        routes: list[Route],
        binary_types: list[str],
        runtime: LambdaRuntime | None,
        api_id: str,
        port: int,
        *,
        access: Guard | None = None,
        cache: StageCache | None = None,
        access_log: "LogGroup | None" = None,
        listening: socket.socket | None = None,
    ) -> None:
        # ``listening``: a socket the stack bound before (ports.listening_socket), to tell the
        # functions the API's URL before the runtime that runs them exists; ``port`` is then unused.
        super().__init__(("127.0.0.1", port), _Handler, bind_and_activate=listening is None)
        if listening is not None:
            adopt(self, listening)
        self.routes = routes
        self.binary_types = binary_types
        self.runtime = runtime
        self.api_id = api_id
        # WAF, authorizers, usage plans and gateway responses (local_stack/apigateway/access.py).
        self.access = access
        # The stage cache when the stage turns it on (local_stack/apigateway/cache.py).
        self.cache = cache
        # The stage's access log when it has one (local_stack/cloudwatch/logs.py): a line per
        # answered request.
        self.access_log = access_log

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (a CLI interrupted, a test's timeout) is not the stack's error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def answer(self, request: HttpRequest) -> tuple[int, list[tuple[str, str]], bytes]:
        """Screen, route, admit, invoke, answer."""
        if self.access is not None and (blocked := self.access.screen(request)) is not None:
            return blocked
        path = urlsplit(request.target).path or "/"
        found = find_route(self.routes, request.method, unquote(path))
        if found is None and self.access is not None:
            # The template's gateway response for it, if it has one (it does: a 404).
            return self.access.no_route(request)
        if found is None:
            status, headers, body = _gateway_error(HTTPStatus.FORBIDDEN, "Missing Authentication Token")
            return status, [*headers, ("x-amzn-ErrorType", "MissingAuthenticationTokenException")], body
        route, parameters = found
        event = proxy_event(request, route, parameters, self.binary_types, self.api_id)
        if self.access is not None and (refused := self.access.admit(route, event)) is not None:
            return refused
        if self.cache is not None:
            # After the method's authorization, as API Gateway looks up its cache.
            return self.cache.serve(
                request.method,
                route.resource,
                target=request.target,
                headers=request.headers,
                path_parameters=parameters,
                fetch=lambda: self._integrate(route, event),
            )
        return self._integrate(route, event)

    def _integrate(self, route: Route, event: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
        """Invoke the route's function with the proxy event and turn its answer into HTTP."""
        assert self.runtime is not None
        try:
            invocation = self.runtime.invoke(route.function, event, slot_timeout=INTEGRATION_TIMEOUT_SECONDS)
        except FunctionThrottledError:
            return _gateway_error(HTTPStatus.GATEWAY_TIMEOUT, "Endpoint request timed out")
        if invocation.error is not None:
            if invocation.error.get("errorType") == "Sandbox.Timedout":
                return _gateway_error(HTTPStatus.GATEWAY_TIMEOUT, "Endpoint request timed out")
            error = invocation.error
            log.error("%s failed: %s: %s", route.function, error.get("errorType"), error.get("errorMessage"))
            return _gateway_error(HTTPStatus.BAD_GATEWAY, "Internal server error")
        accept = next(
            (str(value) for name, value in (event.get("headers") or {}).items() if name.lower() == "accept"),
            "",
        )
        return http_response(invocation.result, self.binary_types, accept)


class _Handler(BoundedRequestHandler):
    server: ApiGateway

    def _handle(self) -> None:
        started = time.monotonic()
        # A stalled, misframed or too large body is refused while read (local_stack/http_reading.py).
        body = self.read_body(PAYLOAD_LIMIT_BYTES)
        # API Gateway's Host is the API's own host, whatever the client sent (it routes by it):
        # here the stage's address, so no Host header can choose the host of a short URL.
        # Transfer-Encoding is dropped, as API Gateway drops it before the integration ("Amazon API
        # Gateway important notes", REST APIs: https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-known-issues.html):
        # the function gets the whole body, read from its chunks.
        own_host = urlsplit(self.server.url).netloc
        request = HttpRequest(
            method=self.command,
            target=self.path,
            headers=[
                (k, own_host if k.lower() == "host" else v)
                for k, v in self.headers.items()
                if k.lower() != "transfer-encoding"
            ]
            + ([] if "Host" in self.headers else [("Host", own_host)]),
            body=body,
            source_ip=self.client_address[0],
            port=self.server.server_address[1],
        )
        status, headers, raw = self.server.answer(request)
        if self.server.access_log is not None:
            # API Gateway logs every answer of the stage, its cache's and its own refusals included.
            self.server.access_log.write(access_record(request, status, len(raw), self.server))
        self._send(status, headers, raw, started=started)

    def _send(self, status: int, headers: list[tuple[str, str]], raw: bytes, *, started: float) -> None:
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(raw)
        elapsed = (time.monotonic() - started) * 1000
        log.info("%s %s %d %.0f ms", self.command, getattr(self, "path", ""), status, elapsed)

    def refusal_answer(self, refused: ReadRefused) -> GatewayAnswer:
        log.info(
            "%s %s %d (refused while read)",
            getattr(self, "command", ""),
            getattr(self, "path", ""),
            refused.status,
        )
        return error_answer(refused.status, refused.error, refused.message)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (unknown method, request line or headers too long, bad
        syntax) in the project's error shape instead of its HTML (local_stack/apigateway/http_limits.py)."""
        answer: GatewayAnswer = protocol_error(code, getattr(self, "command", "") or "")
        if getattr(self, "request_version", "") in ("", "HTTP/0.9"):
            self.request_version = "HTTP/1.1"  # so that the status line and headers are written
        self.close_connection = True
        self._send(*answer, started=time.monotonic())

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

    def log_message(self, format: str, *args: Any) -> None:
        pass  # _handle logs each request once, with its timing


def access_record(request: HttpRequest, status: int, length: int, api: ApiGateway) -> "AccessRecord":
    """What the access log says of one answered request."""
    from local_stack.cloudwatch.logs import AccessRecord

    path = unquote(urlsplit(request.target).path) or "/"
    found = find_route(api.routes, request.method, path)
    headers = {name.lower(): value for name, value in request.headers}
    return AccessRecord(
        method=request.method,
        path=path,
        resource_path=found[0].resource if found else None,
        status=status,
        source_ip=request.source_ip,
        user_agent=headers.get("user-agent"),
        response_length=length,
        api_id=api.api_id,
        stage=STAGE,
        domain_name=headers.get("host", "").split(":", 1)[0],
        request_id=request.request_id,
    )


def _multi(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return grouped


def _is_binary(content_type: str, binary_types: list[str]) -> bool:
    media_type = content_type.split(";", 1)[0].strip().lower()
    return any(fnmatch.fnmatch(media_type, pattern.lower()) for pattern in binary_types)


def _gateway_error(status: HTTPStatus, message: str) -> tuple[int, list[tuple[str, str]], bytes]:
    body = json.dumps({"message": message}).encode()
    return status, [("Content-Type", "application/json")], body
