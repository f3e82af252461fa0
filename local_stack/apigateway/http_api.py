"""API Gateway's HTTP APIs (v2), locally: the edge's origin (template.yaml's EdgeOriginApi) served on
loopback, its routes read from the template's AWS::ApiGatewayV2::Route resources, each request turned
into a Lambda proxy event of payload format 1.0 for the function its integration names ("Create AWS
Lambda proxy integrations for HTTP APIs",
https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html).

What it has not (as on AWS, or on purpose): no WAF (HTTP APIs take none), no authorizer, no usage
plan, no cache, and no access log: the stage in the template has none, so a click through the edge is
counted from the edge's own logs only. A request no route matches gets the HTTP API's
``404 {"message":"Not Found"}``."""

import re
import socket
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote, urlsplit

from local_stack.apigateway.gateway import ApiGateway, HttpRequest, Route, find_route, proxy_event
from local_stack.awslambda.runtime import LambdaRuntime
from local_stack.cloudformation.resources import HTTP_API, HTTP_INTEGRATION, HTTP_ROUTE, Resources

# The stage an HTTP API serves at its root, the only one this listener serves.
DEFAULT_STAGE = "$default"
_FUNCTION_ARN = re.compile(r"arn:[^:]*:lambda:[^:]*:[^:]*:function:(?P<name>[^:/]+)")


@dataclass(frozen=True)
class HttpApiDefinition:
    """One HTTP API of the template: its id (its Ref, which names its host) and its routes."""

    logical_id: str
    api_id: str
    routes: tuple[Route, ...]


def http_apis(resources: Resources) -> list[HttpApiDefinition]:
    """The template's HTTP APIs whose routes integrate a function that runs here. Each route's
    ``RouteKey`` (``GET /{code}``) and ``Target`` (``integrations/{id}``) name its method, path and
    integration; the integration's ``IntegrationUri`` names the function."""
    running = {spec.name for spec in resources.functions.values()}
    resolve = resources.resolver.resolve  # fresh: the ids exist only once their providers ran
    template = resources.template["Resources"]
    integrations = {
        str(resources.resolver.refs.get(logical_id)): resolve(template[logical_id].get("Properties", {}))
        for logical_id in resources.of_type(HTTP_INTEGRATION)
    }
    definitions = []
    for logical_id in resources.of_type(HTTP_API):
        api_id = str(resources.resolver.refs.get(logical_id))
        routes = []
        for route_id in resources.of_type(HTTP_ROUTE):
            properties = resolve(template[route_id].get("Properties", {}))
            if str(properties.get("ApiId")) != api_id:
                continue
            method, _, path = str(properties["RouteKey"]).partition(" ")
            integration = integrations.get(
                str(properties.get("Target", "")).removeprefix("integrations/"), {}
            )
            found = _FUNCTION_ARN.search(str(integration.get("IntegrationUri", "")))
            if found and found["name"] in running and integration.get("PayloadFormatVersion") == "1.0":
                routes.append(Route(path, method, found["name"]))
        definitions.append(HttpApiDefinition(logical_id, api_id, tuple(routes)))
    return definitions


def payload_v1_event(
    request: HttpRequest, route: Route, path_parameters: dict[str, str], api_id: str
) -> dict[str, Any]:
    """The payload format 1.0 event an HTTP API sends for ``request``: the REST proxy event's fields
    (which Powertools' APIGatewayRestResolver reads), ``"version": "1.0"``, header names in lower
    case, the ``$default`` stage and no resource id (the page's example)."""
    event = proxy_event(request, route, path_parameters, [], api_id)
    event["version"] = "1.0"
    event["headers"] = {name.lower(): value for name, value in event["headers"].items()}
    multi: dict[str, list[str]] = {}
    for name, values in event["multiValueHeaders"].items():
        multi.setdefault(name.lower(), []).extend(values)
    event["multiValueHeaders"] = multi
    context = event["requestContext"]
    context.update(stage=DEFAULT_STAGE, resourceId=None, domainPrefix=context["domainName"].split(".", 1)[0])
    context["authorizer"] = {"claims": None, "scopes": None}
    return event


class HttpApi(ApiGateway):
    """One HTTP API's $default stage on loopback: route, invoke, answer."""

    def __init__(
        self, definition: HttpApiDefinition, runtime: LambdaRuntime, listening: socket.socket
    ) -> None:
        super().__init__(list(definition.routes), [], runtime, definition.api_id, 0, listening=listening)

    def answer(self, request: HttpRequest) -> tuple[int, list[tuple[str, str]], bytes]:
        path = urlsplit(request.target).path or "/"
        found = find_route(self.routes, request.method, unquote(path))
        if found is None:
            return HTTPStatus.NOT_FOUND, [("Content-Type", "application/json")], b'{"message":"Not Found"}'
        route, parameters = found
        return self._integrate(route, payload_v1_event(request, route, parameters, self.api_id))
