"""The core flows over HTTP only, against the local stack: create, follow, 404, the index page,
restart survival, and the command-line client."""

import subprocess
import sys

from tests.e2e.conftest import RunningStack, StartStack


def test_a_created_link_redirects(stack: RunningStack) -> None:
    # Given a URL shortened through the API
    created = stack.post_json("/", {"url": "https://example.com/e2e/create"})
    assert created.status == 201, created.text
    body = created.json()
    # Then its short URL is on the local API's host
    assert body["short_url"] == f"{stack.api_url}{body['code']}"
    # And following it redirects to the URL, with a cache header
    followed = stack.request("GET", body["code"])
    assert followed.status == 301
    assert followed.headers["Location"] == "https://example.com/e2e/create"
    assert followed.headers["Cache-Control"]


def test_an_unknown_code_is_404(stack: RunningStack) -> None:
    answer = stack.request("GET", "nosuchcode", headers={"Accept": "application/json"})
    assert answer.status == 404
    assert answer.json()["error"]


def test_the_index_page_is_html(stack: RunningStack) -> None:
    answer = stack.request("GET", "/")
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("text/html")
    assert "<form" in answer.text.lower()


def test_a_link_survives_a_restart(start_stack: StartStack) -> None:
    # Given a link created on a stack
    running = start_stack()
    code = running.post_json("/", {"url": "https://example.com/e2e/restart"}).json()["code"]
    # When the stack stops cleanly and starts again on the same data dir
    running.restart()
    # Then the link still redirects
    followed = running.request("GET", code)
    assert followed.status == 301
    assert followed.headers["Location"] == "https://example.com/e2e/restart"


def test_the_cli_shortens_a_url(stack: RunningStack) -> None:
    # When the command-line client shortens a URL against the stack
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "shortener_cli.main",
            "--api-url",
            stack.api_url,
            "shorten",
            "https://example.com/cli",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    # Then it prints the short URL, which redirects to the URL
    assert result.returncode == 0, result.stderr
    short_url = result.stdout.strip().splitlines()[0]
    assert short_url.startswith(stack.api_url)
    followed = stack.request("GET", short_url.removeprefix(stack.api_url))
    assert followed.headers["Location"] == "https://example.com/cli"
