"""The command-line client against a small fake API over real HTTP on loopback."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from shortener_cli.loops import Loop, format_loops
from shortener_cli.main import EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE, main, progress_bar


class FakeApi(BaseHTTPRequestHandler):
    """POST / and a bulk job that is done on its second status check."""

    status_checks = 0
    # Where the first results page says the next one is ({host} is the fake API's address).
    next_page = "http://{host}/jobs/j1/results?from_chunk=1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/bulk":
            self._json(202, {"job_id": "j1", "total": 2, "status_url": "http://sho.rt/jobs/j1"})
        elif json.loads(body)["url"].startswith("https://"):
            self._json(201, {"code": "abc", "short_url": "http://sho.rt/abc", "url": json.loads(body)["url"]})
        else:
            self._json(400, {"error": "invalid_url", "message": "The URL is not valid."})

    def do_GET(self) -> None:
        if self.path == "/jobs/j1":
            FakeApi.status_checks += 1
            done = FakeApi.status_checks >= 2
            counts = {"succeeded": 2 if done else 0, "failed": 0}
            self._json(200, {"job_id": "j1", "status": "done" if done else "running", "total": 2, **counts})
        else:
            # Two pages of results, the first linking to the second.
            first = self.path == "/jobs/j1/results"
            row = (
                b"1,https://a/,abc,http://sho.rt/abc,\n"
                if first
                else b"2,https://b/,abd,http://sho.rt/abd,\n"
            )
            body = b"row,url,code,short_url,error\n" + row
            self.send_response(200)
            self.send_header("Content-Type", "text/csv")
            self.send_header("Content-Length", str(len(body)))
            if first:
                host = self.headers["Host"]
                self.send_header("Link", f'<{FakeApi.next_page.format(host=host)}>; rel="next"')
            self.end_headers()
            self.wfile.write(body)

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def api_url() -> Iterator[str]:
    FakeApi.status_checks = 0
    FakeApi.next_page = "http://{host}/jobs/j1/results?from_chunk=1"
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_shorten_prints_the_short_url(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--api-url", api_url, "shorten", "https://example.com/"]) == EXIT_OK
    assert capsys.readouterr().out == "http://sho.rt/abc\n"


def test_an_api_error_is_explained_with_a_nonzero_exit(
    api_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--api-url", api_url, "shorten", "ftp:nope"]) == EXIT_REFUSED
    assert "The URL is not valid. (400 invalid_url)" in capsys.readouterr().err


def test_an_unreachable_api_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--api-url", "http://127.0.0.1:9/", "shorten", "https://example.com/"]) == EXIT_UNREACHABLE
    assert "cannot reach" in capsys.readouterr().err


def test_bulk_waits_and_writes_every_page_of_the_results(
    api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    upload = tmp_path / "links.csv"
    upload.write_text("url\nhttps://a/\n")
    output = tmp_path / "results.csv"
    code = main(
        ["--api-url", api_url, "bulk", str(upload), "--output", str(output), "--poll-interval", "0.01"]
    )
    assert code == EXIT_OK
    assert output.read_text().splitlines() == [
        "row,url,code,short_url,error",
        "1,https://a/,abc,http://sho.rt/abc,",
        "2,https://b/,abd,http://sho.rt/abd,",
    ]
    assert "2/2 rows, 0 failed (done)" in capsys.readouterr().err


@pytest.mark.parametrize("link", ["file:///etc/passwd", "ftp://{host}/results"])
def test_only_http_result_pages_are_followed(
    api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], link: str
) -> None:
    # Given an API whose first results page links to a next page that is not http(s)
    FakeApi.next_page = link
    upload = tmp_path / "links.csv"
    upload.write_text("url\nhttps://a/\n")
    output = tmp_path / "results.csv"
    # When the CLI fetches the results
    code = main(
        ["--api-url", api_url, "bulk", str(upload), "--output", str(output), "--poll-interval", "0.01"]
    )
    # Then it refuses to follow the link and says so
    assert code == EXIT_REFUSED
    assert "was not followed" in capsys.readouterr().err
    assert not output.exists()


def test_the_progress_bar() -> None:
    bar = progress_bar({"status": "running", "total": 10, "succeeded": 4, "failed": 1})
    assert bar == "[" + "#" * 15 + "." * 15 + "] 5/10 rows, 1 failed (running)"


def test_loops_are_listed_with_heartbeat_ages() -> None:
    loops = [
        Loop("http://aws/1/q", "slot-000", "abcdef", started_at=100, last_used=190),
        Loop("u", "t", "l", 1, None),
    ]
    table = format_loops(loops, now=200)
    assert "slot-000" in table
    assert "10 s ago" in table
    assert "never" in table
    assert format_loops([]) == "No loops."
