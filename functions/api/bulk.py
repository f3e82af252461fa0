"""Bulk routes: CSV uploads (in the body, or straight to S3), the caller's jobs, job status and
job results. Each route reads its request, calls one method of the job services
(shortener.jobs.service) and answers; errors raised are mapped to JSON by app.py."""

import json

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit
from request import api_url, base_url, body_fields, caller, job_origin, link_defaults

from shortener.http import web
from shortener.http.api import BulkUploadQuery, ErrorBody, JobResultsQuery, ListJobsQuery, ResultsFileLink
from shortener.http.openapi import Answer, link_to, operation
from shortener.jobs.service import CsvAnswer, FileLink, status_url
from shortener.jobs.view_model import DirectUploadRequest, JobAccepted, JobList, JobStatusView, UploadAccepted
from shortener.links.model import ATTRIBUTE_COLUMNS
from shortener.observability import metrics
from shortener.services.api import job_queries, job_submissions
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
# How soon a client asking for a results file still being written should ask again.
RESULTS_RETRY_SECONDS = 5


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
    origin = job_origin(event, event.get_query_string_value("notify_topic", None))
    defaults = link_defaults({name: event.get_query_string_value(name, None) for name in ATTRIBUTE_COLUMNS})
    raw = web.body_bytes(event.body, event.is_base64_encoded)
    job = job_submissions().submit_csv(raw, web.header(event.headers, "content-type"), origin, defaults)
    metrics.add_metric(name="BulkRowsAccepted", unit=MetricUnit.Count, value=job.total)
    accepted = JobAccepted(
        job_id=job.job_id, total=job.total, status_url=status_url(origin.api_url, job.job_id)
    )
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
    page = job_queries().page(
        caller(event),
        cursor=event.get_query_string_value("cursor", None),
        limit=lambda: web.whole_number(event.get_query_string_value("limit", "25") or "25", "limit"),
        base_url=api_url(event),
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
    fields = body_fields(event)
    request = web.parse_request(DirectUploadRequest, fields)
    origin = job_origin(event, request.notify_topic)
    job, upload = job_submissions().start_upload(request, origin, link_defaults(fields))
    metrics.add_metric(name="DirectUploadsStarted", unit=MetricUnit.Count, value=1)
    location = status_url(origin.api_url, job.job_id)
    accepted = UploadAccepted(
        job_id=job.job_id,
        status_url=location,
        upload=upload,
        max_bytes=api_settings().MAX_DIRECT_UPLOAD_BYTES,
    )
    return Response(
        201, content_types.APPLICATION_JSON, accepted.model_dump_json(), headers={"Location": location}
    )


@router.get(
    "/jobs/<job_id>",
    **operation("A job's progress", {200: Answer("The job", JobStatusView)}, errors=(404,), tag="jobs"),
)
def job_status(job_id: str) -> Response[str]:
    event = router.current_event
    view = job_queries().status(caller(event), job_id, api_url(event))
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
    event = router.current_event
    answer = job_queries().results(
        caller(event),
        job_id,
        base_url(event),
        from_chunk=lambda: web.whole_number(
            event.get_query_string_value("from_chunk", "0") or "0",
            "from_chunk",
            hint=" (take it from the Link header)",
        ),
    )
    if isinstance(answer, CsvAnswer):
        headers = {"Content-Disposition": f'attachment; filename="{answer.file_name}"'}
        if answer.next_chunk is not None:
            # Very long URLs: the rest follows on further pages (RFC 8288 link).
            next_url = status_url(api_url(event), job_id) + f"/results?from_chunk={answer.next_chunk}"
            headers["Link"] = f'<{next_url}>; rel="next"'
        return Response(200, "text/csv; charset=utf-8", answer.text, headers=headers)
    if isinstance(answer, FileLink):
        body = ResultsFileLink(results_file_url=answer.url, expires_at=answer.expires_at).model_dump_json()
        return Response(303, content_types.APPLICATION_JSON, body, headers={"Location": answer.url})
    body = json.dumps({"error": answer.error, "message": answer.message})
    return Response(
        409, content_types.APPLICATION_JSON, body, headers={"Retry-After": str(RESULTS_RETRY_SECONDS)}
    )
