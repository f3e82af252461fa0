"""Bulk of any size at no idle cost, end to end on the local stack: a file uploaded straight to S3
(a presigned PUT), split by the files function from the object's S3 event, processed by loops the
work started itself, and its results downloaded through a presigned link; with no loop running
while idle, and the loops back to none once the backlog is gone."""

import csv
import io
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from local_stack.embedded import request_log
from shortener_cli.client import ShortenerClient
from tests.e2e.conftest import PROJECT_ROOT, RunningStack, StartStack
from tests.e2e.test_bulk_e2e import CAPACITY

# The 2,000,000-row run is a benchmark (make bench ARGS="bulk --direct --rows 2000000"); this
# size keeps `make test` within its time.
ROWS = 100_000
# Schedules and alarm periods run this much faster (a minute of simulated time is a second).
IDLE_TIME_SCALE = 60
IDLE_SIMULATED_MINUTES = 10
# The schedules' work: the restarter's reconcile and scan for stale loops each run, and the hourly
# compaction of click events.
SCHEDULE_OPERATIONS = {
    "dynamodb.Scan",
    "dynamodb.Query",
    "sqs.GetQueueUrl",
    "sqs.GetQueueAttributes",
    "sqs.ReceiveMessage",  # settling the dead-letter queue (branch loops), never the bulk queue
    # The tag index backfill (docs/search.md): its marker read each run, written while it runs.
    "dynamodb.GetItem",
    "dynamodb.UpdateItem",
    # The jobs worker's hourly compaction of click events: a listing of each of four days.
    "s3.ListObjectsV2",
}
_REPORT = re.compile(r"shortener-local-files REPORT .* Max Memory Used: (\d+) MB")


def generated_csv(path: Path, rows: int) -> int:
    """A CSV of ``rows`` distinct campaign URLs written to ``path`` (never stored in the project);
    its size in bytes."""
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("url\n")
        for number in range(rows):
            out.write(f"https://shop.example.com/catalogue/{number}?utm_source=e2e\n")
    return path.stat().st_size


def status(stack: RunningStack, job_id: str) -> dict[str, Any]:
    return dict(stack.request("GET", f"jobs/{job_id}").json())


def wait_for(
    stack: RunningStack, job_id: str, wanted: str, seconds: float, key: str = "phase"
) -> dict[str, Any]:
    """Poll the job until its ``key`` is ``wanted`` (or the deadline)."""
    deadline = time.monotonic() + seconds
    while True:
        job = status(stack, job_id)
        if job[key] == wanted or time.monotonic() > deadline:
            return job
        time.sleep(1)


def splitter_peak_memory_mb(stack: RunningStack) -> int:
    """The files function's Max Memory Used, from the REPORT lines the local Lambda logs."""
    return max((int(found) for found in _REPORT.findall(stack.log())), default=0)


@pytest.mark.e2e_timeout(1200)
def test_a_100000_row_file_uploaded_directly_gives_every_row_exactly_one_outcome(
    start_stack: StartStack, tmp_path: Path
) -> None:
    # Given a stack without find-if-exists and a generated 100,000-row file
    stack = start_stack(*CAPACITY, time_scale=20, params={"FindIfExists": "false"})
    source = tmp_path / "catalogue.csv"
    size = generated_csv(source, ROWS)
    client = ShortenerClient(stack.api_url, api_key=stack.api_key)
    # When it is uploaded straight to S3 with the presigned PUT the API gives
    started = time.monotonic()
    job = client.start_upload(source.name, size)
    assert job["upload"]["url"].startswith(stack.aws_endpoint + "/")
    client.put_file(job["upload"], source, lambda _: None)
    uploaded = time.monotonic() - started
    # Then the object's S3 event starts the split, the loops the file needs start, and the job ends
    done = wait_for(stack, job["job_id"], "done", 1000)
    elapsed = time.monotonic() - started
    assert done["phase"] == "done", (done, stack.log()[-3000:])
    assert (done["total"], done["succeeded"] + done["failed"], done["error"]) == (ROWS, ROWS, None)
    # And the results come through the API as a 303 to the presigned file
    answer = stack.request("GET", f"jobs/{job['job_id']}/results")
    assert answer.status == 303
    location = answer.headers["Location"]
    assert location.startswith(stack.aws_endpoint + "/") and location == answer.json()["results_file_url"]
    with urllib.request.urlopen(location, timeout=120) as download:
        lines = list(csv.DictReader(io.TextIOWrapper(download, encoding="utf-8", newline="")))
    # And every row has exactly one outcome: a code (all distinct) or an error, in input order
    assert [int(line["row"]) for line in lines] == list(range(1, ROWS + 1))
    assert all(bool(line["code"]) != bool(line["error"]) for line in lines)
    codes = [line["code"] for line in lines if line["code"]]
    assert len(set(codes)) == len(codes) == done["succeeded"]
    assert lines[-1]["url"] == f"https://shop.example.com/catalogue/{ROWS - 1}?utm_source=e2e"
    peak = splitter_peak_memory_mb(stack)
    assert peak > 0
    print(
        f"\n{ROWS:,} rows ({size / 1e6:.1f} MB) uploaded in {uploaded:.1f} s, done in {elapsed:.1f} s "
        f"({ROWS / elapsed:,.0f} URLs/s); splitter peak memory {peak} MB; cost {done['cost']}"
    )


def loop_count(stack: RunningStack) -> int:
    table = stack.resources["TokensTable"]
    return int(
        stack.boto3_client("dynamodb").scan(TableName=table, Select="COUNT", ConsistentRead=True)["Count"]
    )


@pytest.mark.e2e_timeout(300)
def test_with_no_loop_idle_costs_only_the_schedule_and_new_work_starts_its_own_loops(
    start_stack: StartStack, tmp_path: Path
) -> None:
    # Given a stack with the default MinLoops of 0, its requests recorded
    recording = tmp_path / "recording.jsonl"
    # moto's request recorder is one of its admin paths, which the stack refuses unless asked.
    stack = start_stack(
        "--moto-api", time_scale=IDLE_TIME_SCALE, env={"MOTO_RECORDER_FILEPATH": str(recording)}
    )
    time.sleep(2)  # the schedule's first run at start
    assert loop_count(stack) == 0
    # When it stays idle for ten simulated minutes
    request_log.recorder(stack.aws_endpoint, "reset-recording")
    request_log.recorder(stack.aws_endpoint, "start-recording")
    time.sleep(IDLE_SIMULATED_MINUTES * 60 / IDLE_TIME_SCALE)
    request_log.recorder(stack.aws_endpoint, "stop-recording")
    # Then no loop ran and the only AWS requests were the restarter's schedule (the local stack's
    # own CloudWatch emulation is not a request of the system)
    requests = [request for request in request_log.read_recording(recording) if request.by_function]
    operations = {request.name for request in requests}
    assert operations <= SCHEDULE_OPERATIONS, operations
    bulk_queue = stack.resources["BulkQueue"].rsplit("/", 1)[-1].encode()
    assert not any(
        request.operation == "ReceiveMessage" and bulk_queue in request.body for request in requests
    )
    # and the webhooks queue's event source mapping polled only its own queue (on AWS its long
    # polls are billed SQS requests: docs/webhooks.md says what they cost a month)
    polls = [request for request in request_log.read_recording(recording) if request.by_event_source]
    webhooks_queue = stack.resources["WebhooksQueue"].rsplit("/", 1)[-1].encode()
    assert polls and all(
        request.name == "sqs.ReceiveMessage" and webhooks_queue in request.body for request in polls
    ), {request.name for request in polls}
    assert loop_count(stack) == 0
    per_hour = len(requests) * 60 // IDLE_SIMULATED_MINUTES
    print(
        f"\nidle for {IDLE_SIMULATED_MINUTES} simulated minutes: {len(requests)} AWS requests "
        f"(= {per_hour} per idle hour), all the schedules': {sorted(operations)}"
    )
    # When a 1,000-row job arrives
    text = "url\n" + "".join(f"https://example.com/idle/{n}\n" for n in range(1000))
    started = time.monotonic()
    accepted = stack.request("POST", "bulk", text, {"Content-Type": "text/csv"}).json()
    first_row = None
    deadline = started + 120
    while time.monotonic() < deadline:
        job = status(stack, accepted["job_id"])
        if job["processed"] and first_row is None:
            first_row = time.monotonic() - started
        if job["status"] == "done":
            break
        time.sleep(0.2)
    # Then its first row was done within seconds, by a loop the job started, and the job finished
    assert first_row is not None and job["status"] == "done", job
    assert first_row < 60  # a generous bound on a loaded machine; the figure is printed
    # And once the backlog is gone the loops go back to none
    deadline = time.monotonic() + 60
    while loop_count(stack) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert loop_count(stack) == 0
    print(f"first row of a 1,000-row job done {first_row:.1f} s after upload, with no loop running before")


@pytest.mark.e2e_timeout(240)
def test_the_cli_uploads_directly_and_fetches_the_results_later(
    start_stack: StartStack, tmp_path: Path
) -> None:
    # Given a stack and a file, uploaded straight to storage without waiting (as if interrupted)
    stack = start_stack(*CAPACITY, time_scale=20)
    source = tmp_path / "links.csv"
    source.write_text(
        "Long URL;Short code\n" + "".join(f"https://example.com/cli/{n};\n" for n in range(600))
    )
    cli = [
        sys.executable,
        "-m",
        "shortener_cli.main",
        "--api-url",
        stack.api_url,
        "--api-key",
        str(stack.api_key),
    ]
    uploaded = subprocess.run(
        [*cli, "bulk", str(source), "--direct"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    job_id = uploaded.stdout.strip()
    assert "MB uploaded" in uploaded.stderr
    # When its results are asked for later
    output = tmp_path / "results.csv"
    fetched = subprocess.run(
        [*cli, "results", job_id, "--output", str(output)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    # Then the whole results CSV is written
    assert fetched.returncode == 0, fetched.stderr
    lines = list(csv.DictReader(output.open(encoding="utf-8", newline="")))
    assert [int(line["row"]) for line in lines] == list(range(1, 601))
    assert all(line["code"] for line in lines)
