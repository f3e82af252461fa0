"""QR codes of short URLs (decoded with a QR reader, as a phone would), and how the local API
Gateway hands a base64-encoded answer to clients."""

import base64
import io

import pytest
import segno
import zxingcpp
from PIL import Image
from pydantic import ValidationError

from local_stack.apigateway.gateway import http_response
from shortener.links.qr import QUIET_ZONE_MODULES, qr_image
from shortener.links.qr_model import QrRequest

SHORT_URL = "https://sho.rt/hFO0"


def decoded(png: bytes) -> list[str]:
    return [result.text for result in zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))]


@pytest.mark.parametrize("size", [64, 200, 512, 4096])
def test_the_png_decodes_to_the_short_url_within_its_size(size: int) -> None:
    png = qr_image(SHORT_URL, "png", size)
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    assert image.width == image.height <= max(size, 33)
    assert decoded(png) == [SHORT_URL]


def test_the_code_has_a_quiet_zone_of_four_modules_and_print_grade_error_correction() -> None:
    png = qr_image(SHORT_URL, "png", 330)
    image = Image.open(io.BytesIO(png)).convert("L")
    result = zxingcpp.read_barcodes(image)[0]
    assert result.ec_level in ("Q", "H")
    # The symbol's modules plus four on each side, at whole pixels: the outer four are white
    modules = segno.make_qr(SHORT_URL, error="q").symbol_size(scale=1, border=QUIET_ZONE_MODULES)[0]
    assert image.width % modules == 0
    scale = image.width // modules
    border = QUIET_ZONE_MODULES * scale
    pixels = image.load()
    assert pixels is not None
    edge = [
        pixels[x, y]
        for x in range(image.width)
        for y in (*range(border), *range(image.height - border, image.height))
    ]
    assert set(edge) == {255}
    assert pixels[border, border] == 0  # the finder pattern starts right after the quiet zone


def test_the_svg_is_a_scalable_drawing_of_the_same_code() -> None:
    svg = qr_image(SHORT_URL, "svg", 512).decode()
    assert svg.startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in svg
    assert f"<title>{SHORT_URL}</title>" in svg


@pytest.mark.parametrize("fields", [{"format": "gif"}, {"size": "10"}, {"size": "5000"}, {"size": "big"}])
def test_other_formats_and_sizes_are_refused(fields: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        QrRequest.model_validate(fields)


def test_a_base64_answer_is_binary_only_for_a_client_whose_first_accept_is_a_binary_type() -> None:
    answer = {
        "statusCode": 200,
        "headers": {"Content-Type": "image/png"},
        "body": base64.b64encode(b"\x89PNG").decode(),
        "isBase64Encoded": True,
    }
    # A plain curl (*/*) and a browser get bytes when the API lists */*
    assert http_response(answer, ["*/*"], "*/*")[2] == b"\x89PNG"
    assert http_response(answer, ["*/*"], "image/avif,image/webp,*/*;q=0.8")[2] == b"\x89PNG"
    assert http_response(answer, ["*/*"], "")[2] == b"\x89PNG"
    # Without */* only a client asking for the type first does; the others get the base64 text
    assert http_response(answer, ["image/png"], "image/png")[2] == b"\x89PNG"
    assert http_response(answer, ["image/png"], "*/*")[2] == answer["body"].encode()
    assert http_response(answer, ["text/csv"], "text/html,image/png")[2] == answer["body"].encode()
