"""The API function: single links, redirects, the index page and the app-links document (bulk
routes in bulk.py, link management and the blocklist in links.py). Routes parse, call the layer,
and answer; errors are mapped to JSON once, below."""

import json
import sys
from functools import lru_cache
from html import escape
from pathlib import Path
from string import Template

from audit import router as audit_router
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from aws_lambda_powertools.utilities.typing import LambdaContext
from batches import router as batches_router
from bulk import router as bulk_router
from bulk_links import router as bulk_links_router
from clicks import router as clicks_router
from links import router as links_router
from qr import router as qr_router
from request import announce, api_url, audit, body_fields, caller, short_urls, stage_cache
from webhooks import router as webhooks_router

from shortener import clock
from shortener.clicks.agents import is_crawler
from shortener.clicks.model import destination_line
from shortener.exceptions import (
    LinkExpiredError,
    LinkGoneError,
    LinkNotFoundError,
    ShortenerError,
    StorageThrottledError,
    TooManyTriesError,
    WrongPasswordError,
)
from shortener.http import edge_origin, openapi, security_headers, sign_in, web
from shortener.http.api import ErrorBody
from shortener.http.openapi import Answer, link_to, operation
from shortener.links.app_site_associations import AppSiteAssociations
from shortener.links.model import LinkView, ShortenRequest, ShortenResult
from shortener.links.previews import preview_page
from shortener.links.protection import Interception
from shortener.links.shortening import EVERY_DOMAIN, Resolution
from shortener.links.targeting import visitor_of
from shortener.observability import logger, metrics
from shortener.services.api import answer_throttling_as_busy, api_link_manager, api_password_gate
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
app.include_router(webhooks_router)
app.include_router(audit_router)
# Answers about a missing or removed link must not be kept by browsers or proxies: the code may
# be created (404) or re-enabled (410) later.
_NO_STORE = {"Cache-Control": "no-store"}
# A throttling table takes requests again within seconds (botocore's own retries waited about one).
_THROTTLED = {**_NO_STORE, "Retry-After": "2"}
# A password link's answers (its page, its redirect) and a preview belong to one visitor: no cache
# may keep them for another (docs/edge.md).
_PER_VISITOR = {"Cache-Control": "private, no-store"}


@lru_cache(maxsize=1)
def app_site_associations() -> AppSiteAssociations:
    # Serialised once per container.
    return api_settings().app_site_associations()


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
    settings = api_settings()
    return Response(
        200, "text/html; charset=utf-8", index_html(settings.SIGN_IN_URL, settings.SIGN_IN_CLIENT_ID)
    )


@lru_cache(maxsize=2)
def index_html(sign_in_url: str, sign_in_client_id: str) -> str:
    """The page, told where people sign in (shortener.http.sign_in)."""
    return sign_in.with_sign_in(page("index.html"), sign_in_url, sign_in_client_id)


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
    urls = short_urls(event)
    request = request.model_copy(update={"domain": urls.for_caller(request.domain, caller(event))})
    result = links().shorten(
        request,
        settings.url_policy().with_own_host(*web.own_hosts(event.raw_event, settings.AWS_REGION)),
        urls,
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
    if result.created:
        audit(event, "link.created", result.code, after=result.model_dump(mode="json"))
        announce("link.created", caller(event).owner_id, lambda: _created_view(event, result.code))
    return Response(201 if result.created else 200, content_types.APPLICATION_JSON, result.model_dump_json())


def _created_view(event: APIGatewayProxyEvent, code: str) -> dict[str, object]:
    """The view of a link this request made (what its link.created event carries)."""
    link = api_link_manager().get(caller(event), code)
    return LinkView.of(link, short_urls(event)).model_dump(mode="json")


_APP_LINKS = operation(
    "The app-links document",
    {200: Answer("The document of the domain it is asked on (JSON)", schema={"type": "object"})},
    keyed=False,
    tag="pages",
)


@app.get("/apple-app-site-association", **_APP_LINKS)
@app.get("/.well-known/apple-app-site-association", **_APP_LINKS)
def app_site_association() -> Response[str]:
    """The document of the domain the request came on (the default domain's on the API's URL)."""
    document = app_site_associations().for_domain(_viewer_domain(app.current_event))
    return Response(200, content_types.APPLICATION_JSON, document)


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
_PER_VISITOR_HEADERS = {"Cache-Control": "private, no-store (never kept by any cache)."}
_SHOWN = Answer(
    "A password link: its password page (a form posting password to POST /{code}); a link with a "
    "preview, to link-preview fetchers and social crawlers: the preview (Open Graph and Twitter card "
    "tags). Never a Location.",
    headers=_PER_VISITOR_HEADERS,
    media_type="text/html",
)


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
            200: _SHOWN,
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
        | {
            200: Answer("As GET: a password page or a preview", headers=_PER_VISITOR_HEADERS, empty=True),
            404: Answer("No such link", empty=True),
            410: Answer("Taken down", empty=True),
        },
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
        domain=_served_domain(event),
    )
    if resolution.shown is not None:
        return _shown(code, resolution.shown)
    metrics.add_metric(name="Redirects", unit=MetricUnit.Count, value=1)
    return _redirect(code, resolution)


# What the password page's form sends (form-encoded, as browsers post forms).
_PASSWORD_FORM = {
    "required": True,
    "content": {
        "application/x-www-form-urlencoded": {
            "schema": {
                "type": "object",
                "properties": {"password": {"type": "string", "description": "The link's password."}},
                "required": ["password"],
            }
        }
    },
}


@app.post(
    "/<code>",
    **operation(
        "Open a password link (its form posts password here)",
        {
            302: Answer("The right password: to the link's URL", headers=_REDIRECT, media_type="text/plain"),
            401: Answer("A wrong password: the page again, with a message", ErrorBody, html_too=True),
            404: Answer(_MISSING_PAGE, ErrorBody, html_too=True),
            405: Answer("The link asks for no password", ErrorBody),
            410: Answer(_MISSING_PAGE, ErrorBody, html_too=True),
            429: Answer(
                "Too many wrong passwords from this client lately (Retry-After: seconds)",
                ErrorBody,
                html_too=True,
            ),
        },
        errors=(400,),
        keyed=False,
        file_body=_PASSWORD_FORM,
    ),
)
def unlock(code: str) -> Response[str]:
    event = app.current_event
    password = body_fields(event).get("password")
    resolution = api_password_gate().unlock(
        code,
        password if isinstance(password, str) else "",
        web.client_address(event.raw_event),
        from_bot=lambda: is_crawler(web.header(event.headers, "user-agent")),
    )
    metrics.add_metric(name="Redirects", unit=MetricUnit.Count, value=1)
    return _redirect(code, resolution)


def _served_domain(event: APIGatewayProxyEvent) -> str | None:
    """The domain a short link was followed on: through the edge, the one its viewer's host names
    (the header the edge's viewer-request function adds, docs/domains.md), where only that
    domain's links answer; on the API's own URL every domain's."""
    if not edge_origin.from_edge_origin(event.raw_event):
        return EVERY_DOMAIN
    return _viewer_domain(event)


def _viewer_domain(event: APIGatewayProxyEvent) -> str | None:
    """The domain the viewer asked for through the edge (None: the default domain, also on the
    API's own URL, whose requests name no domain)."""
    if not edge_origin.from_edge_origin(event.raw_event):
        return None
    return short_urls(event).domain_of_host(web.header(event.headers, edge_origin.VIEWER_HOST_HEADER))


def _redirect(code: str, resolution: Resolution) -> Response[str]:
    event = app.current_event
    # Decided after the checks that answer instead of any destination (a password page, a
    # crawler's preview): docs/api.md, "Link rules", their precedence.
    decision = links().destination(
        resolution, lambda: visitor_of(event.headers, web.query_string(event.raw_event))
    )
    if resolution.rules is not None or resolution.per_visitor:
        _answered(code, decision.rule)
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


def _shown(code: str, shown: Interception) -> Response[str]:
    event = app.current_event
    metrics.add_metric(
        name="PreviewsShown" if shown.shown == "preview" else "PasswordPagesShown",
        unit=MetricUnit.Count,
        value=1,
    )
    if shown.shown == "preview" and shown.link.preview is not None:
        body = preview_page(shown.link.preview, short_urls(event).short_url(shown.link.domain, code))
    else:
        body = _password_page(code)
    _answered(code, shown.shown)
    if event.http_method == "HEAD":
        body = ""
    return Response(200, "text/html; charset=utf-8", body, headers=_PER_VISITOR)


def _answered(code: str, destination: str) -> None:
    """Record which rule answered a rule, password or preview link (docs/clicks.md,
    "Destinations"): one line in the function's log, whatever the log level, which the collector
    counts. A plain link writes none (its answers are all ``default``); HEAD only looks."""
    event = app.current_event
    if event.http_method != "HEAD":
        # The click's id: behind the edge CloudFront's (X-Amz-Cf-Id, its log's x-edge-request-id),
        # else API Gateway's (the access log's requestId).
        request_id = event.headers.get("x-amz-cf-id") or event.request_context.request_id or ""
        sys.stdout.write(destination_line(code, destination, clock.now(), request_id) + "\n")


def _password_page(code: str, problem: str = "") -> str:
    message = f'<p class="problem" role="alert">{escape(problem)}</p>\n' if problem else ""
    return Template(page("password.html")).substitute(message=message, code=escape(code))


@app.exception_handler(WrongPasswordError)
def wrong_password(error: WrongPasswordError) -> Response[str]:
    return _password_problem(error)


@app.exception_handler(TooManyTriesError)
def too_many_tries(error: TooManyTriesError) -> Response[str]:
    return _password_problem(error, {"Retry-After": str(error.retry_after)})


def _password_problem(error: ShortenerError, headers: dict[str, str] | None = None) -> Response[str]:
    """The page again with the problem (JSON for a client that does not take HTML)."""
    event = app.current_event
    answer_headers = {**_PER_VISITOR, **(headers or {})}
    if not web.wants_html(event.headers):
        return _error(error.status_code, error.error, error.message, headers=answer_headers)
    code = (event.path_parameters or {}).get("code", "")
    return Response(
        error.status_code,
        "text/html; charset=utf-8",
        _password_page(code, error.message),
        headers=answer_headers,
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


@app.exception_handler(StorageThrottledError)
def storage_throttled(error: StorageThrottledError) -> Response[str]:
    return _error(error.status_code, error.error, error.message, headers=_THROTTLED)


answer_throttling_as_busy(app, storage_throttled)


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
        connect_origins=(
            *security_headers.upload_origins(settings.AWS_ENDPOINT_URL_S3 or settings.AWS_ENDPOINT_URL),
            *sign_in.sign_in_origins(settings.SIGN_IN_URL),
        ),
    )
