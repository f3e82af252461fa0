"""The edge on `make run` (docs/edge.md): the template's distribution exists in the embedded AWS,
a change to a link invalidates its path there, and the API's own URL still redirects, saying how
long the edge may keep the answer. One stack for the module."""

import time

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
