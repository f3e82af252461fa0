"""The API function: single links, redirects, the index page and the app-links document (bulk
routes in bulk.py, link management and the blocklist in links.py). Routes parse, call the layer,
and answer; errors are mapped to JSON once, below."""

import json
from functools import lru_cache
from pathlib import Path

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from batches import router as batches_router
from bulk import router as bulk_router
from bulk_links import router as bulk_links_router
from clicks import router as clicks_router
from links import router as links_router
from qr import router as qr_router
from request import api_url, base_url, body_fields, caller, stage_cache

from shortener import clock
from shortener.clicks.agents import is_crawler
from shortener.exceptions import LinkExpiredError, LinkGoneError, LinkNotFoundError, ShortenerError
from shortener.http import edge_origin, openapi, security_headers, web
from shortener.http.api import ErrorBody
from shortener.http.openapi import Answer, link_to, operation
from shortener.links.model import ShortenRequest, ShortenResult
from shortener.links.targeting import visitor_of
from shortener.observability import logger, metrics
from shortener.services.api import api_links as links
from shortener.settings import api_settings

# Bodies are validated by the layer's pydantic models; the resolver's own validation (OpenAPI
# models) would add about 130 ms to every cold start for path parameters that are plain strings.
app = APIGatewayRestResolver()
_HERE = Path(__file__).parent
app.include_router(bulk_router)
app.include_router(bulk_links_router)
app.include_router(batches_router)
app.include_router(links_router)
app.include_router(clicks_router)
app.include_router(qr_router)
# Answers about a missing or removed link must not be kept by browsers or proxies: the code may
# be created (404) or re-enabled (410) later.
_NO_STORE = {"Cache-Control": "no-store"}


@lru_cache(maxsize=1)
def apple_app_site_association() -> str:
    # Serialised once per container.
    return json.dumps(api_settings().APPLE_APP_SITE_ASSOCIATION, separators=(",", ":"))


@lru_cache(maxsize=4)
def page(name: str) -> str:
    return (_HERE / name).read_text(encoding="utf-8")


# What a client may do with a link it made (POST /): the stateful fuzzing follows these.
_CODE = "$response.body#/code"
_LINK_OPERATIONS = {
    "ShowLink": link_to("GET", "/links/{code}", code=_CODE),
    "ChangeLink": link_to("PATCH", "/links/{code}", code=_CODE),
    "DeleteLink": link_to("DELETE", "/links/{code}", code=_CODE),
    "FollowLink": link_to("GET", "/{code}", code=_CODE),
    "CheckLink": link_to("HEAD", "/{code}", code=_CODE),
}


@app.get("/", **operation("The index page", {200: Answer("The page", media_type="text/html")}, keyed=False))
def index_page() -> Response[str]:
    return Response(200, "text/html; charset=utf-8", page("index.html"))


@app.post(
    "/",
    **operation(
        "Shorten one URL",
        {
            201: Answer("A new link", ShortenResult, links=_LINK_OPERATIONS),
            200: Answer("The existing link", ShortenResult, links=_LINK_OPERATIONS),
        },
        errors=(409,),
        body=ShortenRequest,
        body_media_types=("application/json", "application/x-www-form-urlencoded"),
    ),
)
def shorten() -> Response[str]:
    event = app.current_event
    request = web.parse_request(ShortenRequest, body_fields(event))
    settings = api_settings()
    result = links().shorten(
        request,
        settings.url_policy().with_own_host(*web.own_hosts(event.raw_event, settings.AWS_REGION)),
        base_url(event),
        owner=caller(event).owner_id,
    )
    metrics.add_metric(
        name="LinksCreated" if result.created else "LinksFound", unit=MetricUnit.Count, value=1
    )
    # A custom code may have been followed before it existed (people check whether a code is free
    # that way): the stage cache would keep answering 404 for its TTL.
    refresh = stage_cache(event) if result.created and request.code else None
    if refresh is not None and refresh(result.code) != settings.REDIRECT_STATUS:
        logger.warning("The stage cache entry of a new code was not refreshed", extra={"code": result.code})
    return Response(201 if result.created else 200, content_types.APPLICATION_JSON, result.model_dump_json())


_APP_LINKS = operation(
    "The app-links document",
    {200: Answer("The configured document (JSON)", schema={"type": "object"})},
    keyed=False,
    tag="pages",
)


@app.get("/apple-app-site-association", **_APP_LINKS)
@app.get("/.well-known/apple-app-site-association", **_APP_LINKS)
def app_site_association() -> Response[str]:
    return Response(200, content_types.APPLICATION_JSON, apple_app_site_association())


@app.get(
    "/openapi.json",
    **operation(
        "This document (OpenAPI 3.1)",
        {200: Answer("The document", schema={"type": "object"})},
        keyed=False,
        tag="pages",
    ),
)
def openapi_document() -> Response[str]:
    spec = dict(_openapi_document())
    spec["servers"] = [{"url": api_url(app.current_event)}]
    return Response(200, content_types.APPLICATION_JSON, json.dumps(spec))


@lru_cache(maxsize=1)
def _openapi_document() -> dict:
    # Built on the first request for it: a cold start of any other route does not pay for it.
    return openapi.document(app)


_REDIRECT = {
    "Location": "The link's URL.",
    "Cache-Control": "How long browsers may keep the redirect (the stack's RedirectCacheControl).",
}
_MISSING_PAGE = "An HTML page for browsers (Accept: text/html); JSON otherwise"


_REDIRECTS = {
    status: Answer(
        f"{status}: to the link's URL (the status is the stack's RedirectStatus)",
        headers=_REDIRECT,
        media_type="text/plain",
    )
    for status in (301, 302, 307, 308)
}


# Registered last: the static routes above take precedence over these catch-alls. HEAD answers
# as GET does, without a body (link checkers and `curl -I`).
@app.get(
    "/<code>",
    **operation(
        "Follow a short link",
        _REDIRECTS
        | {
            404: Answer(_MISSING_PAGE, ErrorBody, html_too=True),
            410: Answer(_MISSING_PAGE, ErrorBody, html_too=True),
        },
        keyed=False,
    ),
)
@app.head(
    "/<code>",
    **operation(
        "Check a short link (as GET, without a body)",
        {status: Answer("As GET", headers=_REDIRECT, empty=True) for status in (301, 302, 307, 308)}
        | {404: Answer("No such link", empty=True), 410: Answer("Taken down", empty=True)},
        keyed=False,
    ),
)
def follow(code: str) -> Response[str]:
    event = app.current_event
    # HEAD only looks, and a crawler or link-preview fetcher only shows the link: neither uses up
    # one of a link's allowed clicks (the click collector still records the preview as a bot's).
    resolution = links().resolve(
        code,
        fresh=web.wants_fresh(event.headers),
        count_click=event.http_method != "HEAD",
        from_bot=lambda: is_crawler(web.header(event.headers, "user-agent")),
    )
    # Checks that answer instead of any destination (a password page, a crawler's preview) go
    # here, before the destination is decided (docs/api.md, "Link rules": their precedence).
    decision = links().destination(
        resolution, lambda: visitor_of(event.headers, web.query_string(event.raw_event))
    )
    metrics.add_metric(name="Redirects", unit=MetricUnit.Count, value=1)
    settings = api_settings()
    cache_control = resolution.cache_control(
        settings.REDIRECT_CACHE_CONTROL, clock.now(), settings.EDGE_CACHE_SECONDS
    )
    return Response(
        resolution.redirect_status(settings.REDIRECT_STATUS),
        "text/plain; charset=utf-8",
        "",
        headers={"Location": decision.url, "Cache-Control": cache_control},
    )


@app.exception_handler(LinkNotFoundError)
def link_not_found(error: LinkNotFoundError) -> Response[str]:
    metrics.add_metric(name="RedirectMisses", unit=MetricUnit.Count, value=1)
    return _missing(error, "not_found.html")


@app.exception_handler(LinkGoneError)
def link_gone(error: LinkGoneError) -> Response[str]:
    metrics.add_metric(name="RedirectsGone", unit=MetricUnit.Count, value=1)
    return _missing(error, "gone.html")


@app.exception_handler(LinkExpiredError)
def link_expired(error: LinkExpiredError) -> Response[str]:
    metrics.add_metric(name="RedirectsExpired", unit=MetricUnit.Count, value=1)
    return _missing(error, "expired.html")


def _missing(error: ShortenerError, html_page: str) -> Response[str]:
    event = app.current_event
    if event.http_method == "HEAD":
        return Response(error.status_code, content_types.APPLICATION_JSON, "", headers=_NO_STORE)
    if web.wants_html(event.headers):
        return Response(error.status_code, "text/html; charset=utf-8", page(html_page), headers=_NO_STORE)
    return _error(error.status_code, error.error, error.message, headers=_NO_STORE)


@app.exception_handler(ShortenerError)
def domain_error(error: ShortenerError) -> Response[str]:
    return _error(error.status_code, error.error, error.message)


@app.not_found
def route_not_found(_: Exception) -> Response[str]:
    return _error(404, "not_found", "No such path or method.")


def _error(status: int, error: str, message: str, headers: dict[str, str] | None = None) -> Response[str]:
    body = json.dumps({"error": error, "message": message})
    return Response(status, content_types.APPLICATION_JSON, body, headers=headers)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict, context: LambdaContext) -> dict:
    settings = api_settings()
    refused = edge_origin.edge_refusal(event, settings.EDGE_ORIGIN_SECRET)
    return security_headers.secure(
        refused if refused is not None else app.resolve(event, context),
        hsts=web.on_custom_domain(event, settings.CUSTOM_DOMAIN),
        connect_origins=security_headers.upload_origins(
            settings.AWS_ENDPOINT_URL_S3 or settings.AWS_ENDPOINT_URL
        ),
    )
