"""The edge's origin: an HTTP API (template.yaml's EdgeOriginApi) in front of the API function,
which answers only CloudFront. HTTP APIs take no WAF ("Choose between REST APIs and HTTP APIs",
https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-vs-rest.html), so the
function checks the header CloudFront adds to every origin request (docs/edge.md). No AWS calls."""

import hmac
import json
from collections.abc import Mapping
from typing import Any

from shortener.http.web import header
from shortener.links.codes import is_reserved

# The header the distribution's origin adds (EdgeDistribution's OriginCustomHeaders).
EDGE_HEADER = "X-Shortener-Edge"
# The viewer's Host, as the edge's viewer-request function (template.yaml's EdgeViewerHost) copies
# it: the origin, an HTTP API, needs its own Host, and a short link answers only on its domain.
VIEWER_HOST_HEADER = "X-Shortener-Host"
EDGE_ONLY = {
    "error": "edge_only",
    "message": "This address answers the edge only; follow the short link instead.",
}
NOT_AT_THE_EDGE = {"error": "not_found", "message": "No such path or method."}
# The paths the origin's routes name besides /{code} (template.yaml's EdgeOriginApi routes).
_PAGE_PATHS = frozenset({"/", "/apple-app-site-association", "/.well-known/apple-app-site-association"})


def from_edge_origin(event: Mapping[str, Any]) -> bool:
    """Whether the event came in on the HTTP API: its payload format 1.0 says ``version``, which a
    REST API's proxy event never has ("Create AWS Lambda proxy integrations for HTTP APIs",
    https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html)."""
    return "version" in event


def edge_refusal(event: Mapping[str, Any], secret: str) -> dict[str, Any] | None:
    """None when the event may be answered: a REST API event, or an HTTP API event carrying the
    edge's secret for a path the edge serves. Otherwise a proxy answer: ``403 edge_only`` without
    the secret (a request that skips the edge gets nothing from the origin, no redirect, no click,
    also when no secret is configured); ``404 not_found`` for a management path."""
    if not from_edge_origin(event):
        return None
    sent = header(event.get("headers"), EDGE_HEADER)
    # Compared in constant time: the secret's prefix cannot be guessed from the answer's timing.
    if not (secret and hmac.compare_digest(sent.encode(), secret.encode())):
        return _answer(403, EDGE_ONLY)
    if not is_edge_path(str(event.get("path") or "/")):
        return _answer(404, NOT_AT_THE_EDGE)
    return None


def is_edge_path(path: str) -> bool:
    """Whether the edge serves ``path``: the page, the app-site association, or a short link. The
    origin's route ``GET /{code}`` also matches ``/links`` or ``/jobs``, which the function would
    answer as the management routes, without the authorizer that guards them on the REST API: a
    reserved word is never a code, so it is refused here (docs/edge.md)."""
    if path in _PAGE_PATHS:
        return True
    code = path.removeprefix("/")
    return bool(code) and "/" not in code and not is_reserved(code)


def _answer(status: int, body: dict[str, str]) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", "Cache-Control": "no-store"},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }
