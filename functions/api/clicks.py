"""Click reports (docs/clicks.md): a link's clicks over a range, a job's clicks per row.
Owner-scoped like the other link and job routes: another owner's link or job is a 404. Included
into the API's resolver by app.py."""

import json

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from shortener import clock
from shortener.clicks.counting import hour_of, link_report, parse_range, top_links, top_range
from shortener.clicks.model import LinkClicks, LinkTotals, TopLinks
from shortener.exceptions import ServiceUnavailableError
from shortener.http import web
from shortener.http.api import ClickReportFileLink, ErrorBody, LinkClicksQuery, TopLinksQuery
from shortener.http.openapi import Answer, operation
from shortener.jobs import bulk
from shortener.jobs.click_reports import BUILD_UNDER_WAY, report_delivery, report_key, report_text
from shortener.services.api import api_clicks, api_link_manager, files, files_function, jobs
from shortener.settings import api_settings

router = APIGatewayRouter()
# How soon a client asking for a click report file still being built should ask again.
REPORT_RETRY_SECONDS = 5
_NO_TOTALS = LinkTotals()


@router.get(
    "/links/<code>/clicks",
    **operation(
        "A link's clicks over a range: totals, a series and top lists",
        {200: Answer("The link's clicks", LinkClicks)},
        errors=(400, 404, 410),
        query=LinkClicksQuery,
    ),
)
def link_clicks(code: str) -> Response[str]:
    event = router.current_event
    begin, end, interval = parse_range(
        event.get_query_string_value("from", None),
        event.get_query_string_value("to", None),
        event.get_query_string_value("interval", None),
        clock.now(),
    )
    link = api_link_manager().get(web.caller_from_event(event.raw_event), code)
    store = api_clicks()
    hours = store.hours(link.code, hour_of(begin), end)
    totals = store.totals([link.code]).get(link.code)
    report = link_report(link.code, hours, totals or _NO_TOTALS, begin=begin, end=end, interval=interval)
    return Response(200, content_types.APPLICATION_JSON, report.model_dump_json(by_alias=True))


@router.get(
    "/clicks",
    **operation(
        "The caller's most followed links over a range",
        {200: Answer("The top links", TopLinks)},
        errors=(400,),
        query=TopLinksQuery,
    ),
)
def caller_top_links() -> Response[str]:
    """The caller's most followed links over a range of whole UTC days (an admin's own links too:
    links are filed under their owner)."""
    event = router.current_event
    begin, end, days = top_range(
        event.get_query_string_value("from", None), event.get_query_string_value("to", None), clock.now()
    )
    caller = web.caller_from_event(event.raw_event)
    counts = api_clicks().owner_links(caller.owner_id, days)
    settings = api_settings()
    base_url = web.public_base_url(settings.PUBLIC_BASE_URL, event.headers, event.request_context.stage)
    answer = top_links(counts, begin, end, base_url)
    return Response(200, content_types.APPLICATION_JSON, answer.model_dump_json(by_alias=True))


@router.get(
    "/jobs/<job_id>/clicks",
    **operation(
        "A job's clicks per row, in input order",
        {
            200: Answer(
                "Small jobs: the CSV (row,url,code,short_url,clicks,humans,first_click,last_click)",
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
    found = jobs().get_job(job_id) if bulk.is_job_id(job_id) else None
    job = bulk.job_for(web.caller_from_event(event.raw_event), found, job_id)
    settings = api_settings()
    store = api_clicks()
    if job.total <= settings.INLINE_RESULTS_ROWS:
        base_url = job.base_url or web.public_base_url(
            settings.PUBLIC_BASE_URL, event.headers, event.request_context.stage
        )
        text = report_text(jobs().iter_chunk_outcomes(job.job_id), store, base_url)
        headers = {"Content-Disposition": f'attachment; filename="{job.job_id}-clicks.csv"'}
        return Response(200, "text/csv; charset=utf-8", text, headers=headers)
    now = clock.now()
    delivery = report_delivery(store.report_state(job.job_id), now)
    if delivery == "file":
        url, expires_at = files().download_url(
            job.bucket, report_key(job.job_id), f"{job.job_id}-clicks.csv", settings.RESULTS_URL_SECONDS
        )
        body = json.dumps({"report_file_url": url, "expires_at": expires_at.isoformat()})
        return Response(303, content_types.APPLICATION_JSON, body, headers={"Location": url})
    invoker = files_function()
    if invoker is None:
        raise ServiceUnavailableError("This stack cannot build click report files (no files function).")
    if delivery == "build" and store.request_report(job.job_id, now, BUILD_UNDER_WAY):
        invoker.request_click_report(job.job_id)
    body = json.dumps(
        {
            "error": "report_not_ready",
            "message": f"The click report of this job ({job.total:,} rows) is being built; ask again soon.",
        }
    )
    return Response(
        202, content_types.APPLICATION_JSON, body, headers={"Retry-After": str(REPORT_RETRY_SECONDS)}
    )
