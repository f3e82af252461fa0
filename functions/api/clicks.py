"""Click reports (docs/clicks.md): a link's clicks over a range. Owner-scoped like the other link
routes: another owner's link is a 404. Included into the API's resolver by app.py."""

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from shortener import clock, web
from shortener.dal.clicks import ClicksStore
from shortener.logic.clicks import hour_of, link_report, parse_range
from shortener.models.clicks import LinkTotals
from shortener.models.exceptions import ServiceUnavailableError
from shortener.services import api_clicks, api_link_manager

router = APIGatewayRouter()
_NO_TOTALS = LinkTotals()


@router.get("/links/<code>/clicks")
def link_clicks(code: str) -> Response[str]:
    event = router.current_event
    begin, end, interval = parse_range(
        event.get_query_string_value("from", None),
        event.get_query_string_value("to", None),
        event.get_query_string_value("interval", None),
        clock.now(),
    )
    link = api_link_manager().get(web.caller_from_event(event.raw_event), code)
    store = _store()
    hours = store.hours(link.code, hour_of(begin), end)
    totals = store.totals([link.code]).get(link.code)
    report = link_report(link.code, hours, totals or _NO_TOTALS, begin=begin, end=end, interval=interval)
    return Response(200, content_types.APPLICATION_JSON, report.model_dump_json(by_alias=True))


def _store() -> ClicksStore:
    store = api_clicks()
    if store is None:
        raise ServiceUnavailableError("This stack counts no clicks (it has no clicks table).")
    return store
