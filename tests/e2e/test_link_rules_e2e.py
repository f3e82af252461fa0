"""Links with rules on one local stack whose edge sees every viewer in Germany (`--viewer-country
DE`): each device goes where its rule says, UTM tags merge into Location, a 50/50 split is drawn
per request, a bulk CSV's rule columns make links that behave so, and the edge never answers a rule
link from its cache (X-Cache never Hit), while a plain link still is. One stack for the module;
every load bounded in count."""

import csv
import io
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.e2e.conftest import Answer, RunningStack, _factory, http_request
from tests.e2e.test_bulk_e2e import results_of, wait_until_done

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 Safari/604.1"
)
ANDROID = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36"
DESKTOP = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
SPLIT_REDIRECTS = 200


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    started: list[RunningStack] = []
    directory: Path = tmp_path_factory.mktemp("rules-stack")
    yield _factory(directory, started)("--viewer-country", "DE")
    for running in started:
        running.stop()


def _shorten(stack: RunningStack, **fields: Any) -> str:
    created = stack.post_json("", fields)
    assert created.status == 201, created.text
    return str(created.json()["code"])


def _follow(stack: RunningStack, code: str, agent: str, *, edge: bool) -> Answer:
    headers = {"User-Agent": agent}
    if edge:
        return http_request(stack.edge_url, "GET", code, headers=headers)
    return stack.request("GET", code, api_key=None, headers=headers)


def _rule_answer(answer: Answer) -> str:
    assert answer.status == 302, answer.text
    assert answer.headers["Cache-Control"] == "private, no-store"
    assert answer.headers.get("X-Cache") != "Hit from cloudfront"
    return str(answer.headers["Location"])


def test_each_device_and_country_goes_where_its_rule_says_on_both_urls(stack: RunningStack) -> None:
    code = _shorten(
        stack,
        url="https://example.com/landing?ref=print",
        ios_url="https://apps.apple.com/app/id1",
        android_url="https://play.google.com/store/apps/details?id=x",
        utm={"source": "sms", "campaign": "spring"},
    )
    geo = _shorten(stack, url="https://example.com/world", geo={"DE": "https://example.de/"})
    for edge in (True, False, True):  # twice through the edge: a second follow is never a hit
        assert _rule_answer(_follow(stack, code, IPHONE, edge=edge)) == (
            "https://apps.apple.com/app/id1?utm_source=sms&utm_campaign=spring"
        )
        android = _rule_answer(_follow(stack, code, ANDROID, edge=edge))
        assert android.startswith("https://play.google.com/store/apps/details?id=x&utm_source=sms")
        desktop = _rule_answer(_follow(stack, code, DESKTOP, edge=edge))
        assert parse_qsl(urlsplit(desktop).query) == [
            ("ref", "print"),
            ("utm_source", "sms"),
            ("utm_campaign", "spring"),
        ]
        # The edge says DE; the API's own URL has no country, so the link's url answers there
        expected = "https://example.de/" if edge else "https://example.com/world"
        assert _rule_answer(_follow(stack, geo, DESKTOP, edge=edge)) == expected


def test_a_50_50_split_draws_each_variant_per_request(stack: RunningStack) -> None:
    code = _shorten(
        stack,
        url="https://example.com/ab",
        variants=[{"url": "https://a.example/", "weight": 50}, {"url": "https://b.example/", "weight": 50}],
    )
    drawn = Counter(
        _rule_answer(_follow(stack, code, DESKTOP, edge=n % 2 == 0)) for n in range(SPLIT_REDIRECTS)
    )
    assert set(drawn) == {"https://a.example/", "https://b.example/"}
    assert min(drawn.values()) >= 60, drawn


def test_a_bulk_csv_with_rule_columns_makes_links_that_behave_so(stack: RunningStack) -> None:
    text = (
        "url,ios_url,utm_source\n"
        "https://example.com/bulk-a,https://apps.apple.com/app/id2,newsletter\n"
        "https://example.com/bulk-b,javascript:alert(1),newsletter\n"
        "https://example.com/bulk-c,,\n"
    )
    answer = stack.request("POST", "bulk", text, {"Content-Type": "text/csv"}, timeout=60)
    assert answer.status == 202, answer.text
    job = wait_until_done(stack, answer.json()["job_id"], 60)
    assert (job["status"], job["succeeded"], job["failed"]) == ("done", 2, 1), job
    lines = results_of(stack, job["job_id"])
    assert lines[1]["error"].startswith("invalid_url: ios_url: ") and not lines[1]["code"]
    ruled, plain = lines[0]["code"], lines[2]["code"]
    assert _rule_answer(_follow(stack, ruled, IPHONE, edge=True)) == (
        "https://apps.apple.com/app/id2?utm_source=newsletter"
    )
    assert _rule_answer(_follow(stack, ruled, DESKTOP, edge=True)) == (
        "https://example.com/bulk-a?utm_source=newsletter"
    )
    # And the plain row's link is cached at the edge as before
    first, second = (_follow(stack, plain, IPHONE, edge=True) for _ in range(2))
    assert (first.status, second.headers["X-Cache"]) == (301, "Hit from cloudfront")
    assert second.headers["Location"] == "https://example.com/bulk-c"
    # And the job's click report counts the rule link's answers by destination, on its row only
    expected = [("2", "default=1;ios=1"), ("0", ""), ("2", "")]
    deadline = time.monotonic() + 60
    while [(row["clicks"], row["destinations"]) for row in _job_report(stack, job["job_id"])] != expected:
        assert time.monotonic() < deadline, _job_report(stack, job["job_id"])
        time.sleep(0.5)


def _job_report(stack: RunningStack, job_id: str) -> list[dict[str, str]]:
    answer = stack.request("GET", f"jobs/{job_id}/clicks")
    assert answer.status == 200, answer.text
    return list(csv.DictReader(io.StringIO(answer.text)))


def test_forward_query_passes_the_short_urls_query_through_the_edge(stack: RunningStack) -> None:
    code = _shorten(stack, url="https://example.com/fq", forward_query=True)
    answer = http_request(stack.edge_url, "GET", f"{code}?gclid=abc", headers={"User-Agent": DESKTOP})
    assert _rule_answer(answer) == "https://example.com/fq?gclid=abc"


def _destinations(stack: RunningStack, code: str) -> tuple[int, dict[str, int]]:
    report = stack.request("GET", f"links/{code}/clicks").json()
    return report["total"], {entry["value"]: entry["clicks"] for entry in report["destinations"]}


def _wait_for_destinations(
    stack: RunningStack, code: str, expected: tuple[int, dict[str, int]]
) -> tuple[int, dict[str, int]]:
    deadline = time.monotonic() + 60
    while (found := _destinations(stack, code)) != expected and time.monotonic() < deadline:
        time.sleep(0.5)
    return found


def test_the_clicks_report_counts_each_answer_once_by_the_rule_that_gave_it(stack: RunningStack) -> None:
    # Given a link with device and country rules, followed through the edge (viewer country DE) by
    # an iPhone, an Android phone and a desktop, and on the API's own URL (no country) by a desktop
    ruled = _shorten(
        stack,
        url="https://example.com/dest",
        ios_url="https://apps.apple.com/app/id9",
        android_url="https://play.google.com/store/apps/details?id=x",
        geo={"DE": "https://example.de/dest"},
    )
    for agent in (IPHONE, ANDROID, DESKTOP):
        _rule_answer(_follow(stack, ruled, agent, edge=True))
    _rule_answer(_follow(stack, ruled, DESKTOP, edge=False))
    # and a password link with a preview: its page, a crawler's preview, a wrong and the right password
    locked = _shorten(stack, url="https://example.com/locked", password="sesame", preview={"title": "Locked"})
    assert _follow(stack, locked, DESKTOP, edge=False).status == 200
    assert _follow(stack, locked, "facebookexternalhit/1.1", edge=False).status == 200
    form = {"Content-Type": "application/x-www-form-urlencoded", "User-Agent": DESKTOP}
    assert http_request(stack.api_url, "POST", locked, "password=wrong", form).status == 401
    assert http_request(stack.api_url, "POST", locked, "password=sesame", form).status == 302
    # and a plain link, followed once on each URL
    plain = _shorten(stack, url="https://example.com/plain-dest")
    for edge in (True, False):
        assert _follow(stack, plain, DESKTOP, edge=edge).status == 301
    # Then each link's destinations count each answer once, by the rule that gave it
    expected = {
        ruled: (4, {"ios": 1, "android": 1, "geo:DE": 1, "default": 1}),
        locked: (1, {"password_page": 1, "preview": 1, "default": 1}),
        plain: (2, {"default": 2}),
    }
    for code, answers in expected.items():
        assert _wait_for_destinations(stack, code, answers) == answers, code
