"""Bulk shortening end to end: a CSV over HTTP, loops started by the stack's own scaler and
restarter, progress and results over HTTP, links checked over HTTP and (on the local stack) in the
table. The find-if-exists test needs only HTTP, so it also runs against a deployed stack."""

import csv
import io
import random
import time
from typing import Any

import pytest

from tests.e2e.conftest import RunningStack, StartStack
from tests.e2e.deployment import Deployment

ROWS = 10_000
# The stack's schedules and alarm periods run this much faster, so loops start within seconds.
TIME_SCALE = 20
# Bulk e2e tests run against DynamoDB's on-demand capacity (docs/capacity.md), scaled to this machine.
CAPACITY = ("--dynamodb-capacity", "scale=4")
# How long to wait for a job: a bound of a hang on a loaded CI, not a speed target (the benchmark
# measures speed; this test prints its rows per second).
DONE_WITHIN_SECONDS = 300


def build_csv(rows: int) -> tuple[str, list[dict[str, str]]]:
    """A spreadsheet-like CSV of ``rows`` rows: an extra column, about 2% invalid URLs, about 5%
    repeated URLs, a few custom codes (one of them asked for twice by different URLs). Also the
    rows as written, for checking the results."""
    randomness = random.Random(4)
    written: list[dict[str, str]] = []
    for n in range(rows):
        if n % 50 == 7:
            url = f"not a url {n}"
        elif n % 20 == 3 and n > 100:
            url = written[randomness.randrange(0, n - 1)]["url"]
        else:
            url = f"https://shop.example.com/products/{n}?utm_source=e2e&row={n}"
        code = f"e2e-custom-{n}" if n % 1000 == 11 else ""
        written.append({"note": f"row {n}, with a comma", "url": url, "code": code})
    written[9_011]["code"] = written[8_011]["code"] = "e2e-shared"
    written[8_011]["url"] = "https://shop.example.com/first-of-shared"
    written[9_011]["url"] = "https://shop.example.com/second-of-shared"
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["note", "url", "code"])
    writer.writeheader()
    writer.writerows(written)
    return buffer.getvalue(), written


def wait_until_done(stack: RunningStack | Deployment, job_id: str, seconds: float) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        job = stack.request("GET", f"jobs/{job_id}").json()
        if job["status"] == "done" or time.monotonic() > deadline:
            return dict(job)
        time.sleep(1)


def results_of(stack: RunningStack | Deployment, job_id: str) -> list[dict[str, str]]:
    answer = stack.request("GET", f"jobs/{job_id}/results", timeout=60)
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(answer.text, newline="")))


def stored_urls(stack: RunningStack, codes: list[str]) -> dict[str, str]:
    """The URL stored under each code, read from the links table (BatchGetItem, 100 at a time)."""
    dynamodb = stack.boto3_client("dynamodb")
    table = stack.resources["LinksTable"]
    found: dict[str, str] = {}
    for start in range(0, len(codes), 100):
        request: Any = {table: {"Keys": [{"code": {"S": code}} for code in codes[start : start + 100]]}}
        while request:
            answer = dynamodb.batch_get_item(RequestItems=request)
            for item in answer["Responses"].get(table, []):
                found[item["code"]["S"]] = item["url"]["S"]
            request = answer.get("UnprocessedKeys") or None
    return found


@pytest.mark.e2e_timeout(480)
def test_a_ten_thousand_row_csv_is_shortened_row_by_row(start_stack: StartStack) -> None:
    # Given a stack without find-if-exists (the bulk cost target's setting) and a 10,000-row CSV
    stack = start_stack(*CAPACITY, time_scale=TIME_SCALE, params={"FindIfExists": "false"})
    text, written = build_csv(ROWS)
    # When it is uploaded
    started = time.monotonic()
    answer = stack.request("POST", "bulk", text, {"Content-Type": "text/csv"}, timeout=60)
    assert answer.status == 202, answer.text
    accepted = answer.json()
    assert accepted["total"] == ROWS
    # Then the job reaches done, every row counted once
    job = wait_until_done(stack, accepted["job_id"], DONE_WITHIN_SECONDS)
    elapsed = time.monotonic() - started
    assert job["status"] == "done", (job, stack.log()[-3000:])
    invalid = sum(1 for row in written if row["url"].startswith("not a url"))
    assert (job["succeeded"] + job["failed"], job["failed"]) == (ROWS, invalid + 1)
    # And the results have one line per row, in input order
    lines = results_of(stack, accepted["job_id"])
    assert [int(line["row"]) for line in lines] == list(range(1, ROWS + 1))
    for line, row in zip(lines, written, strict=True):
        if row["url"].startswith("not a url"):
            assert line["error"].startswith("invalid_url: ") and not line["code"]
        else:
            assert line["url"] == row["url"]
            if row["code"] and row["code"] != "e2e-shared":
                assert line["code"] == row["code"]
    # And a code asked for twice went to the first row; the second is a row error
    assert lines[8_011]["code"] == "e2e-shared"
    assert lines[9_011]["error"].startswith("code_taken: ")
    # And every valid row's code is stored for its URL (all of them, read from the table)
    shortened = [line for line in lines if line["code"]]
    assert len({line["code"] for line in shortened}) == len(shortened)
    assert stored_urls(stack, [line["code"] for line in shortened]) == {
        line["code"]: line["url"] for line in shortened
    }
    # And a sample of short URLs redirects over HTTP
    for line in random.Random(7).sample(shortened, 200):
        assert line["short_url"] == stack.edge_url + line["code"]
        followed = stack.request("GET", line["code"])
        assert (followed.status, followed.headers["Location"]) == (301, line["url"])
    print(f"\n{ROWS} rows done in {elapsed:.1f} s ({ROWS / elapsed:.0f} rows/s)")


@pytest.mark.e2e_timeout(360)
def test_with_find_if_exists_repeated_urls_share_one_code(deployment: Deployment) -> None:
    # Given the default stack (find-if-exists on) and a URL that already has a link
    existing = deployment.post_json("/", {"url": "https://example.com/e2e/bulk-known"}).json()["code"]
    urls = [f"https://example.com/e2e/bulk/{n % 40}" for n in range(120)] + [
        "https://example.com/e2e/bulk-known"
    ]
    text = "url\n" + "\n".join(urls) + "\n"
    # When a CSV repeating URLs is processed
    accepted = deployment.request("POST", "bulk", text, {"Content-Type": "text/csv"}).json()
    job = wait_until_done(deployment, accepted["job_id"], DONE_WITHIN_SECONDS)
    assert job["status"] == "done", job
    # Then each URL has one code, and the known URL kept its own
    lines = results_of(deployment, accepted["job_id"])
    codes: dict[str, set[str]] = {}
    for line in lines:
        codes.setdefault(line["url"], set()).add(line["code"])
    assert all(len(found) == 1 for found in codes.values())
    assert codes["https://example.com/e2e/bulk-known"] == {existing}
    assert len(codes) == 41
