"""Bulk routes: CSV uploads (in the body, or straight to S3), the caller's jobs, job status and
job results. Included into the API's resolver by app.py; errors raised here are mapped to JSON
there."""

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit

from shortener import clock
from shortener.exceptions import ServiceUnavailableError
from shortener.http import web
from shortener.http.api import BulkUploadQuery, ErrorBody, JobResultsQuery, ListJobsQuery, ResultsFileLink
from shortener.http.openapi import Answer, link_to, operation
from shortener.http.paging import decode_cursor, encode_cursor, page_size
from shortener.jobs import bulk, status
from shortener.jobs.model import (
    DirectUploadRequest,
    Job,
    JobAccepted,
    JobList,
    JobStatusView,
    UploadAccepted,
)
from shortener.jobs.tasks_model import SplitRequest
from shortener.jobs.topics import job_topic
from shortener.links.management import require_key
from shortener.links.model import ATTRIBUTE_COLUMNS, LinkAttributes
from shortener.observability import logger, metrics
from shortener.services.api import (
    api_links,
    bulk_metering,
    daily_quota,
    files,
    files_function,
    jobs,
    queue,
    work_loops,
)
from shortener.settings import api_settings

router = APIGatewayRouter()
# What a client does with a job it started: the stateful fuzzing follows these.
_JOB_ID = "$response.body#/job_id"
_JOB_OPERATIONS = {
    "JobStatus": link_to("GET", "/jobs/{job_id}", job_id=_JOB_ID),
    "JobResults": link_to("GET", "/jobs/{job_id}/results", job_id=_JOB_ID),
}
# A CSV upload is a file, as the page's form or `curl --data-binary @links.csv` sends it.
_CSV_BODY = {
    "required": True,
    "content": {
        "text/csv": {"schema": {"type": "string"}},
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "properties": {"file": {"type": "string", "contentMediaType": "text/csv"}},
            }
        },
    },
}
# A Lambda response is at most 6 MB; results beyond this continue on a next page (a Link header),
# which only small jobs with very long URLs need (larger jobs are served as a file).
RESULTS_PAGE_BYTES = 5_000_000
# How soon a client asking for a results file still being written should ask again.
RESULTS_RETRY_SECONDS = 5


def _options() -> bulk.BulkOptions:
    settings = api_settings()
    return bulk.BulkOptions(
        rows_per_message=settings.BULK_ROWS_PER_MESSAGE,
        message_bytes=settings.BULK_MESSAGE_BYTES,
        retention_days=settings.JOB_RETENTION_DAYS,
    )


def _defaults(fields: Mapping[str, Any]) -> dict[str, str]:
    """The job's defaults for its rows' expires_at, max_clicks, title and tags (422 if invalid)."""
    given = {name: fields[name] for name in ATTRIBUTE_COLUMNS if fields.get(name) is not None}
    return web.parse_request(LinkAttributes, given).as_cells() if given else {}


def _origin(notify_topic: str | None = None) -> bulk.JobOrigin:
    event = router.current_event
    return bulk.JobOrigin(
        notify_topic=job_topic(notify_topic, api_settings().JOB_TOPIC_PREFIX),
        own_host=web.request_authority(event.headers),
        base_url=_base_url(),
        bucket=api_settings().BULK_BUCKET,
        # The key's owner, as the authorizer vouched for it (anonymous without one).
        owner=web.caller_from_event(event.raw_event).owner_id,
        own_hosts=tuple(web.own_hosts(event.raw_event, api_settings().AWS_REGION)),
    )


@router.post(
    "/bulk",
    **operation(
        "Start a job from a CSV file in the body",
        {202: Answer("The job was accepted", JobAccepted, links=_JOB_OPERATIONS)},
        errors=(400, 413, 415, 422),
        file_body=_CSV_BODY,
        query=BulkUploadQuery,
        tag="jobs",
    ),
)
def upload_csv() -> Response[str]:
    event = router.current_event
    settings = api_settings()
    origin = _origin(event.get_query_string_value("notify_topic", None))
    defaults = _defaults({name: event.get_query_string_value(name, None) for name in ATTRIBUTE_COLUMNS})
    raw = web.body_bytes(event.body, event.is_base64_encoded)
    uploaded = bulk.read_upload(
        raw,
        web.header(event.headers, "content-type"),
        max_bytes=settings.MAX_UPLOAD_BYTES,
        max_rows=settings.MAX_UPLOAD_ROWS,
    )
    # Rows that could not be shortened would wait in the queue: refuse them now, saying why.
    api_links().check_code_key()
    job = bulk.submit_job(
        uploaded.rows,
        jobs=jobs(),
        queue=queue(),
        queue_url=settings.BULK_QUEUE_URL,
        origin=origin,
        options=_options(),
        loops=work_loops(),
        metering=bulk_metering(),
        encoding=uploaded.encoding,
        quota=daily_quota(),
        size=len(raw),
        defaults=defaults,
        file_name=uploaded.file_name,
    )
    metrics.add_metric(name="BulkRowsAccepted", unit=MetricUnit.Count, value=job.total)
    accepted = JobAccepted(job_id=job.job_id, total=job.total, status_url=_status_url(job.job_id))
    return Response(202, content_types.APPLICATION_JSON, accepted.model_dump_json())


@router.get(
    "/jobs",
    **operation(
        "The caller's jobs, newest first",
        {200: Answer("A page", JobList)},
        errors=(400,),
        query=ListJobsQuery,
        tag="jobs",
    ),
)
def list_jobs() -> Response[str]:
    event = router.current_event
    caller = web.caller_from_event(event.raw_event)
    require_key(caller)
    limit = web.whole_number(event.get_query_string_value("limit", "25") or "25", "limit")
    found, position = jobs().list_jobs(
        caller.owner_id,
        before=decode_cursor(event.get_query_string_value("cursor", None)),
        limit=page_size(limit),
    )
    page = JobList(
        jobs=[_status_view(job) for job in found],
        next_cursor=encode_cursor(position) if position else None,
    )
    return Response(200, content_types.APPLICATION_JSON, page.model_dump_json())


@router.post(
    "/bulk/uploads",
    **operation(
        "Start a job for a file uploaded straight to S3",
        {
            201: Answer(
                "The job, and a presigned PUT for the file",
                UploadAccepted,
                headers={"Location": "The job's status URL."},
                links=_JOB_OPERATIONS,
            )
        },
        body=DirectUploadRequest,
        tag="jobs",
    ),
)
def direct_upload() -> Response[str]:
    """A job for a file of any size (up to S3's 5 GiB for one PUT), and a presigned PUT for it."""
    event = router.current_event
    settings = api_settings()
    if not settings.BULK_BUCKET:
        raise ServiceUnavailableError("Direct uploads are not configured on this deployment.")
    fields = web.parse_fields(
        web.body_bytes(event.body, event.is_base64_encoded), web.header(event.headers, "content-type")
    )
    request = web.parse_request(DirectUploadRequest, fields)
    defaults = _defaults(fields)
    job, upload = bulk.create_upload_job(
        request,
        jobs=jobs(),
        files=files(),
        origin=_origin(request.notify_topic),
        options=_options(),
        url_seconds=settings.UPLOAD_URL_SECONDS,
        max_bytes=settings.MAX_DIRECT_UPLOAD_BYTES,
        quota=daily_quota(),
        anonymous_max_bytes=settings.ANONYMOUS_MAX_UPLOAD_BYTES or None,
        defaults=defaults,
    )
    metrics.add_metric(name="DirectUploadsStarted", unit=MetricUnit.Count, value=1)
    status_url = _status_url(job.job_id)
    accepted = UploadAccepted(
        job_id=job.job_id, status_url=status_url, upload=upload, max_bytes=settings.MAX_DIRECT_UPLOAD_BYTES
    )
    return Response(
        201, content_types.APPLICATION_JSON, accepted.model_dump_json(), headers={"Location": status_url}
    )


@router.get(
    "/jobs/<job_id>",
    **operation("A job's progress", {200: Answer("The job", JobStatusView)}, errors=(404,), tag="jobs"),
)
def job_status(job_id: str) -> Response[str]:
    job = _job(job_id)
    _restart_stalled_work(job)
    view = status.status_view(
        job, results_url=_status_url(job.job_id) + "/results", results_file=_results_file(job)
    )
    return Response(200, content_types.APPLICATION_JSON, view.model_dump_json())


@router.get(
    "/jobs/<job_id>/results",
    **operation(
        "A job's results",
        {
            200: Answer(
                "Small jobs: the results CSV (row,url,code,short_url,error), pages linked by rel=next",
                media_type="text/csv",
                headers={"Link": 'The next page (rel="next"), when there is one.'},
            ),
            303: Answer("Larger jobs: the results file", ResultsFileLink, headers={"Location": "The file."}),
            409: Answer(
                "The results file is not written yet", ErrorBody, headers={"Retry-After": "Seconds."}
            ),
        },
        errors=(400, 404),
        query=JobResultsQuery,
        tag="jobs",
    ),
)
def job_results(job_id: str) -> Response[str]:
    """Small jobs: the CSV (``text/csv``, pages linked with rel="next"), also while running.
    Larger jobs: a 303 to the results file once written (a presigned link), else 409."""
    job = _job(job_id)
    settings = api_settings()
    if status.delivers_inline(job, settings.INLINE_RESULTS_ROWS):
        return _inline_results(job)
    results_file = _results_file(job)
    if results_file is not None:
        url, expires_at = results_file
        body = ResultsFileLink(results_file_url=url, expires_at=expires_at).model_dump_json()
        return Response(303, content_types.APPLICATION_JSON, body, headers={"Location": url})
    _restart_stalled_work(job)
    message = (
        f"The results of this job are written as one file once every row is done ({job.processed:,} "
        f"of {job.total:,} so far); ask again in a few seconds."
        if not job.complete
        else "The results file is being written; ask again in a few seconds."
    )
    body = json.dumps({"error": "results_not_ready", "message": message})
    return Response(
        409, content_types.APPLICATION_JSON, body, headers={"Retry-After": str(RESULTS_RETRY_SECONDS)}
    )


def _inline_results(job: Job) -> Response[str]:
    from_chunk = web.whole_number(
        router.current_event.get_query_string_value("from_chunk", "0") or "0",
        "from_chunk",
        hint=" (take it from the Link header)",
    )
    page = bulk.results_page(
        jobs().iter_chunk_outcomes(job.job_id, from_chunk),
        _base_url(),
        max_bytes=RESULTS_PAGE_BYTES,
        ending=bulk.ending_line(job) if job.complete else "",
    )
    headers = {"Content-Disposition": f'attachment; filename="{job.job_id}.csv"'}
    if page.next_chunk is not None:
        # Very long URLs: the rest follows on further pages (RFC 8288 link).
        next_url = _status_url(job.job_id) + f"/results?from_chunk={page.next_chunk}"
        headers["Link"] = f'<{next_url}>; rel="next"'
    return Response(200, "text/csv; charset=utf-8", page.text, headers=headers)


def _results_file(job: Job) -> tuple[str, datetime] | None:
    if job.results is None or not job.bucket:
        return None
    return files().download_url(
        job.bucket, job.results.key, f"{job.job_id}.csv", api_settings().RESULTS_URL_SECONDS
    )


def _restart_stalled_work(job: Job) -> None:
    """A split or a results file whose worker died is asked for again (see status.stalled_work)."""
    invoker = files_function()
    now = clock.now()
    if invoker is not None and job.upload is not None and status.may_have_lost_its_upload_event(job, now):
        etag = files().uploaded_etag(job.bucket, job.upload.key)
        if etag is not None:
            logger.warning("Splitting an upload whose S3 event was lost", extra={"job_id": job.job_id})
            invoker.continue_split(
                SplitRequest(job_id=job.job_id, bucket=job.bucket, key=job.upload.key, etag=etag)
            )
        return
    stalled = status.stalled_work(job, now)
    if invoker is None or stalled is None:
        return
    logger.warning("Restarting stalled work", extra={"job_id": job.job_id, "work": stalled})
    if stalled == "results":
        invoker.request_results(job.job_id)
    elif job.upload is not None and job.upload.etag is not None:
        invoker.continue_split(
            SplitRequest(job_id=job.job_id, bucket=job.bucket, key=job.upload.key, etag=job.upload.etag)
        )


def _job(job_id: str) -> Job:
    job = jobs().get_job(job_id) if bulk.is_job_id(job_id) else None
    return bulk.job_for(web.caller_from_event(router.current_event.raw_event), job, job_id)


def _status_view(job: Job) -> JobStatusView:
    return status.status_view(job, results_url=_status_url(job.job_id) + "/results")


def _status_url(job_id: str) -> str:
    return _base_url() + f"jobs/{job_id}"


def _base_url() -> str:
    event = router.current_event
    return web.public_base_url(api_settings().PUBLIC_BASE_URL, event.headers, event.request_context.stage)
