"""The API function behind the edge's origin (an HTTP API, payload format 1.0): it answers
CloudFront's requests as the REST API's, and refuses a request that skipped the edge
(docs/edge.md, "The origin, and counting each click once")."""

import json
from collections.abc import Iterator
from types import ModuleType

import pytest

from shortener.settings import api_settings
from tests.support.api import call, post_json
from tests.support.events import api_event, http_api_event

pytestmark = pytest.mark.integration

SECRET = "edge-secret-for-tests"


@pytest.fixture
def origin_api(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.setenv("EDGE_ORIGIN_SECRET", SECRET)
    api_settings.cache_clear()
    yield api
    api_settings.cache_clear()


def follow(code: str, headers: dict[str, str]) -> dict:
    return http_api_event(
        api_event("GET", f"/{code}", resource="/{code}", path_parameters={"code": code}, headers=headers)
    )


def test_a_redirect_through_the_edge_origin_answers_as_the_rest_api(origin_api: ModuleType) -> None:
    # Given a link
    created = json.loads(post_json(origin_api, {"url": "https://example.com/origin"})["body"])
    # When CloudFront asks the HTTP API for it, with the edge's header
    answer = call(origin_api, follow(created["code"], {"X-Shortener-Edge": SECRET}))
    # Then the function redirects, as through the REST API
    assert answer["statusCode"] == 301
    assert answer["multiValueHeaders"]["Location"] == ["https://example.com/origin"]


def test_a_request_that_skipped_the_edge_is_refused(origin_api: ModuleType) -> None:
    created = json.loads(post_json(origin_api, {"url": "https://example.com/skip"})["body"])
    answer = call(origin_api, follow(created["code"], {"X-Shortener-Edge": "not-it"}))
    assert answer["statusCode"] == 403
    assert json.loads(answer["body"])["error"] == "edge_only"
    assert answer["headers"]["X-Content-Type-Options"] == "nosniff"
