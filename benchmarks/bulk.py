"""Bulk shortening on the local stack: AWS requests per 1,000 bulk URLs, DynamoDB write units per
URL, and end-to-end URLs per second.

    python -m benchmarks bulk [--count-rows 1000] [--rows 100000] [--time-scale 20]
                              [--find-if-exists false] [--direct]

    make bench ARGS="bulk --direct --rows 2000000"     # a 2,000,000-row file straight to S3

Starts its own local stack (`python -m local_stack`, no persistence) with find-if-exists off by
default (the setting the write-unit target is stated for) and no loop running (MinLoops 0: each
job starts the loops it needs), then:

1. requests and write units: the embedded moto server's request recorder (moto's own
   /moto-api/recorder endpoints, with MOTO_RECORDER_FILEPATH pointing into a temporary folder)
   records every AWS request while one job of --count-rows rows is uploaded and processed. Each
   request is classified by its X-Amz-Target and table; write units are computed from the recorded
   request bodies with DynamoDB's item-size rules (1 unit per started KB of the item written, twice
   that inside a transaction; an UpdateItem's item is estimated from its key and values).
   Lambda invokes go to the local Lambda endpoint, not to moto, and are not in the count (a loop
   re-invokes itself once per invocation, every few minutes).
2. throughput: one job of --rows rows (one upload: 100,000 short URLs fit the 4 MB limit),
   timed from the upload until the job reports done, and its results read back whole.

With --direct both jobs are files uploaded straight to S3 (POST /bulk/uploads, a presigned PUT),
split by the files function as the object's S3 event arrives; the timed job's results are
downloaded through the presigned link, and the splitter's peak memory (Lambda's "Max Memory Used"
from the REPORT lines the local stack logs) and the job's own cost line are printed too.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from local_stack import request_log
from shortener.dal.usage import write_units
from shortener_cli.client import ShortenerClient

ROOT = Path(__file__).resolve().parent.parent
READY = "READY "
# Control-plane traffic that runs whether or not a job is being processed: the restarter's scans,
# the scaler's token queries, queue depth reads; and whatever the local stack itself asks (its
# CloudWatch alarm evaluation), which is not a request of the system.
_BACKGROUND = {"dynamodb.Scan", "dynamodb.Query", "sqs.GetQueueAttributes", "sqs.GetQueueUrl"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--count-rows", type=int, default=1000, help="rows of the job whose requests are counted"
    )
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the timed job (0 skips it)")
    parser.add_argument("--time-scale", type=float, default=20, help="local stack --time-scale")
    parser.add_argument("--find-if-exists", choices=["true", "false"], default="false")
    parser.add_argument(
        "--direct", action="store_true", help="upload files straight to S3 (POST /bulk/uploads)"
    )
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-bulk-") as folder:
        stack = LocalStack(Path(folder), options.time_scale, {"FindIfExists": options.find_if_exists})
        try:
            counted = count_requests(stack, options.count_rows, direct=options.direct)
            rate = measure_throughput(stack, options.rows, direct=options.direct) if options.rows else None
        finally:
            stack.stop()
    print_figures(options, counted, rate)


class LocalStack:
    """`python -m local_stack` as a subprocess on free ports, with moto's recorder writing to a file."""

    def __init__(self, folder: Path, time_scale: float, params: dict[str, str]) -> None:
        self.recording = folder / "recording.jsonl"
        self.log_path = folder / "stack.log"
        arguments = ["--api-port", "0", "--aws-port", "0", "--lambda-port", "0", "--no-persist"]
        arguments += ["--moto-api"]  # the request recorder is one of moto's admin paths, off by default
        arguments += ["--data-dir", str(folder / "data"), "--time-scale", str(time_scale)]
        for key, value in params.items():
            arguments += ["--param", f"{key}={value}"]
        environment = {**os.environ, "PYTHONUNBUFFERED": "1", "MOTO_RECORDER_FILEPATH": str(self.recording)}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "local_stack", *arguments],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=environment,
            )
        self.info = self._wait_until_ready(60)
        self.api_url = str(self.info["api_url"])
        self.aws_endpoint = str(self.info["aws_endpoint"])
        # The stack's admin API key: POST /bulk and GET /jobs/... need one.
        self.key_header = {"X-Api-Key": str(self.info["api_key"])} if self.info.get("api_key") else {}

    def _wait_until_ready(self, seconds: float) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for line in self.log_path.read_text(errors="replace").splitlines():
                if line.startswith(READY):
                    return dict(json.loads(line.removeprefix(READY)))
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(
            "the local stack did not start:\n" + self.log_path.read_text(errors="replace")[-3000:]
        )

    def client(self, service: str) -> Any:
        import boto3

        session = boto3.session.Session(
            aws_access_key_id="local", aws_secret_access_key="local", region_name="us-east-1"
        )
        return session.client(service, endpoint_url=self.aws_endpoint)  # type: ignore[call-overload]

    def recorder(self, action: str) -> None:
        request_log.recorder(self.aws_endpoint, action)

    def upload(self, text: str, *, direct: bool = False) -> dict[str, Any]:
        """A job for ``text``: in the request body, or (``direct``) as a file straight to S3."""
        if direct:
            path = Path(self.log_path.parent / "upload.csv")
            path.write_text(text, encoding="utf-8")
            return self.upload_file(path)
        request = urllib.request.Request(
            self.api_url + "bulk",
            data=text.encode(),
            headers={"Content-Type": "text/csv", **self.key_header},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=120) as answer:
            return dict(json.loads(answer.read()))

    def upload_file(self, path: Path) -> dict[str, Any]:
        """POST /bulk/uploads, then the file with its presigned PUT."""
        client = ShortenerClient(self.api_url, timeout=600, api_key=self.info.get("api_key"))
        job = client.start_upload(path.name, path.stat().st_size)
        client.put_file(job["upload"], path, lambda _: None)
        return job

    def peak_memory_mb(self, function: str) -> int:
        """A function's Max Memory Used, from the REPORT lines of the local Lambda."""
        pattern = re.compile(rf"{re.escape(function)} REPORT .* Max Memory Used: (\d+) MB")
        return max(
            (int(found) for found in pattern.findall(self.log_path.read_text(errors="replace"))), default=0
        )

    def wait_until_done(self, job_id: str, seconds: float) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            status = urllib.request.Request(f"{self.api_url}jobs/{job_id}", headers=self.key_header)
            with urllib.request.urlopen(status, timeout=30) as answer:
                job = dict(json.loads(answer.read()))
            if job["status"] == "done":
                return job
            time.sleep(0.25)
        raise RuntimeError(f"job {job_id} was not done after {seconds} s: {job}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def bulk_csv(rows: int, prefix: str) -> str:
    """Typical campaign URLs, one per row."""
    return "url\n" + "".join(f"https://shop.example.com/{prefix}/{n}\n" for n in range(rows))


def count_requests(stack: LocalStack, rows: int, *, direct: bool = False) -> dict[str, Any]:
    """Record every AWS request while one job of ``rows`` rows is uploaded and processed."""
    stack.recorder("reset-recording")
    stack.recorder("start-recording")
    started = time.monotonic()
    accepted = stack.upload(bulk_csv(rows, "counted"), direct=direct)
    stack.wait_until_done(accepted["job_id"], 600)
    elapsed = time.monotonic() - started
    stack.recorder("stop-recording")
    tables = {stack.info["resources"][name]: name for name in ("LinksTable", "JobsTable", "TokensTable")}
    by_operation: Counter[str] = Counter()
    units: Counter[str] = Counter()
    for request in request_log.read_recording(stack.recording):
        if not request.by_function:
            by_operation["(local stack: alarm evaluation)"] += 1
            continue
        by_operation[request.name] += 1
        if request.service == "dynamodb":
            for table, table_units in _write_units(request.operation, request.body):
                units[tables.get(table, table)] += table_units
    # The status polls of this script are API reads of the job record, not bulk work.
    status_reads = by_operation.pop("dynamodb.GetItem", 0)
    background = sum(count for operation, count in by_operation.items() if _is_background(operation))
    return {
        "rows": rows,
        "seconds": elapsed,
        "total": sum(by_operation.values()),
        "bulk": sum(count for operation, count in by_operation.items() if not _is_background(operation)),
        "background": background,
        "status_reads": status_reads,
        "by_operation": by_operation,
        "units": units,
    }


def _is_background(operation: str) -> bool:
    return operation in _BACKGROUND or operation.startswith("(")


def _write_units(name: str, body: bytes) -> list[tuple[str, int]]:
    """(table, write units) for one recorded DynamoDB request (the layer's own item-size rules)."""
    request = json.loads(body or b"{}")
    if name == "BatchWriteItem":
        return [
            (table, write_units(name, {"RequestItems": {table: writes}}))
            for table, writes in request["RequestItems"].items()
        ]
    if name == "TransactWriteItems":
        return [
            (next(iter(action.values()))["TableName"], write_units(name, {"TransactItems": [action]}))
            for action in request["TransactItems"]
        ]
    table = request.get("TableName")
    return [(table, write_units(name, request))] if table else []


def measure_throughput(stack: LocalStack, rows: int, *, direct: bool = False) -> dict[str, Any]:
    """Time one job of ``rows`` rows from the upload until it is done, then read its results."""
    text = bulk_csv(rows, "timed")
    started = time.monotonic()
    accepted = stack.upload(text, direct=direct)
    uploaded = time.monotonic() - started
    job = stack.wait_until_done(accepted["job_id"], 7200)
    elapsed = time.monotonic() - started
    # Every line of the results (pages, or the file the API redirects to), counted as it streams.
    results_path = stack.log_path.parent / "results.csv"
    with results_path.open("wb") as out:
        ShortenerClient(stack.api_url, timeout=600, api_key=stack.info.get("api_key")).save_results(
            accepted["job_id"], out, deadline=time.monotonic() + 600
        )
    with results_path.open("rb") as written:
        result_lines = sum(1 for _ in written) - 1
    return {
        "rows": rows,
        "bytes": len(text.encode()),
        "upload_seconds": uploaded,
        "seconds": elapsed,
        "succeeded": job["succeeded"],
        "result_lines": result_lines,
        "direct": direct,
        "splitter_peak_mb": stack.peak_memory_mb("shortener-local-files") if direct else None,
        "cost": job.get("cost"),
    }


def print_figures(options: argparse.Namespace, counted: dict[str, Any], rate: dict[str, Any] | None) -> None:
    rows = counted["rows"]
    per_thousand = counted["bulk"] * 1000 / rows
    links_units = counted["units"].get("LinksTable", 0)
    jobs_units = counted["units"].get("JobsTable", 0)
    token_units = counted["units"].get("TokensTable", 0)
    index_units = counted["units"].get("LinksTable index", 0) + counted["units"].get("JobsTable index", 0)
    print(f"Bulk on the local stack (find-if-exists {options.find_if_exists}, {os.cpu_count()} CPUs)")
    print()
    print(f"AWS requests for a {rows:,}-row job ({counted['seconds']:.1f} s, recorded at the moto server):")
    print(
        f"  bulk path (API + loops):            {counted['bulk']:>6,}   "
        f"= {per_thousand:.1f} per 1,000 URLs (target <= 100)"
    )
    print(f"  control plane (scans, alarms, ...): {counted['background']:>6,}   (runs with or without jobs)")
    print(f"  job status polls by this script:    {counted['status_reads']:>6,}   (not counted)")
    for operation, count in counted["by_operation"].most_common():
        print(f"    {operation:<40} {count:>6,}")
    print()
    print("DynamoDB write units (computed from the recorded request bodies):")
    print(f"  links table  {links_units:>7,}   {links_units / rows:.3f} per URL")
    print(f"  jobs table   {jobs_units:>7,}   {jobs_units / rows:.3f} per URL")
    print(f"  per URL, links + jobs: {(links_units + jobs_units) / rows:.3f} (target <= 1.2)")
    print(f"  owner indexes {index_units:>6,}   {index_units / rows:.3f} per URL (each owned link is listed)")
    print(f"  per URL, tables and indexes: {(links_units + jobs_units + index_units) / rows:.3f}")
    print(f"  loop heartbeats (tokens table): {token_units:,}")
    if rate:
        print()
        how = "straight to S3" if rate["direct"] else "in the request"
        print(
            f"Throughput: {rate['rows']:,} rows ({rate['bytes'] / 1e6:.1f} MB, uploaded {how} in "
            f"{rate['upload_seconds']:.1f} s) done in {rate['seconds']:.1f} s = "
            f"{rate['rows'] / rate['seconds']:,.0f} URLs/s end to end (target >= 1,000); "
            f"{rate['succeeded']:,} shortened, {rate['result_lines']:,} result lines"
        )
        if rate["splitter_peak_mb"] is not None:
            print(f"  splitter (files function) peak memory: {rate['splitter_peak_mb']} MB")
        if rate["cost"]:
            cost = rate["cost"]
            per_thousand = 1000 / rate["rows"]
            requests = sum(cost["requests"].values())
            print(
                f"  the job's own cost line: {requests:,} requests "
                f"({requests * per_thousand:.1f} per 1,000 URLs), "
                f"{cost['write_units']:,.0f} write units ({cost['write_units'] / rate['rows']:.3f} per URL), "
                f"${cost['usd']:.4f} ({cost['prices']})"
            )


if __name__ == "__main__":
    main()
