"""Link management and the blocklist: the caller's links (list, show, change, disable, delete)
and the admins' blocklist of hosts. Included into the API's resolver by app.py; errors raised here
are mapped to JSON there."""

from dataclasses import asdict

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from request import announce, audit, body_fields, caller, short_urls, stage_cache

from shortener.access.blocklist import HostGuard
from shortener.access.blocklist_model import BlockAnswer, Blocklist, BlockRequest
from shortener.access.model import Caller
from shortener.access.takedown import HostTakedowns
from shortener.exceptions import ForbiddenError, InvalidRequestError, NotBlockedError, UnknownDomainError
from shortener.http import web
from shortener.http.api import ListLinksQuery
from shortener.http.openapi import Answer, link_to, operation
from shortener.http.paging import LINKS_PAGE_SIZE
from shortener.links.domains import DomainList, DomainView
from shortener.links.management import Change
from shortener.links.model import Link, LinkList, LinkUpdate, LinkView
from shortener.links.search import DEFAULT_DOMAIN
from shortener.observability import logger, metrics
from shortener.services.api import api_link_manager, api_links, api_takedowns
from shortener.settings import api_settings

router = APIGatewayRouter()


@router.get(
    "/links",
    **operation(
        "The caller's links, newest first",
        {200: Answer("A page", LinkList)},
        errors=(400,),
        query=ListLinksQuery,
    ),
)
def list_links() -> Response[str]:
    event = router.current_event
    found, cursor = api_link_manager().list(
        caller(event),
        owner=event.get_query_string_value("owner", None),
        cursor=event.get_query_string_value("cursor", None),
        limit=web.whole_number(event.get_query_string_value("limit", None) or str(LINKS_PAGE_SIZE), "limit"),
        tag=event.get_query_string_value("tag", None),
        q=event.get_query_string_value("q", None),
        job_id=event.get_query_string_value("job_id", None),
        status=event.get_query_string_value("status", None),
        domain=_listed_domain(event),
    )
    urls = short_urls(event)
    page = LinkList(links=[LinkView.of(link, urls) for link in found], next_cursor=cursor)
    return Response(200, content_types.APPLICATION_JSON, page.model_dump_json())


def _listed_domain(event: APIGatewayProxyEvent) -> str | None:
    """``GET /links?domain=``'s domain as links store it (422 for one the stack does not serve)."""
    wanted = event.get_query_string_value("domain", None)
    if not wanted:
        return None
    try:
        return short_urls(event).stored(wanted) or DEFAULT_DOMAIN
    except UnknownDomainError as exc:
        raise InvalidRequestError(exc.message) from exc


@router.get(
    "/domains",
    **operation(
        "The stack's domains, and which the caller may use", {200: Answer("The domains", DomainList)}
    ),
)
def list_domains() -> Response[str]:
    event = router.current_event
    urls, who = short_urls(event), caller(event)
    domains = DomainList(
        domains=[
            DomainView(
                name=name,
                default=index == 0,
                short_url_base=urls.base_for(None if index == 0 else name),
                allowed=who.may_use_domain(name),
            )
            for index, name in enumerate(urls.names)
        ]
    )
    return Response(200, content_types.APPLICATION_JSON, domains.model_dump_json())


@router.get(
    "/links/<code>",
    **operation("One of the caller's links", {200: Answer("The link", LinkView)}, errors=(404, 410)),
)
def show_link(code: str) -> Response[str]:
    return _link_answer(api_link_manager().get(caller(router.current_event), code))


@router.patch(
    "/links/<code>",
    **operation(
        "Change a link's URL, title, tags or status",
        {
            200: Answer(
                "The changed link",
                LinkView,
                links={"DeleteLink": link_to("DELETE", "/links/{code}", code="$response.body#/code")},
            )
        },
        errors=(404, 409, 410),
        body=LinkUpdate,
    ),
)
def change_link(code: str) -> Response[str]:
    event = router.current_event
    settings = api_settings()
    update = web.parse_request(LinkUpdate, body_fields(event))
    policy = settings.url_policy().with_own_host(*web.own_hosts(event.raw_event, settings.AWS_REGION))
    change = api_link_manager().update(caller(event), code, update, policy, stage_cache(event))
    # Named as the webhook events: a disable is an update whose status changed (before, after say so).
    before, after = change.before or change.link, change.link
    audit(event, "link.updated", after.code, before=_view(before), after=_view(after))
    announce("link.updated", after.owner, lambda: _view(after))
    return _changed(change)


@router.delete(
    "/links/<code>",
    **operation(
        "Delete a link (its code answers 410 from then on)",
        {200: Answer("The deleted link", LinkView)},
        errors=(404, 410),
    ),
)
def delete_link(code: str) -> Response[str]:
    event = router.current_event
    change = api_link_manager().delete(caller(event), code, stage_cache(event))
    metrics.add_metric(name="LinksDeleted", unit=MetricUnit.Count, value=1)
    audit(event, "link.deleted", change.link.code, before=_view(change.before or change.link))
    announce("link.deleted", change.link.owner, lambda: _view(change.link))
    return _changed(change)


@router.get(
    "/blocklist",
    **operation("The blocked hosts (admins)", {200: Answer("Every entry", Blocklist)}, tag="blocklist"),
)
def show_blocklist() -> Response[str]:
    _admin()
    entries = _guard().entries()
    return Response(200, content_types.APPLICATION_JSON, Blocklist(hosts=entries).model_dump_json())


@router.put(
    "/blocklist/<host>",
    **operation(
        "Block a host and its subdomains (admins)",
        {
            200: Answer(
                "The entry, and how many of the host's links were taken down",
                BlockAnswer,
                links={"UnblockHost": link_to("DELETE", "/blocklist/{host}", host="$response.body#/host")},
            )
        },
        body=BlockRequest,
        tag="blocklist",
    ),
)
def block_host(host: str) -> Response[str]:
    admin = _admin()
    event = router.current_event
    raw = web.body_bytes(event.body, event.is_base64_encoded)
    fields = web.parse_fields(raw, web.header(event.headers, "content-type")) if raw.strip() else {}
    request = web.parse_request(BlockRequest, fields)
    entry, report = _takedowns().block(
        host, added_by=admin.owner_id, reason=request.reason, stage_cache=stage_cache(event)
    )
    logger.info("Host blocked", extra={"host": entry.host, "by": admin.owner_id, **asdict(report)})
    if not report.already_blocked:
        audit(
            event,
            "host.blocked",
            entry.host,
            after={**entry.model_dump(mode="json"), "links_taken_down": report.links},
        )
    answer = BlockAnswer(
        **entry.model_dump(),
        links_taken_down=report.links,
        stage_cache_refreshed=report.stage_cache_refreshed,
        scan_complete=report.complete,
        already_blocked=report.already_blocked,
    )
    return Response(200, content_types.APPLICATION_JSON, answer.model_dump_json())


@router.delete(
    "/blocklist/<host>",
    **operation(
        "Unblock a host (admins)", {204: Answer("Unblocked", empty=True)}, errors=(400, 404), tag="blocklist"
    ),
)
def unblock_host(host: str) -> Response[str]:
    admin = _admin()
    report = _takedowns().unblock(host, stage_cache=stage_cache(router.current_event))
    if report is None:
        raise NotBlockedError(f"{host[:80]} is not on the blocklist.")
    logger.info("Host unblocked", extra={"by": admin.owner_id, **asdict(report)})
    audit(router.current_event, "host.unblocked", host)
    return Response(204, content_types.APPLICATION_JSON, "")


def _admin() -> Caller:
    admin = caller(router.current_event)
    if not admin.is_admin:
        raise ForbiddenError("Only an admin can read or change the blocklist.")
    return admin


def _guard() -> HostGuard:
    guard = api_links().guard
    if guard is None:
        raise ForbiddenError("This stack has no blocklist table.")
    return guard


def _takedowns() -> HostTakedowns:
    takedowns = api_takedowns()
    if takedowns is None:
        raise ForbiddenError("This stack has no blocklist table.")
    return takedowns


def _changed(change: Change) -> Response[str]:
    if change.stage_cache_invalidated is False:
        # The change stands; API Gateway may serve the old answer until its TTL ends.
        logger.error("The stage cache entry was not refreshed", extra={"code": change.link.code})
        metrics.add_metric(name="StageCacheInvalidationFailed", unit=MetricUnit.Count, value=1)
    return _link_answer(change.link)


def _view(link: Link) -> dict[str, object]:
    """A link as the audit log keeps it: its view (never a password)."""
    return LinkView.of(link, short_urls(router.current_event)).model_dump(mode="json")


def _link_answer(link: Link) -> Response[str]:
    view = LinkView.of(link, short_urls(router.current_event))
    return Response(200, content_types.APPLICATION_JSON, view.model_dump_json())
