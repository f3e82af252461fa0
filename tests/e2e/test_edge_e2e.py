"""The edge on `make run` (docs/edge.md): short URLs name the local edge, which answers repeat
follows from its cache (CloudFront's X-Cache), counts every click once from its logs with the
referrer's host, and never serves what a change or a click limit makes wrong; the template's
distribution exists in the embedded AWS, a change to a link invalidates its path there, and the API's
own URL still redirects, saying how long the edge may keep the answer. One stack for the module."""

import http.client
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from tests.e2e.conftest import Answer, RunningStack, http_request

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


BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"


def through_edge(stack: RunningStack, code: str, referer: str | None = None) -> Answer:
    headers = {"User-Agent": BROWSER, **({"Referer": referer} if referer else {})}
    return http_request(stack.edge_url, "GET", code, headers=headers)


def shorten(stack: RunningStack, **fields: Any) -> dict[str, Any]:
    created = stack.post_json("", fields)
    assert created.status == 201, created.text
    link: dict[str, Any] = created.json()
    return link


def within(seconds: float, condition: Callable[[], bool]) -> bool:
    """Whether ``condition`` holds within ``seconds`` (checked every 0.2 s)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def clicks(stack: RunningStack, code: str) -> dict[str, Any]:
    answer = stack.request("GET", f"links/{code}/clicks")
    assert answer.status == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def test_a_short_url_is_answered_by_the_edge_and_its_repeat_from_the_cache_each_click_counted_once(
    stack: RunningStack,
) -> None:
    # Given a new link: its short URL names the local edge
    link = shorten(stack, url="https://example.com/edge-followed")
    code = link["code"]
    assert link["short_url"] == stack.edge_url + code
    # When it is followed twice through its short URL, from a mail
    first = through_edge(stack, code, referer="https://Mail.Example.org/inbox/42")
    second = through_edge(stack, code, referer="https://mail.example.org/inbox/43")
    # Then the first was the origin's answer and the second the edge's, with the same Location
    assert (first.status, first.headers["X-Cache"]) == (301, "Miss from cloudfront")
    assert (second.status, second.headers["X-Cache"]) == (301, "Hit from cloudfront")
    assert second.headers["Location"] == first.headers["Location"] == "https://example.com/edge-followed"
    assert int(second.headers["Age"]) >= 0
    assert second.headers["Via"].endswith(".cloudfront.net (CloudFront)")
    assert second.headers["X-Amz-Cf-Id"] != first.headers["X-Amz-Cf-Id"]
    # And the API's own URL still redirects
    own = stack.request("GET", code, api_key=None, headers={"User-Agent": BROWSER})
    assert (own.status, own.headers["Location"]) == (301, "https://example.com/edge-followed")
    # Then within 60 s the link reads three clicks, each once (the edge's two from its logs, with
    # the referrer's host; the API's one from its access log, which cannot see a referrer)
    assert within(60, lambda: clicks(stack, code)["total"] >= 3), clicks(stack, code)
    time.sleep(2.5)  # a later delivery of the same records changes nothing
    found = clicks(stack, code)
    assert (found["total"], found["humans"]) == (3, 3)
    assert found["referrers"] == [{"value": "mail.example.org", "clicks": 2}]
    assert {"value": "US", "clicks": 2} in found["countries"]


def test_a_deleted_or_changed_link_reaches_the_edge_within_10_s(stack: RunningStack) -> None:
    # Given two links, each kept by the edge
    gone = shorten(stack, url="https://example.com/edge-gone")["code"]
    moved = shorten(stack, url="https://example.com/edge-before")["code"]
    for code in (gone, moved, gone, moved):
        assert through_edge(stack, code).status == 301
    assert through_edge(stack, gone).headers["X-Cache"] == "Hit from cloudfront"
    # When one is deleted and the other given a new URL
    assert stack.request("DELETE", f"links/{gone}").status == 200
    changed = stack.request(
        "PATCH",
        f"links/{moved}",
        '{"url": "https://example.com/edge-after"}',
        {"Content-Type": "application/json"},
    )
    assert changed.status == 200, changed.text
    # Then within 10 s the edge answers 410 for the one and follows the new URL for the other
    assert within(10, lambda: through_edge(stack, gone).status == 410)
    assert within(
        10, lambda: through_edge(stack, moved).headers.get("Location") == "https://example.com/edge-after"
    )


def test_a_click_limited_link_holds_its_limit_exactly_through_the_edge(stack: RunningStack) -> None:
    code = shorten(stack, url="https://example.com/edge-limited", max_clicks=2)["code"]
    answers = [through_edge(stack, code) for _ in range(3)]
    # Every follow reached the function (never the cache), and the third found the limit reached
    assert [answer.headers["X-Cache"] for answer in answers[:2]] == ["Miss from cloudfront"] * 2
    assert [answer.status for answer in answers] == [301, 301, 410]


def test_a_code_that_missed_and_was_then_created_answers_at_once(stack: RunningStack) -> None:
    missed = through_edge(stack, "e2e-edge-late")
    assert missed.status == 404
    shorten(stack, url="https://example.com/edge-late", code="e2e-edge-late")
    created = through_edge(stack, "e2e-edge-late")
    assert (created.status, created.headers["Location"]) == (301, "https://example.com/edge-late")


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
