"""Campaign links end to end on the local stack, over HTTP: a click limit that holds exactly under
concurrent followers, an expiry that takes effect at its time, and limits refused when invalid.
One stack for the module."""

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from tests.e2e.conftest import RunningStack


def follow(stack: RunningStack, code: str) -> int:
    return stack.request("GET", code, api_key=None).status


def test_max_clicks_2_gives_two_redirects_then_410(stack: RunningStack) -> None:
    created = stack.post_json("", {"url": "https://example.com/twice", "max_clicks": 2})
    assert created.status == 201, created.text
    code = created.json()["code"]
    answers = [stack.request("GET", code, api_key=None) for _ in range(3)]
    assert [answer.status for answer in answers] == [301, 301, 410]
    assert answers[0].headers["Location"] == "https://example.com/twice"
    assert answers[2].json()["error"] == "expired"
    shown = stack.request("GET", f"links/{code}").json()
    assert (shown["max_clicks"], shown["clicks_left"], shown["expired"]) == (2, 0, True)


def test_sixteen_concurrent_followers_get_exactly_two_redirects(stack: RunningStack) -> None:
    code = stack.post_json("", {"url": "https://example.com/race", "max_clicks": 2}).json()["code"]
    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda _: follow(stack, code), range(16)))
    assert sorted(statuses) == [301] * 2 + [410] * 14


def test_a_link_expiring_in_seconds_redirects_then_answers_410(stack: RunningStack) -> None:
    expires_at = datetime.now(UTC) + timedelta(seconds=3)
    created = stack.post_json("", {"url": "https://example.com/flash", "expires_at": expires_at.isoformat()})
    assert created.status == 201, created.text
    code = created.json()["code"]
    followed = stack.request("GET", code, api_key=None)
    assert followed.status == 301
    max_age = int(followed.headers["Cache-Control"].rsplit("max-age=", 1)[1])
    assert max_age <= 3
    time.sleep(max(0.0, (expires_at - datetime.now(UTC)).total_seconds()) + 0.2)
    expired = stack.request("GET", code, api_key=None)
    assert (expired.status, expired.json()["error"]) == (410, "expired")
    page = stack.request("GET", code, headers={"Accept": "text/html"}, api_key=None)
    assert page.status == 410 and "Link expired" in page.text


def test_a_past_expires_at_or_a_zero_max_clicks_is_422_with_the_error_body(stack: RunningStack) -> None:
    past = stack.post_json("", {"url": "https://example.com/late", "expires_at": "2020-01-01T00:00:00Z"})
    zero = stack.post_json("", {"url": "https://example.com/none", "max_clicks": 0})
    for answer, field in ((past, "expires_at"), (zero, "max_clicks")):
        assert answer.status == 422
        assert answer.json()["error"] == "invalid_request"
        assert answer.json()["message"].startswith(field)
