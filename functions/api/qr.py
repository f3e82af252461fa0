"""QR codes of the caller's links, one at a time or as a job's ZIP of labels. Included into the
API's resolver by app.py; errors raised here are mapped to JSON there."""

import json

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from request import body_fields, caller, short_urls

from shortener.http import web
from shortener.http.api import ErrorBody
from shortener.http.openapi import Answer, operation
from shortener.jobs.service import FileLink
from shortener.links.qr import MEDIA_TYPES, qr_image, qr_zip
from shortener.links.qr_model import (
    DEFAULT_QR_SIZE,
    LabelsBuilding,
    LabelsFileLink,
    QrLabelsQuery,
    QrRequest,
    QrZipRequest,
)
from shortener.services.api import api_link_manager, job_queries

router = APIGatewayRouter()
# How long a client waits before asking again for a labels archive being built.
LABELS_RETRY_SECONDS = 2


def file_answer(description: str, media_type: str, also: tuple[str, ...] = ()) -> Answer:
    """A 200 whose body is a file (an image, a ZIP): binary in the OpenAPI document."""
    return Answer(
        description, media_type=media_type, schema={"type": "string", "format": "binary"}, also=also
    )


@router.get(
    "/links/<code>/qr",
    **operation(
        "A link's QR code of its short URL, as PNG or SVG",
        {
            200: file_answer(
                "The QR code: image/png, or image/svg+xml with format=svg", "image/png", ("image/svg+xml",)
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
    link = api_link_manager().get(caller(event), code)
    image = qr_image(short_urls(event).short_url(link.domain, link.code), request.format, request.size)
    headers = {
        "Content-Disposition": f'inline; filename="{link.code}.{request.format}"',
        # The image depends only on the short URL, which never changes for a code.
        "Cache-Control": "private, max-age=86400",
    }
    # A PNG goes out base64-encoded (API Gateway decodes it: binary media types); an SVG is text.
    body: bytes | str = image if request.format == "png" else image.decode()
    return Response(200, MEDIA_TYPES[request.format], body, headers=headers)


@router.post(
    "/links/qr",
    **operation(
        "The QR codes of a list of the caller's links, one image a code, as a ZIP",
        {
            200: file_answer(
                "The ZIP: CODE.png (or CODE.svg) for each code, in the order sent", "application/zip"
            )
        },
        errors=(404, 410, 422),
        body=QrZipRequest,
    ),
)
def links_qr() -> Response[bytes]:
    """No code can be "qr" (custom codes are 3 to 64 characters, generated ones 4 or more), so
    the path word takes no link's routes and joins no reserved words.

    Every listed code must be the caller's (any link for an admin) and not deleted, else the
    whole request is refused naming the code (404, 410): a ZIP never silently lacks a code."""
    event = router.current_event
    request = web.parse_request(QrZipRequest, body_fields(event))
    manager, urls = api_link_manager(), short_urls(event)
    who, codes = caller(event), list(dict.fromkeys(request.codes))
    # One consistent BatchGetItem per 100 codes, not a read each.
    read = manager.read_many(who, codes)
    links = [manager.checked(who, code, read.get(code)) for code in codes]
    body = qr_zip(
        [(link.code, urls.short_url(link.domain, link.code)) for link in links],
        request.format,
        DEFAULT_QR_SIZE,
    )
    headers = {"Content-Disposition": f'attachment; filename="qr-codes-{request.format}.zip"'}
    return Response(200, "application/zip", body, headers=headers)


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
    answer = job_queries().labels(caller(event), job_id, image_format)
    retry = {"Retry-After": str(LABELS_RETRY_SECONDS)}
    if isinstance(answer, FileLink):
        body = json.dumps({"labels_url": answer.url, "expires_at": answer.expires_at.isoformat()})
        return Response(303, "application/json", body, headers={"Location": answer.url})
    if answer is not None:
        body = json.dumps({"error": answer.error, "message": answer.message})
        return Response(409, "application/json", body, headers=retry)
    body = json.dumps({"status": "building", "message": "The labels are being drawn; ask again shortly."})
    return Response(202, "application/json", body, headers=retry)
