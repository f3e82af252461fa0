"""Campaign limits on the prod stage, whose cache answers GET /{code} without the function: an
expiry is enforced by the expirer's refresh of the entry (within a sweep of expires_at), a click
limit by the collector's counts (docs/campaign-links.md, "The bound on a cached stage")."""

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.e2e.conftest import RunningStack, _factory
from tests.e2e.test_bulk_e2e import results_of, wait_until_done

# The expirer runs on a rate(1 minute) schedule: every 6 s at this time scale.
TIME_SCALE = 10
SWEEP_SECONDS = 60 / TIME_SCALE
# A refresh goes through the API to its function, which may have to start a container first.
REFRESH_SECONDS = 6
# Access log delivery (a second, scaled), the collector's run (a cold start first), the refresh.
COUNT_DELAY_SECONDS = 20


@pytest.fixture(scope="module")
def prod_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """One stack on the prod stage (API Gateway caches GET /{code}), shared by this module's tests."""
    started: list[RunningStack] = []
    yield _factory(tmp_path_factory.mktemp("prod-limits"), started)(
        time_scale=TIME_SCALE, params={"Stage": "prod", "Edge": "off"}
    )
    for running in started:
        running.stop()


def _follow(stack: RunningStack, code: str) -> Any:
    return stack.request("GET", code, api_key=None, headers={"Accept": "application/json"})


def _change_behind_the_api(stack: RunningStack, code: str, url: str) -> None:
    """A change the API does not know of: only the function would see it, never the cache."""
    stack.boto3_client("dynamodb").update_item(
        TableName=stack.resources["LinksTable"],
        Key={"code": {"S": code}},
        UpdateExpression="SET #url = :other",
        ExpressionAttributeNames={"#url": "url"},
        ExpressionAttributeValues={":other": {"S": url}},
    )


def _first_410(stack: RunningStack, code: str, seconds: float) -> datetime | None:
    """Follow ``code`` every 0.25 s until it answers 410: when it did (None: not within ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _follow(stack, code).status == 410:
            return datetime.now(UTC)
        time.sleep(0.25)
    return None


@pytest.mark.e2e_timeout(120)
def test_an_expiry_is_enforced_on_the_cached_stage_within_a_sweep_of_its_time(
    prod_stack: RunningStack,
) -> None:
    stack = prod_stack
    # Given a link made with an expiry a few seconds ahead, and one given an expiry by PATCH
    expires_at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=8)
    made = stack.post_json("/", {"url": "https://example.com/e2e/soon", "expires_at": expires_at.isoformat()})
    assert made.status == 201, made.text
    later = stack.post_json("/", {"url": "https://example.com/e2e/patched"})
    assert later.status == 201, later.text
    codes = [made.json()["code"], later.json()["code"]]
    patched = stack.request(
        "PATCH",
        f"links/{codes[1]}",
        json.dumps({"expires_at": expires_at.isoformat()}),
        {"Content-Type": "application/json"},
    )
    assert patched.status == 200, patched.text
    # And both redirect, the answers now cached: a change behind the API's back is not seen
    for code in codes:
        assert _follow(stack, code).status == 301
        _change_behind_the_api(stack, code, "https://example.com/e2e/not-yet-seen")
        assert _follow(stack, code).headers["Location"] != "https://example.com/e2e/not-yet-seen"
    # When their expiry passes
    # Then each answers 410 from the cached stage, after expires_at and within one sweep of it
    # (plus the refresh's own time)
    for code in codes:
        gone_at = _first_410(stack, code, 8 + SWEEP_SECONDS + REFRESH_SECONDS + 10)
        assert gone_at is not None, f"{code} still redirects"
        assert expires_at <= gone_at <= expires_at + timedelta(seconds=SWEEP_SECONDS + REFRESH_SECONDS)
        assert _follow(stack, code).json()["error"] == "expired"
    # And the expiry index holds them no more: enforced once, not at every sweep
    items = stack.boto3_client("dynamodb").batch_get_item(
        RequestItems={stack.resources["LinksTable"]: {"Keys": [{"code": {"S": code}} for code in codes]}}
    )["Responses"][stack.resources["LinksTable"]]
    assert [item for item in items if "expiry_pk" in item] == []


@pytest.mark.e2e_timeout(120)
def test_a_click_limit_is_enforced_on_the_cached_stage_from_the_click_counts(
    prod_stack: RunningStack,
) -> None:
    stack = prod_stack
    # Given a link limited to 3 clicks, whose first redirect the stage caches
    made = stack.post_json("/", {"url": "https://example.com/e2e/three", "max_clicks": 3})
    assert made.status == 201, made.text
    code = made.json()["code"]
    assert _follow(stack, code).status == 301
    # And the cache really answers from then on: a change behind the API's back is not seen
    _change_behind_the_api(stack, code, "https://example.com/e2e/not-yet-seen")
    # When it is followed twice more (from the cache: the function counts none of these)
    assert [_follow(stack, code).headers["Location"] for _ in range(2)] == [
        "https://example.com/e2e/three"
    ] * 2
    # And then once a second, as a busy link is
    started = time.monotonic()
    over_limit = 0
    while (status := _follow(stack, code).status) == 301 and time.monotonic() - started < COUNT_DELAY_SECONDS:
        over_limit += 1
        time.sleep(1)
    # Then it answers 410 once the collector counted its third click, within the count delay: the
    # redirects past the limit are those the cache answered meanwhile (one a second here)
    elapsed = time.monotonic() - started
    assert status == 410, f"still redirecting after {elapsed:.0f} s"
    assert over_limit <= elapsed + 1
    assert _follow(stack, code).json()["error"] == "expired"
    # And the link says it is used up
    view = stack.request("GET", f"links/{code}").json()
    assert (view["clicks_left"], view["expired"]) == (0, True)


def test_custom_codes_made_through_links_bulk_replace_a_cached_404(prod_stack: RunningStack) -> None:
    stack = prod_stack
    # Given custom codes that were followed before they existed (the stage cache now holds 404s)
    codes = ["e2e-bulk-early-1", "e2e-bulk-early-2"]
    assert [_follow(stack, code).status for code in codes] == [404, 404]
    # When they are made through POST /links/bulk
    made = stack.request(
        "POST",
        "links/bulk",
        json.dumps({"links": [{"url": f"https://example.com/e2e/{code}", "code": code} for code in codes]}),
        {"Content-Type": "application/json"},
    )
    assert [outcome["status"] for outcome in made.json()["links"]] == [201, 201], made.text
    # Then they redirect at once, as POST / makes them do
    followed = [_follow(stack, code) for code in codes]
    assert [(answer.status, answer.headers["Location"]) for answer in followed] == [
        (301, f"https://example.com/e2e/{code}") for code in codes
    ]


def test_a_link_that_answers_each_visitor_is_refused_by_the_cached_stage(prod_stack: RunningStack) -> None:
    stack = prod_stack
    # A device rule on POST /: 422 naming it (the cache would give every visitor the first answer)
    refused = stack.post_json(
        "", {"url": "https://example.com/e2e/ruled", "android_url": "https://play.google.com/x"}
    )
    assert (refused.status, refused.json()["error"]) == (422, "cached_by_path"), refused.text
    assert "android_url" in refused.json()["message"]
    # In a bulk file only the row that would vary fails, with the reason; utm alone is fine
    text = (
        "url,geo,utm_source\n"
        "https://example.com/e2e/geo,DE=https://example.de/,sms\n"
        "https://example.com/e2e/utm,,sms\n"
    )
    answer = stack.request("POST", "bulk", text, {"Content-Type": "text/csv"}, timeout=60)
    assert answer.status == 202, answer.text
    job = wait_until_done(stack, answer.json()["job_id"], 60)
    assert (job["status"], job["succeeded"], job["failed"]) == ("done", 1, 1), (job, stack.log()[-3000:])
    lines = results_of(stack, job["job_id"])
    assert lines[0]["error"].startswith("cached_by_path: geo: ") and not lines[0]["code"]
    followed = _follow(stack, lines[1]["code"])
    assert (followed.status, followed.headers["Location"]) == (
        301,
        "https://example.com/e2e/utm?utm_source=sms",
    )
