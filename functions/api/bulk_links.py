"""``POST /links/bulk``: up to 1,000 links in one JSON call, one outcome per link in input order.
Included into the API's resolver by app.py; errors raised here are mapped to JSON there."""

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit
from request import caller, short_urls, stage_cache

from shortener.http import web
from shortener.http.openapi import Answer, operation
from shortener.links.bulk_create import read_bulk_request
from shortener.links.bulk_create_model import BulkLinksRequest, BulkLinksResult
from shortener.links.cache_refresh import refresh_codes
from shortener.observability import logger, metrics
from shortener.services.api import api_bulk_links
from shortener.settings import api_settings

router = APIGatewayRouter()


@router.post(
    "/links/bulk",
    **operation(
        "Shorten up to 1,000 links in one call",
        {
            200: Answer(
                "One outcome per link, in input order (each with the status POST / answers)", BulkLinksResult
            )
        },
        body=BulkLinksRequest,
    ),
)
def shorten_links() -> Response[str]:
    event = router.current_event
    settings = api_settings()
    content_type = web.header(event.headers, "content-type")
    items = read_bulk_request(
        web.body_bytes(event.body, event.is_base64_encoded), lambda raw: web.parse_fields(raw, content_type)
    )
    outcomes = api_bulk_links().shorten(
        items,
        settings.url_policy().with_own_host(*web.own_hosts(event.raw_event, settings.AWS_REGION)),
        short_urls(event),
        caller=caller(event),
    )
    created = sum(1 for outcome in outcomes if outcome.status == 201)
    metrics.add_metric(name="LinksCreated", unit=MetricUnit.Count, value=created)
    metrics.add_metric(name="LinksFound", unit=MetricUnit.Count, value=sum(o.status == 200 for o in outcomes))
    # As POST / does: a new custom code may have been followed before it existed, and the stage
    # cache would keep answering 404 for its TTL.
    custom = [
        outcome.code
        for item, outcome in zip(items, outcomes, strict=False)
        if outcome.status == 201 and outcome.code and isinstance(item, dict) and item.get("code")
    ]
    refresh = stage_cache(event) if custom else None
    if refresh is not None:
        statuses = refresh_codes(custom, refresh)
        stale = [code for code, status in statuses.items() if status != settings.REDIRECT_STATUS]
        if stale:
            logger.warning(
                "The stage cache entries of new codes were not refreshed", extra={"codes": stale[:20]}
            )
            metrics.add_metric(name="StageCacheInvalidationFailed", unit=MetricUnit.Count, value=len(stale))
    body = BulkLinksResult(links=outcomes).model_dump_json(exclude_none=True)
    return Response(200, content_types.APPLICATION_JSON, body)
