"""Bulk routes: CSV uploads, the caller's jobs, job status and job results. Included into the
API's resolver by app.py; errors raised here are mapped to JSON there."""

from functools import lru_cache

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit

from shortener import services, web
from shortener.dal.jobs import JobsStore
from shortener.dal.queue import BulkQueue
from shortener.logic import bulk
from shortener.logic.link_management import require_key
from shortener.logic.paging import decode_cursor, encode_cursor, page_size
from shortener.models.jobs import Job, JobAccepted, JobList, JobStatusView
from shortener.observability import metrics
from shortener.settings import api_settings

router = APIGatewayRouter()
# A Lambda response is at most 6 MB; results beyond this continue on a next page (a Link header),
# which only jobs of roughly 60,000 rows or more need.
RESULTS_PAGE_BYTES = 5_000_000


@lru_cache(maxsize=1)
def jobs() -> JobsStore:
    return JobsStore(api_settings().JOBS_TABLE)


@lru_cache(maxsize=1)
def queue() -> BulkQueue:
    return BulkQueue()


@router.post("/bulk")
def upload_csv() -> Response[str]:
    event = router.current_event
    settings = api_settings()
    rows = bulk.read_upload(
        web.body_bytes(event.body, event.is_base64_encoded),
        web.header(event.headers, "content-type"),
        max_bytes=settings.MAX_UPLOAD_BYTES,
        max_rows=settings.MAX_UPLOAD_ROWS,
    )
    # Rows that could not be shortened would wait in the queue: refuse them now, saying why.
    services.api_links().check_code_key()
    job = bulk.submit_job(
        rows,
        jobs=jobs(),
        queue=queue(),
        queue_url=settings.BULK_QUEUE_URL,
        own_host=web.request_host(event.headers),
        own_hosts=web.own_hosts(event.raw_event, settings.AWS_REGION),
        owner=web.caller_from_event(event.raw_event).owner_id,
        options=bulk.BulkOptions(
            rows_per_message=settings.BULK_ROWS_PER_MESSAGE,
            message_bytes=settings.BULK_MESSAGE_BYTES,
            retention_days=settings.JOB_RETENTION_DAYS,
        ),
    )
    metrics.add_metric(name="BulkRowsAccepted", unit=MetricUnit.Count, value=job.total)
    accepted = JobAccepted(job_id=job.job_id, total=job.total, status_url=_base_url() + f"jobs/{job.job_id}")
    return Response(202, content_types.APPLICATION_JSON, accepted.model_dump_json())


@router.get("/jobs")
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


@router.get("/jobs/<job_id>")
def job_status(job_id: str) -> Response[str]:
    return Response(200, content_types.APPLICATION_JSON, _status_view(_job(job_id)).model_dump_json())


@router.get("/jobs/<job_id>/results")
def job_results(job_id: str) -> Response[str]:
    job = _job(job_id)
    from_chunk = web.whole_number(
        router.current_event.get_query_string_value("from_chunk", "0") or "0",
        "from_chunk",
        hint=" (take it from the Link header)",
    )
    page = bulk.results_page(
        jobs().iter_chunk_outcomes(job.job_id, from_chunk), _base_url(), max_bytes=RESULTS_PAGE_BYTES
    )
    headers = {"Content-Disposition": f'attachment; filename="{job.job_id}.csv"'}
    if page.next_chunk is not None:
        # Very large jobs: the rest follows on further pages (RFC 8288 link).
        next_url = _base_url() + f"jobs/{job.job_id}/results?from_chunk={page.next_chunk}"
        headers["Link"] = f'<{next_url}>; rel="next"'
    return Response(200, "text/csv; charset=utf-8", page.text, headers=headers)


def _job(job_id: str) -> Job:
    job = jobs().get_job(job_id) if bulk.is_job_id(job_id) else None
    return bulk.job_for(web.caller_from_event(router.current_event.raw_event), job, job_id)


def _status_view(job: Job) -> JobStatusView:
    return JobStatusView(
        job_id=job.job_id,
        status=job.status,
        total=job.total,
        succeeded=job.succeeded,
        failed=job.failed,
        processed=job.processed,
        created_at=job.created_at,
        updated_at=job.updated_at or job.created_at,
        results_url=_base_url() + f"jobs/{job.job_id}/results",
        owner=job.owner,
    )


def _base_url() -> str:
    event = router.current_event
    return web.public_base_url(api_settings().PUBLIC_BASE_URL, event.headers, event.request_context.stage)
