"""The API function under moto, driven with API Gateway proxy events."""

import json
from types import ModuleType
from typing import Any

import pytest

from tests.support.api import call, get_code, post_json
from tests.support.events import api_event


def test_post_creates_a_link_that_redirects(api: ModuleType) -> None:
    # Given a new URL
    # When it is shortened
    created = post_json(api, {"url": "HTTPS://Example.COM:443/a/../b"})
    # Then the answer is 201 with the normalised URL and a short URL on the request's host
    assert created["statusCode"] == 201
    body = json.loads(created["body"])
    assert body["url"] == "https://example.com/b"
    assert body["short_url"] == f"https://sho.rt/{body['code']}"
    # And following the code redirects there with the configured cache header
    followed = call(
        api, api_event("GET", f"/{body['code']}", resource="/{code}", path_parameters={"code": body["code"]})
    )
    assert followed["statusCode"] == 301
    headers = followed["multiValueHeaders"] if "multiValueHeaders" in followed else followed["headers"]
    location = headers.get("Location")
    assert location in ("https://example.com/b", ["https://example.com/b"])
    assert "Cache-Control" in headers


def test_same_url_gets_same_code_back_with_200(api: ModuleType) -> None:
    first = post_json(api, {"url": "https://example.com/x"})
    second = post_json(api, {"url": "https://example.com/x"})
    assert (first["statusCode"], second["statusCode"]) == (201, 200)
    assert json.loads(first["body"])["code"] == json.loads(second["body"])["code"]


def test_custom_code_taken_by_another_url_is_409(api: ModuleType) -> None:
    assert post_json(api, {"url": "https://a.example/", "code": "promo"})["statusCode"] == 201
    again = post_json(api, {"url": "https://a.example/", "code": "promo"})
    taken = post_json(api, {"url": "https://b.example/", "code": "promo"})
    assert again["statusCode"] == 200
    assert taken["statusCode"] == 409
    assert json.loads(taken["body"])["error"] == "code_taken"


@pytest.mark.parametrize(
    ("payload", "status", "error"),
    [
        ({"url": "not a url"}, 400, "invalid_url"),
        ({"url": "javascript:alert(1)"}, 400, "invalid_url"),
        ({"url": "https://sho.rt/abcd"}, 400, "invalid_url"),
        ({"url": "https://example.com/", "code": "bulk"}, 400, "invalid_code"),
        ({"url": "https://example.com/", "code": "a b"}, 400, "invalid_code"),
        ({"code": "abcd"}, 422, "invalid_request"),
    ],
)
def test_bad_input_is_a_clear_4xx(api: ModuleType, payload: dict[str, Any], status: int, error: str) -> None:
    answer = post_json(api, payload)
    assert answer["statusCode"] == status
    body = json.loads(answer["body"])
    assert body["error"] == error
    assert body["message"]


def test_form_post_is_accepted(api: ModuleType) -> None:
    answer = call(
        api,
        api_event(
            "POST",
            "/",
            body="url=https%3A%2F%2Fexample.com%2Fform",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        ),
    )
    assert answer["statusCode"] == 201
    assert json.loads(answer["body"])["url"] == "https://example.com/form"


def test_unknown_and_malformed_codes_are_404(api: ModuleType) -> None:
    for code in ("zzzz", "a.b", "x" * 80):
        answer = get_code(api, code)
        assert answer["statusCode"] == 404


def test_apple_app_site_association_is_served_as_json(api: ModuleType) -> None:
    for path in ("/apple-app-site-association", "/.well-known/apple-app-site-association"):
        answer = call(api, api_event("GET", path))
        assert answer["statusCode"] == 200
        assert "application/json" in str(answer.get("headers") or answer.get("multiValueHeaders"))
        assert json.loads(answer["body"]) == {"applinks": {"details": []}}


def test_index_page_is_html(api: ModuleType) -> None:
    answer = call(api, api_event("GET", "/"))
    assert answer["statusCode"] == 200
    assert "<form" in answer["body"]
