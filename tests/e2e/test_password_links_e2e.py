"""Password and preview links end to end on the local stack, over HTTP, on the API's own URL and
through the local edge: the password form, a wrong and the right password, the 429 after repeated
wrong tries; a preview for crawlers and the redirect for a browser; never an answer cached for one
visitor served to another; a bulk CSV with a password column. One stack for the module; every
load bounded (at most seven requests per link)."""

import csv
import io
import time
from urllib.parse import urlencode

from tests.e2e.conftest import Answer, RunningStack, http_request

FACEBOOK = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"
TWITTER = "Twitterbot/1.0"
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
FORM = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"}


def create(stack: RunningStack, url: str, **fields: object) -> str:
    created = stack.post_json("", {"url": url, **fields})
    assert created.status == 201, created.text
    return str(created.json()["code"])


def send(base: str, code: str, password: str, headers: dict[str, str] | None = None) -> Answer:
    return http_request(base, "POST", code, urlencode({"password": password}), {**FORM, **(headers or {})})


def test_a_password_link_asks_then_opens_on_the_api_and_through_the_edge(stack: RunningStack) -> None:
    for base in (stack.api_url, stack.edge_url):
        code = create(stack, "https://example.com/members", password="open sesame")
        # Twice each: a second visitor gets no cached answer of the first
        for _ in range(2):
            page = http_request(base, "GET", code, headers={"User-Agent": FIREFOX})
            assert page.status == 200, (base, page.status)
            assert page.headers.get("Location") is None
            assert page.headers["Cache-Control"] == "private, no-store"
            assert "Hit" not in (page.headers.get("X-Cache") or "")
            assert f'action="{code}"' in page.text and 'name="password"' in page.text
        wrong = send(base, code, "sesame")
        assert wrong.status == 401 and 'name="password"' in wrong.text
        right = send(base, code, "open sesame")
        assert right.status == 302, (base, right.status, right.text)
        assert right.headers["Location"] == "https://example.com/members"
        assert right.headers["Cache-Control"] == "private, no-store"
        # And the page is still what the next visitor gets
        assert http_request(base, "GET", code).status == 200


def test_six_wrong_tries_answer_429_with_retry_after(stack: RunningStack) -> None:
    code = create(stack, "https://example.com/vault", password="pw")
    statuses = [send(stack.api_url, code, f"guess {n}").status for n in range(5)]
    assert statuses == [401] * 5
    blocked = send(stack.api_url, code, "guess 6")
    assert blocked.status == 429
    assert 0 < int(blocked.headers["Retry-After"]) <= 15 * 60 + 1


def test_a_preview_link_answers_crawlers_with_og_tags_and_browsers_with_the_redirect(
    stack: RunningStack,
) -> None:
    preview = {"title": "Spring <sale>", "description": "Flowers", "image": "https://cdn.example/s.png"}
    for base in (stack.api_url, stack.edge_url):
        code = create(stack, "https://example.com/spring", preview=preview)
        # A crawler first, then a browser, then crawlers again: no answer crosses over
        for agent, expected in ((FACEBOOK, 200), (FIREFOX, 302), (TWITTER, 200), (FIREFOX, 302)):
            answer = http_request(base, "GET", code, headers={"User-Agent": agent})
            assert answer.status == expected, (base, agent, answer.status)
            assert answer.headers["Cache-Control"] == "private, no-store"
            if expected == 200:
                assert '<meta property="og:title" content="Spring &lt;sale&gt;">' in answer.text
                assert answer.headers.get("Location") is None
            else:
                assert answer.headers["Location"] == "https://example.com/spring"


def test_a_bulk_csv_with_a_password_column_makes_password_links(stack: RunningStack) -> None:
    rows = "url,password\nhttps://example.com/a,pw1\nhttps://example.com/b,pw1\nhttps://example.com/c,\n"
    job = stack.request("POST", "bulk", rows, {"Content-Type": "text/csv"}).json()
    deadline = time.monotonic() + 60
    while stack.request("GET", f"jobs/{job['job_id']}").json()["status"] != "done":
        assert time.monotonic() < deadline
        time.sleep(0.5)
    results = list(csv.DictReader(io.StringIO(stack.request("GET", f"jobs/{job['job_id']}/results").text)))
    assert [row["error"] for row in results] == ["", "", ""]
    codes = [row["code"] for row in results]
    assert [http_request(stack.api_url, "GET", code).status for code in codes] == [200, 200, 301]
    assert send(stack.api_url, codes[1], "pw1").status == 302
    assert stack.request("GET", f"links/{codes[0]}").json()["has_password"] is True
