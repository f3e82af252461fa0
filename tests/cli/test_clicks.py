"""`shortener clicks`: a link's report (text or CSV), the caller's top links, and a job's click
report saved once the API has built it (202 with Retry-After, then the CSV)."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from shortener.clicks.event_queries import EXPORT_COLUMNS
from shortener_cli.main import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, main

REPORT = {
    "code": "abc",
    "total": 10,
    "humans": 7,
    "bots": 3,
    "from": "2026-11-01T00:00:00Z",
    "to": "2026-11-26T00:00:00Z",
    "interval": "day",
    "series": [
        {"start": "2026-11-24T00:00:00Z", "clicks": 0, "humans": 0},
        {"start": "2026-11-25T00:00:00Z", "clicks": 10, "humans": 7},
    ],
    "countries": [{"value": "FR", "clicks": 10}],
    "referrers": [],
    "devices": [{"value": "mobile", "clicks": 7}, {"value": "bot", "clicks": 3}],
    "browsers": [{"value": "Mobile Safari", "clicks": 7}],
    "os": [{"value": "iOS", "clicks": 7}],
    "destinations": [{"value": "ios", "clicks": 7}, {"value": "default", "clicks": 3}],
}
EXPORT = ",".join(f'"{name}"' for name in EXPORT_COLUMNS).encode() + b"\n"
CSV = b"row,url,code,short_url,clicks,humans,first_click,last_click,destinations\r\n1,https://a/,abc,http://sho.rt/abc,3,3,,,\r\n"


class ClicksApi(BaseHTTPRequestHandler):
    paths: list[str] = []
    report_asks = 0

    def do_GET(self) -> None:
        ClicksApi.paths.append(self.path)
        if self.path.startswith("/links/abc/clicks"):
            self._answer(200, json.dumps(REPORT).encode())
        elif self.path.startswith("/links/"):
            self._answer(404, b'{"error": "not_found", "message": "No such link."}')
        elif self.path.startswith("/clicks/export"):
            ClicksApi.report_asks += 1
            if ClicksApi.report_asks == 1:
                self._answer(
                    202, b'{"error": "export_not_ready", "message": "Building."}', {"Retry-After": "0"}
                )
            else:
                self._answer(303, b'{"export_url": "/files/export.csv"}', {"Location": "/files/export.csv"})
        elif self.path == "/files/export.csv":
            self._answer(200, EXPORT, {"Content-Type": "text/csv"})
        elif self.path.startswith("/clicks"):
            top = {
                "from": "a",
                "to": "b",
                "total": 4,
                "humans": 3,
                "visitors": 2,
                "links": [{"code": "abc", "short_url": "http://sho.rt/abc", "clicks": 4, "humans": 3}],
                "groups": [{"value": "DE", "clicks": 4, "humans": 3, "visitors": 2}],
            }
            self._answer(200, json.dumps(top).encode())
        elif self.path == "/jobs/j1/clicks":
            ClicksApi.report_asks += 1
            if ClicksApi.report_asks == 1:
                self._answer(
                    202, b'{"error": "report_not_ready", "message": "Building."}', {"Retry-After": "0"}
                )
            else:
                self._answer(200, CSV, {"Content-Type": "text/csv"})

    def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def api_url() -> Iterator[str]:
    ClicksApi.paths, ClicksApi.report_asks = [], 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), ClicksApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_a_links_report_is_printed_with_its_range(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--api-url", api_url, "clicks", "abc", "--from", "2026-11-01", "--interval", "day"])
    assert code == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("abc: 10 clicks (7 humans, 3 bots) from 2026-11-01T00:00:00Z")
    assert "2026-11-25T00:00:00Z" in out and "2026-11-24T00:00:00Z" not in out  # empty days left out
    assert "devices: mobile 7, bot 3" in out and "referrers: -" in out
    assert "destinations: ios 7, default 3" in out
    assert ClicksApi.paths == ["/links/abc/clicks?from=2026-11-01&interval=day"]


def test_csv_prints_the_whole_series(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--api-url", api_url, "clicks", "abc", "--csv"]) == EXIT_OK
    assert capsys.readouterr().out.splitlines() == [
        "start,clicks,humans",
        "2026-11-24T00:00:00Z,0,0",
        "2026-11-25T00:00:00Z,10,7",
    ]


def test_without_a_code_the_top_links_are_printed(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--api-url", api_url, "clicks"]) == EXIT_OK
    assert "http://sho.rt/abc" in capsys.readouterr().out


def test_a_jobs_report_is_saved_once_built(
    api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "report.csv"
    assert main(["--api-url", api_url, "clicks", "--job", "j1", "--output", str(output)]) == EXIT_OK
    assert output.read_bytes() == CSV and ClicksApi.report_asks == 2
    assert not (tmp_path / "report.csv.partial").exists()


def test_an_unknown_link_and_a_confused_call_are_refused(
    api_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--api-url", api_url, "clicks", "nope"]) == EXIT_REFUSED
    assert "No such link. (404 not_found)" in capsys.readouterr().err
    assert main(["--api-url", api_url, "clicks", "abc", "--job", "j1"]) == EXIT_USAGE


def test_reports_print_as_json(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--api-url", api_url, "--json", "clicks", "abc"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["total"] == 10
    assert main(["--api-url", api_url, "--json", "clicks"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["links"][0]["short_url"] == "http://sho.rt/abc"
    assert main(["--api-url", api_url, "--json", "clicks", "abc", "--csv"]) == EXIT_USAGE


def test_a_breakdown_and_filters_are_asked_and_printed(
    api_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "--api-url",
        api_url,
        "clicks",
        "--group-by",
        "country",
        "--device",
        "mobile",
        "--tz",
        "Europe/Paris",
    ]
    assert main(args) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("4 clicks (3 humans), 2 visitors from a to b")
    assert out.splitlines()[-2:] == ["VALUE  CLICKS  HUMANS  VISITORS", "DE     4       3       2"]
    assert ClicksApi.paths == ["/clicks?tz=Europe%2FParis&group_by=country&device=mobile"]


def test_an_export_is_saved_once_built(
    api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "clicks.csv"
    assert (
        main(["--api-url", api_url, "clicks", "abc", "--export", str(output), "--from", "2026-11-01"])
        == EXIT_OK
    )
    assert output.read_bytes() == EXPORT and ClicksApi.report_asks == 2
    assert ClicksApi.paths[0] == "/clicks/export?from=2026-11-01&code=abc&format=csv"


def test_an_exports_format_is_its_files_suffix(api_url: str, tmp_path: Path) -> None:
    output = tmp_path / "clicks.Parquet"
    assert main(["--api-url", api_url, "clicks", "--export", str(output)]) == EXIT_OK
    assert ClicksApi.paths[0] == "/clicks/export?format=parquet"
