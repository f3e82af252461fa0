"""GET /links/{code}/qr through the API handler under moto: the owner's link's QR code as PNG or
SVG, decoded with a QR reader; other owners' links and bad parameters refused."""

import base64
import io
import json
from types import ModuleType
from typing import Any

import pytest
import zxingcpp
from PIL import Image

from tests.support.api import ApiCaller, response_header


def qr(caller: ApiCaller, code: str, **query: str) -> dict[str, Any]:
    return caller.request(
        "GET",
        f"/links/{code}/qr",
        resource="/links/{code}/qr",
        path_parameters={"code": code},
        query=query or None,
    )


@pytest.fixture
def alice(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "alice")


def test_the_png_decodes_to_the_links_short_url(alice: ApiCaller) -> None:
    created = alice.shorten("https://example.com/flyer")
    answer = qr(alice, created["code"], size="300")
    assert answer["statusCode"] == 200
    assert response_header(answer, "Content-Type") == "image/png"
    assert answer["isBase64Encoded"] is True
    image = Image.open(io.BytesIO(base64.b64decode(answer["body"])))
    assert image.width <= 300
    assert [result.text for result in zxingcpp.read_barcodes(image)] == [created["short_url"]]
    assert f'filename="{created["code"]}.png"' in str(response_header(answer, "Content-Disposition"))


def test_the_svg_is_text_naming_the_short_url(alice: ApiCaller) -> None:
    created = alice.shorten("https://example.com/svg")
    answer = qr(alice, created["code"], format="svg")
    assert answer["statusCode"] == 200
    assert response_header(answer, "Content-Type") == "image/svg+xml"
    assert answer["isBase64Encoded"] is False
    assert answer["body"].startswith("<svg") and created["short_url"] in answer["body"]


def test_another_owners_link_has_no_qr_code_and_bad_parameters_are_422(
    alice: ApiCaller, api: ModuleType
) -> None:
    code = alice.shorten("https://example.com/private")["code"]
    assert qr(ApiCaller(api, "bob"), code)["statusCode"] == 404
    assert qr(alice, "nosuchcode")["statusCode"] == 404
    for query in ({"format": "gif"}, {"size": "9"}, {"size": "huge"}):
        answer = qr(alice, code, **query)
        assert answer["statusCode"] == 422
        assert json.loads(answer["body"])["error"] == "invalid_request"
