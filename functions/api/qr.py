"""QR codes of the caller's links, one at a time or as a job's ZIP of labels. Included into the
API's resolver by app.py; errors raised here are mapped to JSON there."""

import json

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from shortener.http import web
from shortener.http.api import ErrorBody
from shortener.http.openapi import Answer, operation
from shortener.jobs import bulk
from shortener.jobs.labels import labels_key, labels_state
from shortener.jobs.tasks_model import LabelsRequest
from shortener.links.qr import MEDIA_TYPES, qr_image
from shortener.links.qr_model import LabelsBuilding, LabelsFileLink, QrLabelsQuery, QrRequest
from shortener.services.api import api_link_manager, files, files_function, jobs
from shortener.settings import api_settings

router = APIGatewayRouter()
# How long a client waits before asking again for a labels archive being built.
LABELS_RETRY_SECONDS = 2


@router.get(
    "/links/<code>/qr",
    **operation(
        "A link's QR code of its short URL, as PNG or SVG",
        {
            200: Answer(
                "The QR code: image/png, or image/svg+xml with format=svg",
                media_type="image/png",
                schema={"type": "string", "format": "binary"},
                also=("image/svg+xml",),
            )
        },
        errors=(422,),
        query=QrRequest,
    ),
)
def link_qr(code: str) -> Response[bytes | str]:
    event = router.current_event
    fields = {
        name: value for name in ("format", "size") if (value := event.get_query_string_value(name, None))
    }
    request = web.parse_request(QrRequest, fields)
    link = api_link_manager().get(web.caller_from_event(event.raw_event), code)
    short_url = web.public_base_url(
        api_settings().PUBLIC_BASE_URL, event.headers, event.request_context.stage
    )
    image = qr_image(short_url + link.code, request.format, request.size)
    headers = {
        "Content-Disposition": f'inline; filename="{link.code}.{request.format}"',
        # The image depends only on the short URL, which never changes for a code.
        "Cache-Control": "private, max-age=86400",
    }
    # A PNG goes out base64-encoded (API Gateway decodes it: binary media types); an SVG is text.
    body: bytes | str = image if request.format == "png" else image.decode()
    return Response(200, MEDIA_TYPES[request.format], body, headers=headers)


@router.get(
    "/jobs/<job_id>/qr",
    **operation(
        "A done job's QR labels, one image a shortened row, as a ZIP",
        {
            202: Answer("The labels are being drawn", LabelsBuilding, headers={"Retry-After": "Seconds."}),
            303: Answer("The labels ZIP", LabelsFileLink, headers={"Location": "The ZIP file."}),
            409: Answer("The job is not done yet", ErrorBody, headers={"Retry-After": "Seconds."}),
        },
        errors=(422,),
        query=QrLabelsQuery,
        tag="jobs",
    ),
)
def job_qr(job_id: str) -> Response[str]:
    """A done job's QR labels as one ZIP, whatever its size: 303 to the file once built; until
    then 202 with Retry-After (the first request, or one after a builder died, asks the files
    function to build it)."""
    event = router.current_event
    image_format = web.parse_request(
        QrLabelsQuery, {"format": event.get_query_string_value("format", None) or "png"}
    ).format
    caller = web.caller_from_event(event.raw_event)
    found = jobs().get_job(job_id) if bulk.is_job_id(job_id) else None
    job = bulk.job_for(caller, found, job_id)
    retry = {"Retry-After": str(LABELS_RETRY_SECONDS)}
    if job.status != "done" or not job.bucket:
        body = json.dumps(
            {
                "error": "job_not_done",
                "message": "The job's labels are made once the job is done; ask again then.",
            }
        )
        return Response(409, "application/json", body, headers=retry)
    state = labels_state(files(), job, image_format)
    if state == "ready":
        url, expires_at = files().download_url(
            job.bucket,
            labels_key(job.job_id, image_format),
            f"{job.job_id}-qr-{image_format}.zip",
            api_settings().RESULTS_URL_SECONDS,
            content_type="application/zip",
        )
        body = json.dumps({"labels_url": url, "expires_at": expires_at.isoformat()})
        return Response(303, "application/json", body, headers={"Location": url})
    invoker = files_function()
    if state == "absent" and invoker is not None:
        invoker.request_labels(LabelsRequest(job_id=job.job_id, format=image_format))
    body = json.dumps({"status": "building", "message": "The labels are being drawn; ask again shortly."})
    return Response(202, "application/json", body, headers=retry)
