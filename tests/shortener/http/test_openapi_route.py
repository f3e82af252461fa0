"""GET /openapi.json through the API function's handler."""

import json
from types import ModuleType

import pytest

from tests.support.api import call, response_header
from tests.support.events import api_event

pytestmark = pytest.mark.integration


def test_openapi_json_is_served_with_the_callers_base_url(api: ModuleType) -> None:
    # Given a request for the document on the stage's host, without a key
    event = api_event("GET", "/openapi.json")
    # When the function answers it
    answer = call(api, event)
    # Then it is the OpenAPI 3.1 document, whose server is the base that short URLs start with
    assert answer["statusCode"] == 200
    assert response_header(answer, "Content-Type") == "application/json"
    spec = json.loads(answer["body"])
    assert spec["openapi"].startswith("3.1")
    assert spec["servers"] == [{"url": "https://sho.rt/"}]
    assert "/links/{code}" in spec["paths"]


def test_every_answer_says_nosniff_and_the_page_has_a_strict_policy(api: ModuleType) -> None:
    # The page: a policy allowing its own inline script by hash, never framed
    page = call(api, api_event("GET", "/"))
    policy = response_header(page, "Content-Security-Policy") or ""
    assert "script-src 'sha256-" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
    assert response_header(page, "Referrer-Policy") == "strict-origin-when-cross-origin"
    # A JSON error and a redirect miss: nosniff, no page policy
    missing = call(api, api_event("GET", "/nope1", resource="/{code}", path_parameters={"code": "nope1"}))
    assert missing["statusCode"] == 404
    assert response_header(missing, "X-Content-Type-Options") == "nosniff"
    assert response_header(page, "X-Content-Type-Options") == "nosniff"
    # And HSTS only on the custom domain
    assert response_header(page, "Strict-Transport-Security") is None


def test_answers_on_the_custom_domain_say_hsts(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from shortener.settings import api_settings

    monkeypatch.setenv("CUSTOM_DOMAIN", "sho.rt")
    api_settings.cache_clear()
    event = api_event("GET", "/openapi.json")
    event["requestContext"]["domainName"] = "sho.rt"
    assert (response_header(call(api, event), "Strict-Transport-Security") or "").startswith("max-age=")
    event["requestContext"]["domainName"] = "abc.execute-api.us-east-1.amazonaws.com"
    assert response_header(call(api, event), "Strict-Transport-Security") is None
