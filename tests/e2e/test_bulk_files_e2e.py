"""Bulk files as people have them, end to end on one shared local stack: a UTF-8 file with a Latin-1
line in the middle, a file saved by Excel on Windows (cp1252), blank lines and a line no encoding
reads, a quote never closed, classic Mac line endings; every data row has one outcome numbered by
its line, the job names the columns it did not read, and the CLI's exit code says when a job ended
early."""

import csv
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import PROJECT_ROOT, RunningStack, _factory, http_request
from tests.e2e.test_access_e2e import create_key

WAIT_SECONDS = 120


def _cli(stack: RunningStack) -> list[str]:
    return [
        sys.executable,
        "-m",
        "shortener_cli.main",
        "--api-url",
        stack.api_url,
        "--api-key",
        str(stack.api_key),
    ]


def _bulk(stack: RunningStack, source: Path, output: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_cli(stack), "bulk", str(source), "--output", str(output), "--timeout", str(WAIT_SECONDS), *extra],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS + 30,
        check=False,
    )


def _results(output: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(output.open(encoding="utf-8", newline="")))


def test_a_latin1_line_in_a_utf8_file_is_shortened_and_blank_lines_keep_the_row_numbers(
    stack: RunningStack, tmp_path: Path
) -> None:
    # Given a UTF-8 file (sent in the request body) with a Latin-1 line in the middle and blank lines
    source = tmp_path / "mixed.csv"
    source.write_bytes(
        b"url\n"
        + "https://example.com/ünïcode\n".encode()
        + b"\n"
        + b"https://example.com/caf\xe9\n"
        + b"\n\n"
        + b"https://example.com/last\n"
    )
    output = tmp_path / "mixed-results.csv"
    # When the CLI uploads it and waits for the results
    done = _bulk(stack, source, output)
    # Then it exits 0, each data row has one outcome, numbered by its line after the header, and
    # the Latin-1 line was read with the fallback and shortened
    assert done.returncode == 0, done.stderr
    lines = _results(output)
    assert [int(line["row"]) for line in lines] == [1, 3, 6]
    assert all(line["code"] and not line["error"] for line in lines)
    assert lines[1]["url"] == "https://example.com/caf%C3%A9"
    assert "1 line was not UTF-8 and read as cp1252" in done.stderr


def test_a_cp1252_file_uploaded_directly_gives_every_row_one_outcome(
    stack: RunningStack, tmp_path: Path
) -> None:
    # Given a file saved by Excel on Windows (cp1252, semicolons) with a line no encoding reads
    source = tmp_path / "excel.csv"
    text = "Long URL;Notes\r\nhttps://example.com/€uro;prix 5 €\r\nhttps://example.com/naïve;“quoted”\r\n"
    source.write_bytes(
        text.encode("cp1252") + b"https://example.com/\x81;x\r\n\r\nhttps://example.com/z;\r\n"
    )
    output = tmp_path / "excel-results.csv"
    # When the CLI uploads it straight to storage and waits
    done = _bulk(stack, source, output, "--direct")
    # Then every data row has one outcome: the cp1252 ones shortened, the unreadable one a row error
    assert done.returncode == 0, done.stderr
    lines = _results(output)
    assert [int(line["row"]) for line in lines] == [1, 2, 3, 5]
    assert [bool(line["code"]) for line in lines] == [True, True, False, True]
    assert lines[2]["error"].startswith("invalid_row: line 4 is neither UTF-8 nor cp1252")
    status = stack.request("GET", f"jobs/{_job_id(done)}").json()
    assert status["fallback_encoding"] == "cp1252" and status["fallback_lines"] == 2
    assert status["ended_early"] is False and status["failed"] == 1


def test_the_cli_exits_non_zero_when_a_job_ended_early(stack: RunningStack, tmp_path: Path) -> None:
    # Given a file uploaded directly whose first line is neither a header nor a URL
    source = tmp_path / "contacts.csv"
    source.write_text("Name;Phone\nAda;123\n")
    output = tmp_path / "contacts-results.csv"
    # When the CLI uploads it and waits
    done = _bulk(stack, source, output, "--direct")
    # Then the job is done but ended early: the CLI says why and exits 4, and the results say so
    assert done.returncode == 4, done.stderr
    assert "ended early (invalid_csv)" in done.stderr
    [line] = _results(output)
    assert line["row"] == "" and line["error"].startswith("ended_early: invalid_csv:")
    status = stack.request("GET", f"jobs/{_job_id(done)}").json()
    assert status["status"] == "done" and status["ended_early"] is True


@pytest.mark.parametrize("direct", [False, True], ids=["body", "direct"])
def test_a_quote_left_open_and_a_misspelt_column_lose_no_row_and_are_reported(
    stack: RunningStack, tmp_path: Path, direct: bool
) -> None:
    # Given a classic Mac file (CR line endings) of 200 URLs with a misspelt title column, the
    # 150th row opening a quote 50 lines before the end that is never closed
    urls = [f"https://example.com/open-quote/{direct}/{n}" for n in range(1, 201)]
    urls[149] = '"' + urls[149]
    source = tmp_path / "open-quote.csv"
    source.write_bytes(("url,titel\r" + "".join(f"{url},Sale\r" for url in urls)).encode())
    output = tmp_path / "open-quote-results.csv"
    # When the CLI uploads it and waits
    done = _bulk(stack, source, output, *(["--direct"] if direct else []))
    # Then every row has its outcome: 199 codes and one row error on the line with the quote, so
    # the CLI exits 0 (the file was read to its end) and says a row failed and a column was not read
    assert done.returncode == 0, done.stderr
    lines = _results(output)
    assert [int(line["row"]) for line in lines] == list(range(1, 201))
    assert [line["row"] for line in lines if line["error"]] == ["150"]
    assert lines[149]["error"].startswith("invalid_row: line 151 opens a quoted cell that is not closed")
    assert "1 row has an error; see the error column" in done.stderr
    assert "columns not read (not url, code or a link attribute): titel" in done.stderr
    # And the job's status lists the column the reader does not know
    status = stack.request("GET", f"jobs/{_job_id(done)}").json()
    assert (status["total"], status["succeeded"], status["failed"]) == (200, 199, 1)
    assert status["ignored_columns"] == ["titel"] and status["ended_early"] is False


def _job_id(done: subprocess.CompletedProcess[str]) -> str:
    for line in done.stderr.splitlines():
        if line.startswith("job "):
            return line.split()[1].rstrip(":")
    raise AssertionError(done.stderr)


def _raw(base_url: str, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> int:
    """Send a request as a browser would, to ``base_url`` (an endpoint of the stack): its status."""
    return http_request(base_url.rstrip("/") + "/", method, path.lstrip("/"), body, headers).status


def test_a_web_page_cannot_reach_the_embedded_aws_but_the_page_can_still_upload(
    stack: RunningStack, tmp_path: Path
) -> None:
    page = {"Origin": stack.api_url.rstrip("/")}
    foreign = {"Origin": "https://some-site.example"}
    bucket = stack.resources["BulkBucket"]
    forged = "X-Amz-Credential=AKIAFORGED%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=00"
    # When another site's page sends requests carrying a made-up signature query
    for method, path in (
        ("POST", f"moto-api/reset?{forged}"),
        ("GET", f"{bucket}/results/x.csv?{forged}"),
        ("DELETE", f"{bucket}/uploads/x.csv?{forged}"),
    ):
        # Then the embedded AWS refuses each, as does the Lambda endpoint a text/plain POST
        assert _raw(stack.aws_endpoint, method, path, foreign) == 403, (method, path)
    invoke = "2015-03-31/functions/shortener-local-poller/invocations"
    assert (
        _raw(stack.lambda_endpoint, "POST", invoke, {**foreign, "Content-Type": "text/plain"}, b"{}") == 403
    )
    # And the page's own presigned upload still works, preflight and all
    data = b"url\nhttps://example.com/from-the-page\n"
    started = stack.post_json("bulk/uploads", {"file_name": "page.csv", "size": len(data)})
    assert started.status == 201, started.text
    upload = started.json()["upload"]
    path = upload["url"].split(stack.aws_endpoint.rstrip("/"), 1)[1]
    preflight = {
        **page,
        "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "content-type",
    }
    assert _raw(stack.aws_endpoint, "OPTIONS", path, preflight) == 200
    assert _raw(stack.aws_endpoint, "PUT", path, {**page, **upload["headers"]}, data) == 200
    job_id = started.json()["job_id"]
    deadline = time.monotonic() + WAIT_SECONDS
    while (status := stack.request("GET", f"jobs/{job_id}").json())["status"] != "done":
        assert time.monotonic() < deadline, status
        time.sleep(0.5)
    assert status["succeeded"] == 1
    # And the data folder is the developer's alone
    assert stat.S_IMODE(stack.data_dir.stat().st_mode) == 0o700
    files = [path for path in stack.data_dir.rglob("*") if path.is_file()]
    assert files and all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in files)


@pytest.fixture(scope="module")
def limited_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """A stack with small limits: 5 bulk rows per owner and day, 30 requests per client per minute."""
    started: list[RunningStack] = []
    params = {"OwnerDailyRows": "5", "ClientRateLimit": "30", "ClientRateWindowSeconds": "60"}
    yield _factory(tmp_path_factory.mktemp("limited"), started)(params=params)
    for running in started:
        running.stop()


def test_a_member_over_its_daily_row_quota_gets_429_for_its_next_job_and_nothing_is_written(
    limited_stack: RunningStack,
) -> None:
    # Given a stack whose owners may submit 5 bulk rows a day, and a member who submitted 3
    stack = limited_stack
    _, key = create_key(stack, "quota-member")
    csv_headers = {"Content-Type": "text/csv"}
    first = stack.request("POST", "bulk", "url\n" + "https://example.com/q\n" * 3, csv_headers, api_key=key)
    assert first.status == 202, first.text
    jobs_table = stack.resources["JobsTable"]

    def job_count() -> int:
        # Jobs, not items: the first job's loops add its chunk items meanwhile.
        items = stack.boto3_client("dynamodb").scan(TableName=jobs_table)["Items"]
        return len({item["job_id"]["S"] for item in items if not item["job_id"]["S"].startswith("#")})

    before = job_count()
    # When the member sends a job of 3 rows more
    second = stack.request("POST", "bulk", "url\n" + "https://example.com/r\n" * 3, csv_headers, api_key=key)
    # Then it is a clear 429 quota_exceeded, and no job of it exists
    assert second.status == 429, second.text
    assert second.json()["error"] == "quota_exceeded" and "5 rows" in second.json()["message"]
    assert job_count() == before
    # And another member's day is their own
    _, other = create_key(stack, "quota-other")
    assert (
        stack.request("POST", "bulk", "url\nhttps://example.com/s\n", csv_headers, api_key=other).status
        == 202
    )


def test_a_client_flooding_the_api_is_rate_limited_by_address_with_keys_too(
    limited_stack: RunningStack,
) -> None:
    # Given a keys-mode stack allowing 30 requests per client address per minute
    stack = limited_stack
    # When one client keeps asking for jobs with made-up keys (each an authorizer run and a read;
    # no usage plan applies to a key that does not exist)
    statuses = []
    for number in range(40):
        answer = stack.request("GET", f"jobs/{number:032x}", api_key=f"shk_madeup{number:04d}_x")
        statuses.append(answer.status)
        if answer.status == 429:
            break
    # Then WAF answers 429 rate_limited within the limit, before any function runs
    assert statuses[-1] == 429, statuses
    assert len(statuses) <= 31
    assert answer.json()["error"] == "rate_limited"
