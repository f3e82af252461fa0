"""The edge's origin (an HTTP API without WAF) answers CloudFront only: the API function refuses
its events that lack the edge's secret header (shortener.http.edge_origin, docs/edge.md)."""

import json

from shortener.http.edge_origin import EDGE_HEADER, edge_refusal, from_edge_origin, is_edge_path
from tests.support.events import api_event, http_api_event

SECRET = "d2b1c6f0-edge"


def redirect_event(headers: dict[str, str] | None = None) -> dict:
    return api_event("GET", "/abc", resource="/{code}", path_parameters={"code": "abc"}, headers=headers)


def test_a_rest_api_event_is_answered_whatever_its_headers() -> None:
    # Given an event of the REST API (the API's own host)
    event = redirect_event()
    # Then it is not the edge's origin's, and nothing refuses it
    assert not from_edge_origin(event)
    assert edge_refusal(event, SECRET) is None


def test_an_http_api_event_with_the_secret_is_answered() -> None:
    event = http_api_event(redirect_event({EDGE_HEADER: SECRET}))
    assert from_edge_origin(event)
    assert edge_refusal(event, SECRET) is None


def test_an_http_api_event_without_the_secret_gets_403_edge_only_and_is_never_kept() -> None:
    for headers in ({}, {EDGE_HEADER: "guess"}, {EDGE_HEADER: SECRET[:-1]}, {EDGE_HEADER: ""}):
        refused = edge_refusal(http_api_event(redirect_event(headers)), SECRET)
        assert refused is not None
        assert refused["statusCode"] == 403
        assert json.loads(refused["body"])["error"] == "edge_only"
        assert refused["headers"]["Cache-Control"] == "no-store"


def test_without_a_configured_secret_every_http_api_event_is_refused() -> None:
    # An empty header must not match an empty secret
    assert edge_refusal(http_api_event(redirect_event({EDGE_HEADER: ""})), "") is not None


def test_the_payload_1_0_event_keeps_the_rest_fields_the_resolver_reads() -> None:
    # Given a REST event turned into the HTTP API's payload 1.0
    event = http_api_event(redirect_event({"User-Agent": "curl/8"}))
    # Then it has the REST proxy event's fields, a version, the $default stage and lower-case headers
    assert event["version"] == "1.0"
    assert {"httpMethod", "path", "resource", "headers", "multiValueHeaders", "pathParameters"} <= set(event)
    assert event["requestContext"]["stage"] == "$default"
    assert event["headers"]["user-agent"] == "curl/8"


def test_through_the_origin_a_management_path_is_no_short_link() -> None:
    # Given the origin's route GET /{code}, which also matches /links
    event = http_api_event(
        api_event(
            "GET",
            "/links",
            resource="/{code}",
            path_parameters={"code": "links"},
            headers={EDGE_HEADER: SECRET},
        )
    )
    # Then the function does not answer it as the management route it is on the REST API
    refused = edge_refusal(event, SECRET)
    assert refused is not None
    assert (refused["statusCode"], json.loads(refused["body"])["error"]) == (404, "not_found")


def test_the_edge_serves_the_page_the_app_site_association_and_short_links_only() -> None:
    for path in ("/", "/apple-app-site-association", "/.well-known/apple-app-site-association", "/abc"):
        assert is_edge_path(path)
    for path in ("/links", "/JOBS", "/clicks", "/blocklist", "/bulk", "/links/abc", ""):
        assert not is_edge_path(path)
