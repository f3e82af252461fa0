"""Bulk shortening on the local stack: AWS requests per 1,000 bulk URLs, DynamoDB write units per
URL, and end-to-end URLs per second.

    python -m benchmarks bulk [--count-rows 1000] [--rows 100000] [--time-scale 20]
                              [--find-if-exists false]

Starts its own local stack (`python -m local_stack`, no persistence) with find-if-exists off by
default (the setting the write-unit target is stated for), waits for its first loop, then:

1. requests and write units: the embedded moto server's request recorder (moto's own
   /moto-api/recorder endpoints, with MOTO_RECORDER_FILEPATH pointing into a temporary folder)
   records every AWS request while one job of --count-rows rows is uploaded and processed. Each
   request is classified by its X-Amz-Target and table; write units are computed from the recorded
   request bodies with DynamoDB's item-size rules (1 unit per started KB of the item written, twice
   that inside a transaction; an UpdateItem's item is estimated from its key and values).
   Lambda invokes go to the local Lambda endpoint, not to moto, and are not in the count (a loop
   re-invokes itself once per invocation, every few minutes).
2. throughput: one job of --rows rows (one upload: 100,000 short URLs fit the 4 MB limit),
   timed from the upload until the job reports done.
"""

import argparse
import base64
import csv
import io
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
READY = "READY "
# Control-plane traffic that runs whether or not a job is being processed: the restarter's scans,
# the scaler's token queries, the alarm evaluator's queue depth reads, CloudWatch and SNS.
_BACKGROUND = {
    "DynamoDB_20120810.Scan",
    "DynamoDB_20120810.Query",
    "AmazonSQS.GetQueueAttributes",
    "AmazonSQS.GetQueueUrl",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--count-rows", type=int, default=1000, help="rows of the job whose requests are counted"
    )
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the timed job (0 skips it)")
    parser.add_argument("--time-scale", type=float, default=20, help="local stack --time-scale")
    parser.add_argument("--find-if-exists", choices=["true", "false"], default="false")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-bulk-") as folder:
        stack = LocalStack(Path(folder), options.time_scale, {"FindIfExists": options.find_if_exists})
        try:
            stack.wait_for_a_loop()
            counted = count_requests(stack, options.count_rows)
            rate = measure_throughput(stack, options.rows) if options.rows else None
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

    def wait_for_a_loop(self, seconds: float = 60) -> None:
        """Until the restarter has started the minimum loop (so the counted job finds it running)."""
        dynamodb = self.client("dynamodb")
        table = self.info["resources"]["TokensTable"]
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if dynamodb.scan(TableName=table, Select="COUNT")["Count"]:
                time.sleep(2)  # let its first long poll begin
                return
            time.sleep(0.5)
        raise RuntimeError("no loop started within a minute")

    def recorder(self, action: str) -> str:
        with urllib.request.urlopen(
            urllib.request.Request(f"{self.aws_endpoint}/moto-api/recorder/{action}", method="POST", data=b"")
        ) as answer:
            return str(answer.read().decode())

    def upload(self, text: str) -> dict[str, Any]:
        request = urllib.request.Request(
            self.api_url + "bulk",
            data=text.encode(),
            headers={"Content-Type": "text/csv", **self.key_header},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=120) as answer:
            return dict(json.loads(answer.read()))

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


def count_requests(stack: LocalStack, rows: int) -> dict[str, Any]:
    """Record every AWS request while one job of ``rows`` rows is uploaded and processed."""
    stack.recorder("reset-recording")
    stack.recorder("start-recording")
    started = time.monotonic()
    accepted = stack.upload(bulk_csv(rows, "counted"))
    stack.wait_until_done(accepted["job_id"], 600)
    elapsed = time.monotonic() - started
    stack.recorder("stop-recording")
    entries = [json.loads(line) for line in stack.recording.read_text().splitlines() if line.strip()]
    tables = {stack.info["resources"][name]: name for name in ("LinksTable", "JobsTable", "TokensTable")}
    by_operation: Counter[str] = Counter()
    units: Counter[str] = Counter()
    for entry in entries:
        operation = _operation(entry)
        by_operation[operation] += 1
        if operation.startswith("DynamoDB_20120810."):
            for table, write_units in _write_units(operation, _body(entry)):
                physical, _, index = table.partition(" ")
                units[" ".join(filter(None, (tables.get(physical, physical), index)))] += write_units
    # The status polls of this script are API reads of the job record, not bulk work.
    status_reads = by_operation.pop("DynamoDB_20120810.GetItem", 0)
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


def _operation(entry: dict[str, Any]) -> str:
    headers = {key.lower(): value for key, value in entry.get("headers", {}).items()}
    if "x-amz-target" in headers:
        return str(headers["x-amz-target"])
    body = _body(entry)
    # Query-protocol services (CloudWatch, SNS) name the action in the form body.
    for part in body.decode(errors="replace").split("&"):
        if part.startswith("Action="):
            return part.removeprefix("Action=")
    return f"{entry.get('method')} {entry.get('url', '').split('?')[0].rsplit('/', 1)[-1]}"


def _is_background(operation: str) -> bool:
    return operation in _BACKGROUND or not operation.startswith(("DynamoDB_20120810.", "AmazonSQS."))


def _body(entry: dict[str, Any]) -> bytes:
    body = entry.get("body") or ""
    return base64.b64decode(body) if entry.get("body_encoded") else str(body).encode()


def _write_units(operation: str, body: bytes) -> list[tuple[str, int]]:
    """(table, write units) for one DynamoDB request, from its body. A put of an item that carries
    an owner index's keys also writes that index: counted as "<table> index" (ALL projection, so
    the item's size; the index write is not doubled by a transaction)."""
    request = json.loads(body or b"{}")
    name = operation.removeprefix("DynamoDB_20120810.")
    puts = []
    if name == "PutItem":
        puts = [(request["TableName"], request["Item"])]
    elif name == "BatchWriteItem":
        puts = [
            (table, write["PutRequest"]["Item"])
            for table, writes in request["RequestItems"].items()
            for write in writes
            if "PutRequest" in write
        ]
    elif name == "TransactWriteItems":
        puts = [
            (action["Put"]["TableName"], action["Put"]["Item"])
            for action in request["TransactItems"]
            if "Put" in action
        ]
    indexed = [(f"{table} index", _units(_item_size(item))) for table, item in puts if _in_owner_index(item)]
    return _table_write_units(name, request) + indexed


def _in_owner_index(item: dict[str, Any]) -> bool:
    # ByOwner of the links table (list_pk, list_sk) or of the jobs table (owner, created_at).
    return "list_pk" in item or ("owner" in item and "created_at" in item and "job_id" in item)


def _table_write_units(name: str, request: dict[str, Any]) -> list[tuple[str, int]]:
    if name == "PutItem":
        return [(request["TableName"], _units(_item_size(request["Item"])))]
    if name == "UpdateItem":
        return [(request["TableName"], _units(_update_size(request)))]
    if name == "DeleteItem":
        return [(request["TableName"], 1)]
    if name == "BatchWriteItem":
        return [
            (table, _units(_item_size(write["PutRequest"]["Item"])) if "PutRequest" in write else 1)
            for table, writes in request["RequestItems"].items()
            for write in writes
        ]
    if name == "TransactWriteItems":
        found = []
        for action in request["TransactItems"]:
            kind, detail = next(iter(action.items()))
            size = _item_size(detail["Item"]) if kind == "Put" else _update_size(detail)
            found.append((detail["TableName"], 2 * _units(size)))
        return found
    return []


def _update_size(request: dict[str, Any]) -> int:
    # The item after the update is not in the request: its key and new values, plus a margin for
    # the attributes it already had (ids and times on a chunk, counters on a job).
    values = request.get("ExpressionAttributeValues", {})
    return _item_size(request.get("Key", {})) + sum(_value_size(value) for value in values.values()) + 120


def _units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def _item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    kind, content = next(iter(value.items()))
    if kind == "S":
        return len(str(content).encode())
    if kind == "N":
        return len(str(content)) // 2 + 2
    if kind == "B":
        return len(base64.b64decode(content))
    if kind in ("SS", "NS"):
        return sum(len(str(part)) for part in content)
    if kind == "BOOL" or kind == "NULL":
        return 1
    if kind == "L":
        return 3 + sum(1 + _value_size(part) for part in content)
    if kind == "M":
        return 3 + sum(1 + len(key) + _value_size(part) for key, part in content.items())
    return len(json.dumps(content))


def measure_throughput(stack: LocalStack, rows: int) -> dict[str, Any]:
    """Time one job of ``rows`` rows from the upload until it is done."""
    text = bulk_csv(rows, "timed")
    started = time.monotonic()
    accepted = stack.upload(text)
    uploaded = time.monotonic() - started
    job = stack.wait_until_done(accepted["job_id"], 1800)
    elapsed = time.monotonic() - started
    lines: list[dict[str, str]] = []
    page_url: str | None = f"{stack.api_url}jobs/{accepted['job_id']}/results"
    while page_url:  # large results come in pages linked with rel="next"
        with urllib.request.urlopen(
            urllib.request.Request(page_url, headers=stack.key_header), timeout=120
        ) as answer:
            lines += csv.DictReader(io.StringIO(answer.read().decode(), newline=""))
            link = answer.headers.get("Link") or ""
        page_url = link[1 : link.index(">")] if link.startswith("<") else None
    return {
        "rows": rows,
        "bytes": len(text.encode()),
        "upload_seconds": uploaded,
        "seconds": elapsed,
        "succeeded": job["succeeded"],
        "result_lines": len(lines),
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
        print(
            f"Throughput: {rate['rows']:,} rows ({rate['bytes'] / 1e6:.1f} MB, uploaded in "
            f"{rate['upload_seconds']:.1f} s) done in {rate['seconds']:.1f} s = "
            f"{rate['rows'] / rate['seconds']:,.0f} URLs/s end to end (target >= 1,000); "
            f"{rate['succeeded']:,} shortened, {rate['result_lines']:,} result lines"
        )


if __name__ == "__main__":
    main()
