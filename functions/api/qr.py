"""QR codes of the caller's links. Included into the API's resolver by app.py; errors raised
here are mapped to JSON there."""

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from shortener import web
from shortener.logic.qr import MEDIA_TYPES, qr_image
from shortener.models.qr import QrRequest
from shortener.services import api_link_manager
from shortener.settings import api_settings

router = APIGatewayRouter()


@router.get("/links/<code>/qr")
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
