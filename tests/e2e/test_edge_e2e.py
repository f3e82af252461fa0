"""The edge on `make run` (docs/edge.md): the template's distribution exists in the embedded AWS,
a change to a link invalidates its path there, and the API's own URL still redirects, saying how
long the edge may keep the answer. One stack for the module."""

import http.client
import json
import time
from urllib.parse import urlsplit

from tests.e2e.conftest import RunningStack

COMMENT_SUFFIX = ": short links"


def edge_distribution(stack: RunningStack) -> str:
    items = stack.boto3_client("cloudfront").list_distributions()["DistributionList"].get("Items", [])
    [distribution] = [item["Id"] for item in items if item["Comment"].endswith(COMMENT_SUFFIX)]
    return str(distribution)


def invalidated_paths(stack: RunningStack, distribution: str) -> list[str]:
    cloudfront = stack.boto3_client("cloudfront")
    listed = cloudfront.list_invalidations(DistributionId=distribution)["InvalidationList"].get("Items", [])
    paths: list[str] = []
    for item in listed:
        batch = cloudfront.get_invalidation(DistributionId=distribution, Id=item["Id"])["Invalidation"]
        paths += batch["InvalidationBatch"]["Paths"]["Items"]
    return paths


def test_a_link_redirects_on_the_apis_own_url_and_its_deletion_invalidates_it_at_the_edge(
    stack: RunningStack,
) -> None:
    # Given a link, followed on the API's own URL
    created = stack.post_json("", {"url": "https://example.com/edge"})
    assert created.status == 201, created.text
    code = created.json()["code"]
    followed = stack.request("GET", code, api_key=None)
    assert (followed.status, followed.headers["Location"]) == (301, "https://example.com/edge")
    # Then the answer says how long the edge may keep it (a day) and browsers only briefly
    assert followed.headers["Cache-Control"] == "max-age=90, s-maxage=86400"
    # When it is deleted
    distribution = edge_distribution(stack)
    assert f"/{code}" not in invalidated_paths(stack, distribution)
    deleted = stack.request("DELETE", f"links/{code}")
    assert deleted.status == 200, deleted.text
    # Then its path is invalidated at the edge (the function does it before answering; bounded)
    deadline = time.monotonic() + 10
    while f"/{code}" not in invalidated_paths(stack, distribution) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert f"/{code}" in invalidated_paths(stack, distribution)
    assert stack.request("GET", code, api_key=None).status == 410


def test_a_click_limited_link_is_never_kept_by_the_edge(stack: RunningStack) -> None:
    created = stack.post_json("", {"url": "https://example.com/edge-limited", "max_clicks": 2})
    assert created.status == 201, created.text
    followed = stack.request("GET", created.json()["code"], api_key=None)
    assert followed.headers["Cache-Control"] == "private, no-store"


def test_the_edges_origin_is_the_http_api_which_refuses_a_request_that_skipped_the_edge(
    stack: RunningStack,
) -> None:
    # Given a link, and the HTTP API the distribution's origin names (not the REST API)
    created = stack.post_json("", {"url": "https://example.com/origin-direct"})
    assert created.status == 201, created.text
    code = created.json()["code"]
    origin = urlsplit(str(stack.info["edge_origin_url"]))
    assert origin.port != urlsplit(stack.api_url).port
    # When it is asked directly, without the edge's secret header
    connection = http.client.HTTPConnection(origin.hostname or "127.0.0.1", origin.port, timeout=30)
    try:
        connection.request("GET", f"/{code}", headers={"X-Shortener-Edge": "a guess"})
        response = connection.getresponse()
        body = json.loads(response.read())
        # Then it is refused, with no redirect
        assert (response.status, body["error"]) == (403, "edge_only")
        assert response.getheader("Location") is None
        # and so is a management path
        connection.request("GET", "/links")
        management = connection.getresponse()
        assert (management.status, json.loads(management.read())["error"]) == (403, "edge_only")
    finally:
        connection.close()
    # While through the edge it redirects
    edge = urlsplit(str(stack.info["edge_url"]))
    connection = http.client.HTTPConnection(edge.hostname or "127.0.0.1", edge.port, timeout=30)
    try:
        connection.request("GET", f"/{code}")
        followed = connection.getresponse()
        followed.read()
        assert (followed.status, followed.getheader("Location")) == (301, "https://example.com/origin-direct")
        # and a management path reached through the edge is no short link (it stays on the API's host)
        connection.request("GET", "/links")
        listing = connection.getresponse()
        assert (listing.status, json.loads(listing.read())["error"]) == (404, "not_found")
    finally:
        connection.close()
