"""The command-line client against a small fake API over real HTTP on loopback."""

import csv
import io
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from shortener_cli import output
from shortener_cli.loops import Loop, format_loops
from shortener_cli.main import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    batch_progress,
    local_aws_endpoint,
    main,
    progress_bar,
)
from shortener_cli.output import aligned_fields

LINK = {
    "code": "c1",
    "short_url": "http://sho.rt/c1",
    "url": "https://example.com/1",
    "title": "",
    "tags": [],
    "status": "active",
    "created_at": "2026-05-01T10:00:00Z",
}


class FakeApi(BaseHTTPRequestHandler):
    """POST / and a bulk job that is done on its second status check; link and blocklist routes
    with canned answers. Every request is recorded."""

    status_checks = 0
    requests: list[tuple[str, str, bytes]] = []
    # Where the first results page says the next one is ({host} is the fake API's address).
    next_page = "http://{host}/jobs/j1/results?from_chunk=1"
    # Fields of the done job's status besides its counts.
    done_status: dict[str, Any] = {}

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        FakeApi.requests.append(("POST", self.path, body))
        if self.path.split("?")[0] == "/bulk":
            self._json(202, {"job_id": "j1", "total": 2, "status_url": "http://sho.rt/jobs/j1"})
        elif json.loads(body)["url"].startswith("https://"):
            self._json(201, {"code": "abc", "short_url": "http://sho.rt/abc", "url": json.loads(body)["url"]})
        else:
            self._json(400, {"error": "invalid_url", "message": "The URL is not valid."})

    def do_GET(self) -> None:
        FakeApi.requests.append(("GET", self.path, b""))
        if self.path.startswith("/links"):
            second = "cursor=c1" in self.path
            links = (
                [LINK | {"code": "c3", "short_url": "http://sho.rt/c3"}]
                if second
                else [
                    LINK,
                    LINK
                    | {"code": "c2", "short_url": "http://sho.rt/c2", "status": "disabled", "title": "Sale"},
                ]
            )
            self._json(200, {"links": links, "next_cursor": None if second else "c1"})
            return
        if self.path == "/blocklist":
            self._json(
                200,
                {
                    "hosts": [
                        {
                            "host": "evil.example",
                            "created_at": "2026-05-01T10:00:00Z",
                            "added_by": "ops",
                            "reason": "phishing",
                        }
                    ]
                },
            )
            return
        if self.path == "/jobs/j1":
            FakeApi.status_checks += 1
            done = FakeApi.status_checks >= 2
            counts = {"succeeded": 2 if done else 0, "failed": 0}
            status = {"job_id": "j1", "status": "done" if done else "running", "total": 2, **counts}
            self._json(200, status | (FakeApi.done_status if done else {}))
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

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        FakeApi.requests.append(("PUT", self.path, body))
        self._json(
            200,
            {"host": "evil.example", "created_at": "2026-05-01T10:00:00Z", "added_by": "ops", "reason": ""},
        )

    def do_PATCH(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        FakeApi.requests.append(("PATCH", self.path, body))
        self._json(200, LINK | json.loads(body))

    def do_DELETE(self) -> None:
        FakeApi.requests.append(("DELETE", self.path, b""))
        if self.path.startswith("/blocklist/"):
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._json(200, LINK | {"status": "deleted"})

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
    FakeApi.requests = []
    FakeApi.next_page = "http://{host}/jobs/j1/results?from_chunk=1"
    FakeApi.done_status = {}
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


def bulk(api_url: str, tmp_path: Path, text: str = "url\nhttps://a/\n") -> tuple[int, Path]:
    """``shortener bulk`` of a file holding ``text``, waiting for its results: the exit code, and
    where the results were to be written."""
    upload = tmp_path / "links.csv"
    upload.write_text(text)
    output = tmp_path / "results.csv"
    code = main(
        ["--api-url", api_url, "bulk", str(upload), "--output", str(output), "--poll-interval", "0.01"]
    )
    return code, output


def test_bulk_waits_and_writes_every_page_of_the_results(
    api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = bulk(api_url, tmp_path)
    assert code == EXIT_OK
    assert output.read_text().splitlines() == [
        "row,url,code,short_url,error",
        "1,https://a/,abc,http://sho.rt/abc,",
        "2,https://b/,abd,http://sho.rt/abd,",
    ]
    assert "2/2 rows, 0 failed (done)" in capsys.readouterr().err


def test_rows_that_failed_are_results_the_cli_counts_and_ignored_columns_are_named(
    api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a job read to its end with a row error (a quote never closed) and a misspelt column
    FakeApi.done_status = {"succeeded": 1, "failed": 1, "ignored_columns": ["titel"], "ended_early": False}
    # When the CLI uploads it and waits for the results
    code, _ = bulk(api_url, tmp_path, 'url,titel\n"https://a/\nhttps://b/\n')
    # Then it exits 0, as the docs promise when every row has its outcome (row errors included),
    # and says how many rows failed and which columns were not read
    assert code == EXIT_OK
    err = capsys.readouterr().err
    assert "2/2 rows, 1 failed (done)" in err
    assert "1 row has an error; see the error column" in err
    assert "columns not read (not url, code or a link attribute): titel" in err


@pytest.mark.parametrize("link", ["file:///etc/passwd", "ftp://{host}/results"])
def test_only_http_result_pages_are_followed(
    api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], link: str
) -> None:
    # Given an API whose first results page links to a next page that is not http(s)
    FakeApi.next_page = link
    # When the CLI fetches the results
    code, output = bulk(api_url, tmp_path)
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


def test_links_are_listed_page_after_page(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--api-url", api_url, "links", "--tag", "spring", "--all"]) == EXIT_OK
    header, *lines = capsys.readouterr().out.splitlines()
    assert header.split() == ["SHORT", "URL", "STATUS", "CREATED", "URL", "TITLE", "TAGS"]
    assert [line.split()[0] for line in lines] == ["http://sho.rt/c1", "http://sho.rt/c2", "http://sho.rt/c3"]
    assert lines[1].split()[1] == "disabled"
    assert "Sale" in lines[1]
    # Every page, 1,000 links a page (the API's most)
    paths = [path for method, path, _ in FakeApi.requests if method == "GET"]
    assert paths == ["/links?tag=spring&limit=1000", "/links?tag=spring&limit=1000&cursor=c1"]


def test_links_are_exported_as_csv_or_json_lines(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    # When every link is exported as CSV
    assert main(["--api-url", api_url, "links", "--all", "--format", "csv"]) == EXIT_OK
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    # Then there is one row per link of every page, with the link's fields
    assert [row["code"] for row in rows] == ["c1", "c2", "c3"]
    assert (rows[1]["status"], rows[1]["title"], rows[1]["short_url"]) == (
        "disabled",
        "Sale",
        "http://sho.rt/c2",
    )
    # And as JSON lines, one object per line
    assert main(["--api-url", api_url, "links", "--all", "--format", "jsonl"]) == EXIT_OK
    objects = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [link["code"] for link in objects] == ["c1", "c2", "c3"]


def test_a_job_is_shown_in_aligned_fields_or_as_json(
    api_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # When a job is shown to a person
    assert main(["--api-url", api_url, "job", "j1"]) == EXIT_OK
    out = capsys.readouterr().out
    # Then no Python value shows (None, {...}), and the values line up
    assert "None" not in out and "{" not in out and "=" not in out
    lines = out.splitlines()
    assert len({line.index(line.split(":", 1)[1].strip()) for line in lines}) == 1
    # And --json gives the API's answer as it is
    assert main(["--api-url", api_url, "--json", "job", "j1"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["job_id"] == "j1"


def test_aligned_fields_flatten_nested_values() -> None:
    text = aligned_fields(
        {"job_id": "j1", "upload": None, "cost": {"requests": {"dynamodb": 1200}}, "ok": True}
    )
    assert text.splitlines() == [
        "job_id:                 j1",
        "upload:                 -",
        "cost.requests.dynamodb: 1,200",
        "ok:                     yes",
    ]


def test_a_link_is_changed_and_deleted(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--api-url", api_url, "update", "c1", "--tag", "a", "--tag", "b", "--disable"]) == EXIT_OK
    assert main(["--api-url", api_url, "delete", "c1"]) == EXIT_OK
    (patch_method, patch_path, patch_body), delete = FakeApi.requests
    assert (patch_method, patch_path) == ("PATCH", "/links/c1")
    assert json.loads(patch_body) == {"tags": ["a", "b"], "status": "disabled"}
    assert delete[:2] == ("DELETE", "/links/c1")
    assert re.search(r"^status: +deleted$", capsys.readouterr().out, re.MULTILINE)


def test_nothing_to_change_is_a_usage_error(api_url: str) -> None:
    assert main(["--api-url", api_url, "update", "c1"]) == EXIT_USAGE
    assert FakeApi.requests == []


def test_hosts_are_blocked_listed_and_unblocked(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--api-url", api_url, "block", "evil.example", "--reason", "phishing"]) == EXIT_OK
    assert main(["--api-url", api_url, "blocklist"]) == EXIT_OK
    assert main(["--api-url", api_url, "unblock", "evil.example"]) == EXIT_OK
    assert [(method, path) for method, path, _ in FakeApi.requests] == [
        ("PUT", "/blocklist/evil.example"),
        ("GET", "/blocklist"),
        ("DELETE", "/blocklist/evil.example"),
    ]
    assert json.loads(FakeApi.requests[0][2]) == {"reason": "phishing"}
    out = capsys.readouterr().out
    assert "evil.example  blocked 2026-05-01 by ops  (phishing)" in out
    assert "evil.example is no longer blocked" in out


class FakeDirectApi(BaseHTTPRequestHandler):
    """A direct upload: POST /bulk/uploads points at a fake storage on the same server; the job's
    results are first not ready (409), then a 303 to the stored file."""

    stored: bytes = b""
    results_asked = 0
    started: dict[str, Any] = {}

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeDirectApi.started = payload
        host = self.headers["Host"]
        upload = {
            "method": "PUT",
            "url": f"http://{host}/storage/uploads/j2.csv?X-Amz-Signature=x",
            "headers": {"Content-Length": str(payload["size"])},
        }
        self._answer(201, json.dumps({"job_id": "j2", "status_url": "", "upload": upload}).encode())

    def do_PUT(self) -> None:
        FakeDirectApi.stored = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(200, b"")

    def do_GET(self) -> None:
        if self.path == "/jobs/j2":
            body = {
                "job_id": "j2",
                "status": "done",
                "phase": "done",
                "total": 2,
                "succeeded": 2,
                "failed": 0,
            }
            self._answer(200, json.dumps(body).encode())
        elif self.path == "/jobs/j2/results":
            FakeDirectApi.results_asked += 1
            if FakeDirectApi.results_asked == 1:
                error = {"error": "results_not_ready", "message": "being written"}
                self._answer(409, json.dumps(error).encode(), {"Retry-After": "0"})
            else:
                self._answer(
                    303, b"{}", {"Location": f"http://{self.headers['Host']}/storage/results/j2.csv"}
                )
        else:
            self._answer(
                200, b"row,url,code,short_url,error\n1,https://a/,abc,http://sho.rt/abc,\n", {}, "text/csv"
            )

    def _answer(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def direct_api_url() -> Iterator[str]:
    FakeDirectApi.stored, FakeDirectApi.results_asked = b"", 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeDirectApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_a_direct_upload_sends_the_file_to_storage_and_saves_the_results_file(
    direct_api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a CSV and --direct (files above the small-body limit go this way by themselves)
    source = tmp_path / "links.csv"
    source.write_bytes(b"url\nhttps://a/\nhttps://b/\n")
    output = tmp_path / "results.csv"
    # When it is uploaded and waited for
    code = main(
        [
            "--api-url",
            direct_api_url,
            "bulk",
            str(source),
            "--direct",
            "--domain",
            "go.example",
            "--output",
            str(output),
            "--poll-interval",
            "0",
        ]
    )
    # Then the file went to storage whole, with a bar for its bytes, and the results file, asked
    # for again while it was being written, was saved
    assert code == EXIT_OK
    assert FakeDirectApi.started == {"file_name": "links.csv", "size": 26, "domain": "go.example"}
    assert FakeDirectApi.stored == source.read_bytes()
    assert "26 B" not in capsys.readouterr().err  # the bar speaks in MB
    assert output.read_bytes().startswith(b"row,url,code,short_url,error\n1,https://a/")
    assert FakeDirectApi.results_asked == 2


def test_results_of_any_job_can_be_fetched_later(
    direct_api_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--api-url", direct_api_url, "results", "j2", "--poll-interval", "0"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("row,url,code,short_url,error\n")


def test_the_progress_of_a_file_being_read_shows_how_much_of_it_was_read() -> None:
    status = {
        "status": "running",
        "phase": "splitting",
        "total": 500,
        "succeeded": 250,
        "failed": 0,
        "upload": {"file_name": "a.csv", "size": 1000, "bytes_read": 310},
    }
    assert "file read 31%" in progress_bar(status)


def test_loops_look_for_the_running_local_stacks_aws(tmp_path: Path) -> None:
    # Given a local stack whose embedded AWS is not on the default port
    (tmp_path / "stack.json").write_text(
        json.dumps({"api_url": "http://127.0.0.1:4000/", "aws_endpoint": "http://127.0.0.1:4001"})
    )
    # When the loops command picks its AWS endpoint
    # Then it is that stack's, and the default port only when no stack is found
    assert local_aws_endpoint(str(tmp_path)) == "http://127.0.0.1:4001"
    assert local_aws_endpoint(str(tmp_path / "none")) == "http://127.0.0.1:3001"


def test_batch_arguments_become_the_batch_request() -> None:
    from shortener_cli.main import batch_request, build_parser

    def request(*argv: str) -> object:
        return batch_request(build_parser().parse_args(["batch", *argv]))

    assert request("disable", "--job", "a" * 32) == {"action": "disable", "job_id": "a" * 32}
    assert request("delete", "abc", "def") == {"action": "delete", "codes": ["abc", "def"]}
    assert request("set", "--tag", "spring", "--max-clicks", "5", "--tags", "a, b", "--title", "T") == {
        "action": "set",
        "tag": "spring",
        "set": {"max_clicks": 5, "tags": ["a", "b"], "title": "T"},
    }
    assert request("enable") == "name the links by CODE..., --job or --tag (one of them)"
    assert request("enable", "abc", "--tag", "x") == "name the links by CODE..., --job or --tag (one of them)"
    assert request("set", "abc") == "set needs --expires-at, --max-clicks, --tags or --title"


def test_shorten_and_update_send_the_links_fields(api_url: str) -> None:
    # When a link is made with a title, tags and limits
    shorten = ["shorten", "https://example.com/", "--title", "Sale", "--tags", "spring, sms"]
    limits = ["--expires-at", "2030-01-01T00:00:00Z", "--max-clicks", "5"]
    assert main(["--api-url", api_url, *shorten, *limits]) == EXIT_OK
    # And changed: limits removed with "none", tags replaced
    update = ["update", "c1", "--tags", "a", "--tag", "b", "--expires-at", "none", "--max-clicks", "none"]
    assert main(["--api-url", api_url, *update]) == EXIT_OK
    # Then the API gets them under its own names
    sent = [json.loads(body) for method, _, body in FakeApi.requests if method in ("POST", "PATCH")]
    assert sent == [
        {
            "url": "https://example.com/",
            "title": "Sale",
            "tags": ["spring", "sms"],
            "expires_at": "2030-01-01T00:00:00Z",
            "max_clicks": 5,
        },
        {"tags": ["b", "a"], "expires_at": None, "max_clicks": None},
    ]


def test_counts_are_singular_for_one_and_the_tag_batch_shows_progress(
    api_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert [output.count(n, "link") for n in (0, 1, 2, 1000)] == [
        "0 links",
        "1 link",
        "2 links",
        "1,000 links",
    ]
    assert progress_bar({"status": "running", "total": 1, "succeeded": 0, "failed": 0}).endswith(
        "0/1 row, 0 failed (running)"
    )
    running = {"status": "running", "total": 300, "changed": 118, "unchanged": 0, "failed": 2}
    assert batch_progress("b1", running) == "batch b1: 120 of 300 links done so far, 2 failed (running)"
    assert batch_progress("b1", running | {"total": 1, "changed": 1, "failed": 0}).startswith(
        "batch b1: 1 of 1 link done"
    )
    # A table of links is counted on stderr, in the singular for one
    assert main(["--api-url", api_url, "links", "--tag", "spring"]) == EXIT_OK
    assert capsys.readouterr().err.splitlines()[0] == "2 links"


def test_shorten_and_update_send_the_links_rules(api_url: str) -> None:
    # When a link is made with rules, then its device rule removed and the query no longer forwarded
    rules = ["--ios-url", "https://apps.apple.com/app/id1", "--geo", "DE=https://example.de/"]
    rules += ["--variants", "https://a.example/|50;https://b.example/|50", "--utm-source", "sms"]
    assert (
        main(["--api-url", api_url, "shorten", "https://example.com/", *rules, "--forward-query"]) == EXIT_OK
    )
    update = ["update", "c1", "--ios-url", "none", "--no-forward-query", "--utm-campaign", "spring"]
    assert main(["--api-url", api_url, *update]) == EXIT_OK
    # Then the API gets them under its own names (geo and variants as a bulk file writes them)
    sent = [json.loads(body) for method, _, body in FakeApi.requests if method in ("POST", "PATCH")]
    assert sent == [
        {
            "url": "https://example.com/",
            "ios_url": "https://apps.apple.com/app/id1",
            "geo": "DE=https://example.de/",
            "variants": "https://a.example/|50;https://b.example/|50",
            "forward_query": True,
            "utm": {"source": "sms"},
        },
        {"ios_url": None, "forward_query": False, "utm": {"campaign": "spring"}},
    ]


def test_shorten_and_update_send_a_password_and_a_preview(
    api_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # When a link is made with a password typed at the prompt and a preview, then both removed
    monkeypatch.setattr("getpass.getpass", lambda prompt: "open sesame")
    preview = ["--preview-title", "Spring sale", "--preview-image", "https://img.example/s.png"]
    assert main(["--api-url", api_url, "shorten", "https://example.com/", "--password", *preview]) == EXIT_OK
    assert (
        main(["--api-url", api_url, "update", "c1", "--password", "none", "--preview-title", "none"])
        == EXIT_OK
    )
    assert main(["--api-url", api_url, "update", "c1", "--password", "s3cret"]) == EXIT_OK
    # Then the API gets them under its own names
    sent = [json.loads(body) for method, _, body in FakeApi.requests if method in ("POST", "PATCH")]
    assert sent == [
        {
            "url": "https://example.com/",
            "password": "open sesame",
            "preview": {"title": "Spring sale", "image": "https://img.example/s.png"},
        },
        {"password": None, "preview": None},
        {"password": "s3cret"},
    ]
