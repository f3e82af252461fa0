"""API Gateway's route table: a RestApi's OpenAPI body read into routes (with their authorizer and
API key), the route a request takes, and the request as it arrived over HTTP. The gateway, its access
checks and its authorizers all read these; none of them is imported here, so there is no cycle."""

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from local_stack.apigateway.gateway_responses import GatewayAnswer
from local_stack.cloudformation.resources import LOCAL_STAGE

STAGE = LOCAL_STAGE
_FUNCTION_IN_URI = re.compile(r"/functions/arn:[^/]*:function:(?P<name>[^/:]+)(:[^/]*)?/invocations")
_ANY_METHOD = "x-amazon-apigateway-any-method"
# Segment kinds, most specific first: API Gateway prefers /jobs/x over /{code} over /{proxy+}.
_LITERAL, _PARAMETER, _GREEDY = 0, 1, 2


@dataclass(frozen=True)
class Route:
    """One method of one resource path, the function it integrates, and what guards it: a Lambda
    authorizer (by its security definition name) and whether an API key is required."""

    resource: str
    method: str
    function: str
    authorizer: str | None = None
    api_key_required: bool = False

    @property
    def segments(self) -> list[str]:
        return _segments(self.resource)

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """The path parameters when ``method path`` is this route, else None."""
        if self.method not in ("ANY", method):
            return None
        parts, parameters = _segments(path), {}
        for index, segment in enumerate(self.segments):
            if segment.endswith("+}"):
                if index >= len(parts):
                    return None
                parameters[segment[1:-2]] = "/".join(parts[index:])
                return parameters
            if index >= len(parts):
                return None
            if segment.startswith("{"):
                parameters[segment[1:-1]] = parts[index]
            elif segment != parts[index]:
                return None
        return parameters if len(parts) == len(self.segments) else None

    def specificity(self) -> tuple[int, ...]:
        return tuple(
            _GREEDY if s.endswith("+}") else _PARAMETER if s.startswith("{") else _LITERAL
            for s in self.segments
        )


def security_schemes(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body's security definitions: ``securityDefinitions`` in Swagger 2.0, and
    ``components.securitySchemes`` in OpenAPI 3 (what SAM writes when ``OpenApiVersion`` is set)."""
    openapi3 = (body.get("components") or {}).get("securitySchemes")
    return dict(body.get("securityDefinitions") or openapi3 or {})


def routes_from_swagger(body: dict[str, Any]) -> list[Route]:
    """The routes of a RestApi's (SAM-generated, resolved) OpenAPI body, with their security: a
    security definition carrying ``x-amazon-apigateway-authorizer`` is the method's authorizer; the
    plain ``apiKey`` definition named x-api-key means the method requires an API key."""
    definitions = security_schemes(body)
    routes = []
    for resource, methods in body.get("paths", {}).items():
        for method, operation in methods.items():
            if not isinstance(operation, dict):
                continue
            uri = operation.get("x-amazon-apigateway-integration", {}).get("uri", "")
            if found := _FUNCTION_IN_URI.search(str(uri)):
                verb = "ANY" if method == _ANY_METHOD else method.upper()
                names = [
                    name for entry in operation.get("security", body.get("security", [])) for name in entry
                ]
                authorizer = next(
                    (n for n in names if "x-amazon-apigateway-authorizer" in definitions.get(n, {})), None
                )
                api_key = any(
                    definitions.get(n, {}).get("type") == "apiKey"
                    and str(definitions[n].get("name", "")).lower() == "x-api-key"
                    and "x-amazon-apigateway-authorizer" not in definitions[n]
                    for n in names
                )
                routes.append(Route(resource, verb, found["name"], authorizer, api_key))
    return routes


def binary_media_types(properties: dict[str, Any]) -> list[str]:
    """The RestApi's binary media types; the template writes "/" as "~1" (JSON pointer style)."""
    body = properties.get("Body", {})
    types = body.get("x-amazon-apigateway-binary-media-types") or properties.get("BinaryMediaTypes", [])
    return [media_type.replace("~1", "/") for media_type in types]


def find_route(routes: Iterable[Route], method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    """The most specific route for ``method path`` and its path parameters."""
    matches = [(route, params) for route in routes if (params := route.match(method, path)) is not None]
    if not matches:
        return None
    return min(matches, key=lambda match: (match[0].specificity(), match[0].method == "ANY"))


@dataclass(frozen=True)
class HttpRequest:
    """What arrived over HTTP, before API Gateway turns it into an event."""

    method: str
    target: str  # path and query string, as sent
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str
    port: int
    # $context.requestId: the same in the integration's event and in the access log line, as on
    # API Gateway (the collector joins a click to its answer by it).
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))


# API Gateway waits for its integration up to 29 s (its default integration timeout); a burst that
# finds every execution environment busy waits for one within that time, as on AWS, where Lambda's
# default account concurrency (1,000) would run it at once. Only then is it a 504, as API Gateway's.
INTEGRATION_TIMEOUT_SECONDS = 29.0


def _segments(path: str) -> list[str]:
    stripped = path.strip("/")
    return stripped.split("/") if stripped else []


class Guard(Protocol):
    """What stands before the integration (WAF, authorizers, usage plans: ApiAccess in access.py):
    an answer refuses the request, None lets it through."""

    def screen(self, request: "HttpRequest") -> GatewayAnswer | None: ...

    def admit(self, route: Route, event: dict[str, Any]) -> GatewayAnswer | None: ...

    def no_route(self, request: "HttpRequest") -> GatewayAnswer:
        """API Gateway's answer to a method and path that no route matches."""
        ...
