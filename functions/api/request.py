"""What the API's routes read of the request they answer: its caller (as the authorizer vouched
for it), its body's fields, the base of its short URLs, the stage it came through (for the
stage's cache) and where a job it starts comes from.

The function's folder is its code root, as Lambda and the local stack import it (``Handler:
app.lambda_handler``): the modules here import each other by their own names (``from request
import base_url``), and tests put this folder on the path too (pyproject's pytest ``pythonpath``)."""

from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from shortener.access.model import Caller
from shortener.audit.model import AuditAction
from shortener.audit.trail import actor_of
from shortener.http import web
from shortener.jobs.submit import JobOrigin
from shortener.jobs.topics import job_topic
from shortener.links.domains import JobDomains, ShortUrls
from shortener.links.management import StageCacheInvalidator
from shortener.links.model import ATTRIBUTE_COLUMNS, LinkAttributes
from shortener.services.api import api_announcer, audit_trail, short_link_base, stage_cache_invalidator
from shortener.settings import api_settings
from shortener.webhooks.model import WebhookEventType


def caller(event: APIGatewayProxyEvent) -> Caller:
    """Who is asking: the key's owner and role, anonymous without one."""
    return web.caller_from_event(event.raw_event)


def audit(
    event: APIGatewayProxyEvent,
    action: AuditAction,
    target: str,
    *,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
) -> None:
    """Record a change the request made in the audit log, before it is answered (where the stack
    keeps one): the caller, the change, the caller's address."""
    trail = audit_trail()
    if trail is not None:
        address = web.client_address(event.raw_event) or None
        trail.record(actor_of(caller(event)), action, target, before=before, after=after, source_ip=address)


def announce(event_type: WebhookEventType, owner: str | None, data: Callable[[], Mapping[str, Any]]) -> None:
    """Tell the owner's webhooks of a change (where the owner has one for it): ``data`` is made
    only then. After the change and its audit entry; the delivery itself never runs here."""
    announcer = api_announcer()
    if announcer is not None:
        announcer.announce(owner, event_type, data)


def base_url(event: APIGatewayProxyEvent) -> str:
    """The base that short URLs start with, ending with "/": the configured one (the short domain),
    else the edge's host when it is on, else the host the request came to."""
    return web.public_base_url(short_link_base(), event.headers, event.request_context.stage)


def short_urls(event: APIGatewayProxyEvent) -> ShortUrls:
    """Where each of the stack's domains answers its short links (the default domain at
    ``base_url``)."""
    return api_settings().short_urls(base_url(event))


def api_url(event: APIGatewayProxyEvent) -> str:
    """The base of the API's own links (a job's or a batch's status, results pages), ending with
    "/": the host the request came to. Not the short domain: behind the edge that is CloudFront's,
    which passes no API key to the API."""
    return web.public_base_url("", event.headers, event.request_context.stage)


def body_fields(event: APIGatewayProxyEvent) -> dict[str, Any]:
    """The fields of a JSON or form body."""
    return web.parse_fields(
        web.body_bytes(event.body, event.is_base64_encoded), web.header(event.headers, "content-type")
    )


def stage_base_url(event: APIGatewayProxyEvent) -> str | None:
    """The URL of the stage the request came through when that stage caches ``GET /{code}``."""
    settings = api_settings()
    if not settings.API_CACHE_ENABLED:
        return None
    return web.stage_base_url(event.raw_event, settings.AWS_REGION, settings.AWS_ENDPOINT_URL_EXECUTE_API)


def stage_cache(event: APIGatewayProxyEvent) -> StageCacheInvalidator | None:
    """The prod stage's cache of GET /{code}, when the stage has one: refreshes one code's entry."""
    stage = stage_base_url(event)
    return stage_cache_invalidator(stage) if stage is not None else None


def job_origin(event: APIGatewayProxyEvent, notify_topic: str | None = None) -> JobOrigin:
    """Where a job started by this request comes from (422 for a topic the stack does not allow)."""
    settings = api_settings()
    submitter = caller(event)
    return JobOrigin(
        notify_topic=job_topic(notify_topic, settings.JOB_TOPIC_PREFIX),
        own_host=web.request_authority(event.headers),
        base_url=base_url(event),
        api_url=api_url(event),
        bucket=settings.BULK_BUCKET,
        owner=submitter.owner_id,
        own_hosts=tuple(web.own_hosts(event.raw_event, settings.AWS_REGION)),
        domains=JobDomains.of(short_urls(event), submitter),
    )


def link_defaults(fields: Mapping[str, Any]) -> dict[str, str]:
    """A job's defaults for its rows' link attributes (expires_at, title, tags, domain, ...; 422
    if invalid)."""
    given = {name: fields[name] for name in ATTRIBUTE_COLUMNS if fields.get(name) is not None}
    return web.parse_request(LinkAttributes, given).as_cells() if given else {}
