"""``--json`` on every command that prints; a closed pipe and a file that cannot be written end
the CLI with an exit code and at most one line, never a traceback; an upload carries its file's
name."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shortener.jobs.csv_reader import read_upload
from shortener_cli.client import multipart_file
from shortener_cli.main import EXIT_OK, EXIT_USAGE, main
from tests.cli.test_main import FakeApi, api_url  # noqa: F401 - the fake API and its fixture

__all__ = ["FakeApi"]


def test_shorten_prints_the_link_as_json(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    assert main(["--api-url", api_url, "--json", "shorten", "https://example.com/"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == {
        "code": "abc",
        "short_url": "http://sho.rt/abc",
        "url": "https://example.com/",
    }


def test_unblock_prints_json(api_url: str, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    assert main(["--api-url", api_url, "--json", "unblock", "evil.example"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == {"host": "evil.example", "blocked": False}


def test_results_as_json_name_their_file_and_print_the_jobs_status(
    api_url: str,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # CSV results on stdout cannot also be JSON: a usage error, nothing asked of the API
    assert main(["--api-url", api_url, "--json", "results", "j1"]) == EXIT_USAGE
    assert "--output" in capsys.readouterr().err
    assert FakeApi.requests == []
    # With a file for the results, stdout holds the job's last status as JSON
    out = tmp_path / "results.csv"
    args = ["--api-url", api_url, "--json", "results", "j1", "--output", str(out), "--poll-interval", "0.01"]
    assert main(args) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["status"] == "done"
    assert out.read_text().startswith("row,url,code,short_url,error\n")


def test_bulk_without_waiting_prints_the_job_as_json(
    api_url: str,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    upload = tmp_path / "links.csv"
    upload.write_text("url\nhttps://a/\n")
    assert main(["--api-url", api_url, "--json", "bulk", str(upload)]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["job_id"] == "j1"


@pytest.mark.parametrize("command", [["results", "j1"], ["qr", "c1"]])
def test_a_file_in_a_folder_that_does_not_exist_is_one_line_and_exit_2(
    api_url: str,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
) -> None:
    target = tmp_path / "no" / "such" / "folder" / ("out.csv" if command[0] == "results" else "c1.png")
    FakeApi.status_checks = 5  # the job is done
    assert main(["--api-url", api_url, *command, "--output", str(target)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"shortener: cannot write {target}: ")
    assert not target.parent.exists() and FakeApi.requests == []
    # A path that cannot be written (here a folder of that name): the same, and no partial file
    taken = tmp_path / target.name
    taken.mkdir()
    assert main(["--api-url", api_url, *command, "--output", str(taken)]) == EXIT_USAGE
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith(f"shortener: cannot write {taken}: ")
    assert not (tmp_path / f"{taken.name}.partial").exists()


def test_a_closed_pipe_ends_quietly_with_exit_0(api_url: str) -> None:  # noqa: F811
    # Given a reader that has gone away before the CLI writes (as `| head -1` does after a line)
    args = ["--api-url", api_url, "links", "--all", "--format", "jsonl"]
    script = f"import sys; from shortener_cli.main import main; sys.exit(main({args!r}))"
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    # Then it exits 0, with nothing on stderr
    assert process.wait(timeout=60) == EXIT_OK
    assert process.stderr.read() == b""


@pytest.mark.parametrize("name", ["links.csv", 'spring "sale" 2026.csv', "Frühling ✓.csv"])
def test_an_upload_carries_its_files_name_as_the_api_reads_it(name: str) -> None:
    # Given a file sent as the CLI sends it
    body, content_type = multipart_file(b"url\nhttps://example.com/\n", name)
    # Then the API's own reader finds its rows and its name
    uploaded = read_upload(body, content_type, max_bytes=10_000, max_rows=10)
    assert uploaded.file_name == name
    assert [row.url for row in uploaded.rows] == ["https://example.com/"]


def test_bulk_sends_the_files_name(api_url: str, tmp_path: Path) -> None:  # noqa: F811
    upload = tmp_path / "spring.csv"
    upload.write_text("url\nhttps://a/\n")
    assert main(["--api-url", api_url, "bulk", str(upload)]) == EXIT_OK
    [(_, path, body)] = [request for request in FakeApi.requests if request[0] == "POST"]
    assert path == "/bulk" and b'filename="spring.csv"' in body


def test_bulk_sends_the_jobs_default_domain(api_url: str, tmp_path: Path) -> None:  # noqa: F811
    upload = tmp_path / "brand.csv"
    upload.write_text("url\nhttps://a/\n")
    assert main(["--api-url", api_url, "bulk", str(upload), "--domain", "go.example"]) == EXIT_OK
    [(_, path, _)] = [request for request in FakeApi.requests if request[0] == "POST"]
    assert path == "/bulk?domain=go.example"
