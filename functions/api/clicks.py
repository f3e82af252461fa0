"""Click reports (docs/clicks.md): a link's clicks over a range, the daily clicks of a list of
links, a job's clicks per row.
Owner-scoped like the other link and job routes: another owner's link or job is a 404. Each route
calls one service method and answers; included into the API's resolver by app.py."""

import json
from urllib.parse import urlencode

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from request import api_url, base_url, caller, short_urls

from shortener.clicks.exports import ExportFile
from shortener.clicks.model import ClickErasure, LinkClicks, LinksSeries, TopLinks, TopValues
from shortener.http.api import (
    ClickErasureQuery,
    ClickErasureStatusQuery,
    ClickExportLink,
    ClickExportQuery,
    ClickReportFileLink,
    ErrorBody,
    LinkClicksQuery,
    LinksSeriesQuery,
    TopLinksQuery,
    TopValuesQuery,
)
from shortener.http.openapi import Answer, operation
from shortener.jobs.service import CsvAnswer, FileLink
from shortener.services.api import click_erasures, click_exports, click_reports, job_queries

router = APIGatewayRouter()
# How soon a client asking for a click report file still being built should ask again.
REPORT_RETRY_SECONDS = 5


@router.get(
    "/links/<code>/clicks",
    **operation(
        "A link's clicks over a range: totals, visitors, a series, top lists and breakdowns",
        {200: Answer("The link's clicks", LinkClicks)},
        errors=(400, 404, 410),
        query=LinkClicksQuery,
    ),
)
def link_clicks(code: str) -> Response[str]:
    event = router.current_event
    report = click_reports().link(caller(event), code, event.query_string_parameters or {})
    return Response(200, content_types.APPLICATION_JSON, report.model_dump_json(by_alias=True))


@router.get(
    "/clicks/series",
    **operation(
        "The daily clicks of a list of the caller's links (a table's sparklines)",
        {200: Answer("Each link's total and daily series, in the order asked", LinksSeries)},
        errors=(400, 404, 410),
        query=LinksSeriesQuery,
    ),
)
def links_series() -> Response[str]:
    """One answer for a page of links, where a report per link would be a request each (and a
    page's worth of them goes over a key's burst)."""
    event = router.current_event
    answer = click_reports().series(
        caller(event),
        (event.get_query_string_value("codes", None) or "").split(","),
        start=event.get_query_string_value("from", None),
        end=event.get_query_string_value("to", None),
    )
    return Response(200, content_types.APPLICATION_JSON, answer.model_dump_json(by_alias=True))


@router.get(
    "/clicks",
    **operation(
        "The caller's most followed links over a range, with visitors, filters and breakdowns",
        {200: Answer("The top links", TopLinks)},
        errors=(400,),
        query=TopLinksQuery,
    ),
)
def caller_top_links() -> Response[str]:
    """The caller's most followed links over a range of whole UTC days (an admin's own links too:
    links are filed under their owner)."""
    event = router.current_event
    codes = (event.multi_value_query_string_parameters or {}).get("code") or []
    answer = click_reports().top(
        caller(event), event.query_string_parameters or {}, codes=codes, urls=short_urls(event)
    )
    return Response(200, content_types.APPLICATION_JSON, answer.model_dump_json(by_alias=True))


@router.get(
    "/clicks/top",
    **operation(
        "The top codes, countries or referrers over all of the caller's links",
        {200: Answer("The top values, most clicks first", TopValues)},
        errors=(400,),
        query=TopValuesQuery,
    ),
)
def caller_top_values() -> Response[str]:
    event = router.current_event
    answer = click_reports().top_values(caller(event), event.query_string_parameters or {})
    return Response(200, content_types.APPLICATION_JSON, answer.model_dump_json(by_alias=True))


@router.get(
    "/jobs/<job_id>/clicks",
    **operation(
        "A job's clicks per row, in input order",
        {
            200: Answer(
                "Small jobs: the CSV (row,url,code,short_url,clicks,humans,first_click,last_click,"
                "destinations)",
                media_type="text/csv",
            ),
            202: Answer(
                "Larger jobs: the report file is being built", ErrorBody, headers={"Retry-After": "Seconds."}
            ),
            303: Answer(
                "Larger jobs: the report file", ClickReportFileLink, headers={"Location": "The file."}
            ),
        },
        errors=(404,),
        tag="jobs",
    ),
)
def job_clicks(job_id: str) -> Response[str]:
    """The job's per-row click report: the CSV itself for jobs of up to INLINE_RESULTS_ROWS rows;
    for larger ones a 303 to a file built on request within the hour, else 202 while it is built."""
    event = router.current_event
    answer = job_queries().click_report(caller(event), job_id, base_url(event))
    if isinstance(answer, CsvAnswer):
        headers = {"Content-Disposition": f'attachment; filename="{answer.file_name}"'}
        return Response(200, "text/csv; charset=utf-8", answer.text, headers=headers)
    if isinstance(answer, FileLink):
        body = json.dumps({"report_file_url": answer.url, "expires_at": answer.expires_at.isoformat()})
        return Response(303, content_types.APPLICATION_JSON, body, headers={"Location": answer.url})
    body = json.dumps({"error": answer.error, "message": answer.message})
    return Response(
        202, content_types.APPLICATION_JSON, body, headers={"Retry-After": str(REPORT_RETRY_SECONDS)}
    )


@router.get(
    "/clicks/export",
    **operation(
        "Every click of the caller's links in a range, one line each, as a file",
        {
            202: Answer(
                "The export is being built: ask again (the same URL)",
                ErrorBody,
                headers={"Retry-After": "Seconds."},
            ),
            303: Answer("The export's file", ClickExportLink, headers={"Location": "The file."}),
        },
        errors=(400,),
        query=ClickExportQuery,
    ),
)
def caller_click_export() -> Response[str]:
    """Started by the first request; the same request answers 202 while Athena answers the query
    and the jobs worker writes its file, then 303 to it (a presigned URL that needs no key)."""
    event = router.current_event
    codes = (event.multi_value_query_string_parameters or {}).get("code") or []
    answer = click_exports().export(caller(event), event.query_string_parameters or {}, codes)
    if isinstance(answer, ExportFile):
        body = json.dumps({"export_url": answer.url, "expires_at": answer.expires_at.isoformat()})
        return Response(303, content_types.APPLICATION_JSON, body, headers={"Location": answer.url})
    body = json.dumps({"error": "export_not_ready", "message": answer.message})
    return Response(
        202, content_types.APPLICATION_JSON, body, headers={"Retry-After": str(answer.retry_after)}
    )


@router.delete(
    "/clicks",
    **operation(
        "Erase the click events of some or all of the owner's links (GDPR)",
        {
            202: Answer(
                "The erasure is recorded and under way",
                ClickErasure,
                headers={"Location": "The erasure, to ask how far it got."},
            )
        },
        errors=(400, 403, 409),
        query=ClickErasureQuery,
    ),
)
def erase_clicks() -> Response[str]:
    """The events of clicks made up to now, of the links named (or all the owner's), are erased
    from every event file by the jobs worker; GET the Location to see it finish."""
    event = router.current_event
    codes = (event.multi_value_query_string_parameters or {}).get("code") or []
    owner = event.get_query_string_value("owner", None)
    erasure = click_erasures().erase(caller(event), owner, codes)
    location = f"{api_url(event)}clicks/erasures/{erasure.erasure_id}" + (
        f"?{urlencode({'owner': owner})}" if owner else ""
    )
    return Response(
        202, content_types.APPLICATION_JSON, erasure.model_dump_json(), headers={"Location": location}
    )


@router.get(
    "/clicks/erasures/<erasure_id>",
    **operation(
        "An erasure of click events: running or done, and how far it got",
        {200: Answer("The erasure", ClickErasure)},
        errors=(403, 404),
        query=ClickErasureStatusQuery,
    ),
)
def click_erasure(erasure_id: str) -> Response[str]:
    event = router.current_event
    owner = event.get_query_string_value("owner", None)
    erasure = click_erasures().status(caller(event), owner, erasure_id)
    return Response(200, content_types.APPLICATION_JSON, erasure.model_dump_json())
