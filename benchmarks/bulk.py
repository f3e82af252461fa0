"""Bulk shortening on the local stack: AWS requests per 1,000 bulk URLs, DynamoDB write units per
URL, and end-to-end URLs per second.

    python -m benchmarks bulk [--count-rows 1000] [--rows 100000] [--time-scale 20]
                              [--find-if-exists false] [--direct] [--param MaxLoops=4 ...]

    make bench ARGS="bulk --direct --rows 2000000"     # a 2,000,000-row file straight to S3

Starts its own local stack (`python -m local_stack`, no persistence) with find-if-exists off by
default (the setting the write-unit target is stated for) and no loop running (MinLoops 0: each
job starts the loops it needs), then:

1. requests and write units: the embedded moto server's request recorder (moto's own
   /moto-api/recorder endpoints, with MOTO_RECORDER_FILEPATH pointing into a temporary folder)
   records every AWS request while one job of --count-rows rows is uploaded and processed. Each
   request is classified by its X-Amz-Target and table; write units are computed from the recorded
   request bodies with DynamoDB's item-size rules (1 unit per started KB of the item written, twice
   that inside a transaction; an UpdateItem's item is estimated from its key and values), and the
   ByOwner indexes' write units by DynamoDB's rules for global secondary indexes (ByOwnerIndexes).
   Lambda invokes go to the local Lambda endpoint, not to moto, and are not in the count (a loop
   re-invokes itself once per invocation, every few minutes).
2. throughput: one job of --rows rows (one upload: 100,000 short URLs fit the 4 MB limit),
   timed from the upload until the job reports done, and its results read back whole.

With --direct both jobs are files uploaded straight to S3 (POST /bulk/uploads, a presigned PUT),
split by the files function as the object's S3 event arrives; the timed job's results are
downloaded through the presigned link, and the splitter's peak memory (Lambda's "Max Memory Used"
from the REPORT lines the local stack logs) and the job's own cost line are printed too. Every
run checks that each input row has exactly one outcome in the results, and prints the CPU time of
the whole local stack per row and its peak memory (:class:`MemorySampler`: the stack's process and
every function worker, sampled while the job runs and its results are read), with how much the
stack's own process grew per row; a long job prints its progress every minute.

A 2,000,000-row run takes about 33 minutes on 2 idle cores: the emulated table's capacity
(`scale=4`, 1,000 writes a second) is its ceiling; `--dynamodb-capacity off` lifts it. The whole
local stack peaks at about 2.7 GB (Pss; docs/capacity.md says where it goes). With other work
beside it on the same cores, expect it to take longer.
"""

import argparse
import csv
import json
import os
import re
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from local_stack.embedded import request_log
from local_stack.harness import StackProcess
from shortener.aws_usage import item_size, update_size, write_units
from shortener_cli.client import ShortenerClient

ROOT = Path(__file__).resolve().parent.parent
READY = "READY "
# Control-plane traffic that runs whether or not a job is being processed: the restarter's scans,
# the scaler's token queries, queue depth reads; and whatever the local stack itself asks (its
# CloudWatch alarm evaluation), which is not a request of the system.
# The local DynamoDB's capacity in the bulk benchmarks: a new on-demand table's, divided by 4.
BULK_CAPACITY = "scale=4"
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
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a template parameter for the local stack (repeatable), e.g. MaxLoops=4",
    )
    parser.add_argument(
        "--dynamodb-capacity",
        default=BULK_CAPACITY,
        help=f"the local DynamoDB's capacity (docs/capacity.md; default {BULK_CAPACITY}, off: none)",
    )
    options = parser.parse_args()
    params = {"FindIfExists": options.find_if_exists}
    # Both jobs are one owner's (the admin key's) in one UTC day: past OwnerDailyRows (2,000,000 by
    # default) the last rows of the timed job would be refused quota_exceeded and the job end early.
    params["OwnerDailyRows"] = str(max(2_000_000, options.count_rows + options.rows))
    params.update(param.split("=", 1) for param in options.param)

    with tempfile.TemporaryDirectory(prefix="bench-bulk-") as folder:
        stack = LocalStack(Path(folder), options.time_scale, params, capacity=options.dynamodb_capacity)
        try:
            counted = count_requests(stack, options.count_rows, direct=options.direct)
            rate = measure_throughput(stack, options.rows, direct=options.direct) if options.rows else None
        finally:
            stack.stop()
    print_figures(options, counted, rate)


class LocalStack:
    """`python -m local_stack` as a subprocess on free ports, with moto's recorder writing to a file."""

    def __init__(
        self,
        folder: Path,
        time_scale: float,
        params: dict[str, str],
        *,
        capacity: str = BULK_CAPACITY,
        log_level: str = "INFO",
    ) -> None:
        self.recording = folder / "recording.jsonl"
        self.log_path = folder / "stack.log"
        arguments = ["--api-port", "0", "--aws-port", "0", "--lambda-port", "0", "--no-persist"]
        # DynamoDB's on-demand capacity, scaled down so that this machine reaches it (docs/capacity.md).
        arguments += ["--dynamodb-capacity", capacity]
        arguments += ["--moto-api"]  # the request recorder is one of moto's admin paths, off by default
        arguments += ["--data-dir", str(folder / "data"), "--time-scale", str(time_scale)]
        arguments += ["--log-level", log_level]
        for key, value in params.items():
            arguments += ["--param", f"{key}={value}"]
        self.stack = StackProcess(
            arguments, self.log_path, env={"MOTO_RECORDER_FILEPATH": str(self.recording)}
        )
        self.info = self.stack.launch(60)
        assert self.stack.process is not None
        self.process = self.stack.process
        self.api_url = str(self.info["api_url"])
        self.aws_endpoint = str(self.info["aws_endpoint"])
        # The stack's admin API key: POST /bulk and GET /jobs/... need one.
        self.key_header = {"X-Api-Key": str(self.info["api_key"])} if self.info.get("api_key") else {}
        self._clients: dict[str, Any] = {}

    def client(self, service: str) -> Any:
        """One client per service (kept: making one takes tens of ms of CPU, which a benchmark
        polling ten times a second would take from what it measures)."""
        if service not in self._clients:
            self._clients[service] = self._new_client(service)
        return self._clients[service]

    def _new_client(self, service: str) -> Any:
        import boto3

        session = boto3.session.Session(
            aws_access_key_id="local", aws_secret_access_key="local", region_name="us-east-1"
        )
        # Lambda's API is the stack's Lambda endpoint; every other service its embedded AWS.
        endpoint = str(self.info["lambda_endpoint"]) if service == "lambda" else self.aws_endpoint
        return session.client(service, endpoint_url=endpoint)  # type: ignore[call-overload]

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

    def job(self, job_id: str, tries: int = 5) -> dict[str, Any]:
        """GET /jobs/{id}. A status read the overloaded machine answers with a 5xx or not at all
        is read again a few times (and said), so one slow answer does not end an hours-long run."""
        status = urllib.request.Request(f"{self.api_url}jobs/{job_id}", headers=self.key_header)
        for attempt in range(1, tries + 1):
            try:
                with urllib.request.urlopen(status, timeout=60) as answer:
                    return dict(json.loads(answer.read()))
            except (urllib.error.URLError, TimeoutError) as exc:
                if attempt == tries or (isinstance(exc, urllib.error.HTTPError) and exc.code < 500):
                    raise
                print(f"  [{time.strftime('%H:%M:%S')}] job status failed ({exc}); reading it again")
                time.sleep(5)
        raise AssertionError("unreachable")

    def wait_until_done(
        self, job_id: str, seconds: float, *, until_file: bool = False, progress_every: float = 0
    ) -> dict[str, Any]:
        """The job once done (and, ``until_file``, once its results file is written); with
        ``progress_every``, a line of rows done and the rate so far that often (a run cut short
        still says how far it got)."""
        started = time.monotonic()
        deadline, reported = started + seconds, started
        while time.monotonic() < deadline:
            job = self.job(job_id)
            if job["status"] == "done" and (not until_file or job.get("results_file_url")):
                return job
            now = time.monotonic()
            if progress_every and now - reported >= progress_every:
                reported = now
                done = job["succeeded"] + job["failed"]
                print(
                    f"  [{time.strftime('%H:%M:%S')}] {now - started:7.0f} s: {done:,} of {job['total']:,} "
                    f"rows done ({job.get('phase')}), {done / (now - started):,.0f} rows/s so far",
                    flush=True,
                )
            time.sleep(0.25 if not progress_every else 2)
        raise RuntimeError(f"job {job_id} was not done after {seconds} s: {job}")

    def cpu_seconds(self) -> float:
        """User and system CPU time of the stack's process and all its descendants so far
        (/proc/<pid>/stat utime, stime, cutime, cstime; Linux only, 0 elsewhere)."""
        return sum(_proc_stat(pid, cpu=True) for pid in _process_tree(self.process.pid))

    def peak_rss_mb(self) -> int:
        """Peak resident memory (VmHWM) of the stack's process and its live descendants, summed."""
        return int(sum(_proc_stat(pid, cpu=False) for pid in _process_tree(self.process.pid))) // 1024

    def stop(self) -> None:
        self.stack.stop()


class MemorySampler:
    """The whole local stack's memory, sampled every ``every`` seconds in a thread while a job
    runs: its process (the embedded AWS, the API, the local Lambda) and every function worker it
    started, summed. A worker that ends between samples is not lost, as it would be in a sum of
    peaks read at the end; shared pages (the Python runtime every worker maps) are counted once,
    split between the processes that share them (Pss, /proc/<pid>/smaps_rollup; Linux only)."""

    def __init__(self, root: int, every: float = 2.0) -> None:
        self.root, self.every = root, every
        self.peak_kib, self.peak_processes, self.peak_root_kib = 0, 0, 0
        self.start_root_kib = _pss_kib(root)  # before the job: what the stack holds anyway
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)

    def __enter__(self) -> "MemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def _sample(self) -> None:
        sizes = {pid: _pss_kib(pid) for pid in _process_tree(self.root)}
        total = sum(sizes.values())
        if total > self.peak_kib:
            self.peak_kib, self.peak_processes = total, sum(1 for size in sizes.values() if size)
            self.peak_root_kib = sizes.get(self.root, 0)

    def figures(self) -> dict[str, int]:
        """Peak of the sum (MB), the processes and the stack process's share at that moment, and
        the stack process's own peak resident memory (VmHWM, MB)."""
        return {
            "peak_mb": self.peak_kib // 1024,
            "processes": self.peak_processes,
            "root_mb": self.peak_root_kib // 1024,
            "root_hwm_mb": int(_proc_stat(self.root, cpu=False)) // 1024,
            "root_start_mb": self.start_root_kib // 1024,
        }


def _pss_kib(pid: int) -> int:
    """Proportional resident memory of one process in KiB; 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _process_tree(root: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending += parents.get(pid, [])
    return tree


def _proc_stat(pid: int, *, cpu: bool) -> int | float:
    """CPU seconds (cpu) or peak RSS in KiB of one process; 0 if it is gone."""
    try:
        if cpu:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


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
    resources = stack.info["resources"]
    indexes = ByOwnerIndexes(
        {resources["LinksTable"]: ("list_pk", "list_sk"), resources["JobsTable"]: ("owner", "created_at")}
    )
    for request in request_log.read_recording(stack.recording):
        if not request.by_function:
            by_operation["(local stack: alarm evaluation)"] += 1
            continue
        by_operation[request.name] += 1
        if request.service == "dynamodb":
            for table, table_units in _write_units(request.operation, request.body):
                units[tables.get(table, table)] += table_units
            for table, index_units in indexes.write_units(request.operation, request.body):
                units[tables.get(table, table) + " index"] += index_units
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
    """(table, write units) for one recorded DynamoDB request (the layer's own item-size rules;
    the index writes are counted apart, by ``ByOwnerIndexes``)."""
    request = json.loads(body or b"{}")
    if name == "BatchWriteItem":
        return [
            (table, write_units(name, {"RequestItems": {table: writes}}, indexes=False))
            for table, writes in request["RequestItems"].items()
        ]
    if name == "TransactWriteItems":
        return [
            (
                next(iter(action.values()))["TableName"],
                write_units(name, {"TransactItems": [action]}, indexes=False),
            )
            for action in request["TransactItems"]
        ]
    table = request.get("TableName")
    return [(table, write_units(name, request, indexes=False))] if table else []


class ByOwnerIndexes:
    """Write units of the tables' ByOwner indexes (template.yaml: projection ALL on both tables),
    by DynamoDB's rules for global secondary indexes ("Provisioned throughput considerations for
    global secondary indexes", Amazon DynamoDB Developer Guide, GSI.html#GSI.ThroughputConsiderations.Writes):
    a table write costs its own units plus those of every index it updates; an item enters an index
    only if it carries both of the index's key attributes; writing such an item is one index write,
    by the size of the index entry (with ALL projected, the item); an update of an item in the index
    that changes only projected attributes is one write, one that changes an index key two (the old
    entry deleted, the new one put); deleting an indexed item is one write. An UpdateItem's request
    does not say whether its item is in the index, so the keys of the indexed items written during
    the recording are remembered (every job item and owned link of the counted job is written first
    by a put)."""

    def __init__(self, index_keys: dict[str, tuple[str, str]]) -> None:
        # table name -> its ByOwner index's key attributes (hash, range)
        self._keys = index_keys
        self._indexed: set[str] = set()

    def write_units(self, name: str, body: bytes) -> list[tuple[str, int]]:
        """(table, index write units) for one recorded DynamoDB request."""
        request = json.loads(body or b"{}")
        found: list[tuple[str, int]] = []
        if name == "PutItem":
            found += self._put(request["TableName"], request["Item"])
        elif name == "BatchWriteItem":
            for table, writes in request["RequestItems"].items():
                for write in writes:
                    if "PutRequest" in write:
                        found += self._put(table, write["PutRequest"]["Item"])
                    else:
                        found += self._delete(table, write["DeleteRequest"]["Key"])
        elif name == "TransactWriteItems":
            for action in request["TransactItems"]:
                kind, detail = next(iter(action.items()))
                # Inside a transaction every write, the index's too, costs twice.
                if kind == "Put":
                    found += [
                        (table, 2 * units) for table, units in self._put(detail["TableName"], detail["Item"])
                    ]
                elif kind == "Update":
                    found += [(table, 2 * units) for table, units in self._update(detail)]
        elif name == "UpdateItem":
            found += self._update(request)
        elif name == "DeleteItem":
            found += self._delete(request["TableName"], request["Key"])
        return found

    def _put(self, table: str, item: dict[str, Any]) -> list[tuple[str, int]]:
        keys = self._keys.get(table)
        if keys is None or not all(key in item for key in keys):
            return []
        self._indexed.add(_item_key(table, item))
        return [(table, max(1, -(-item_size(item) // 1024)))]

    def _update(self, request: dict[str, Any]) -> list[tuple[str, int]]:
        table = request["TableName"]
        keys = self._keys.get(table)
        if keys is None or _item_key(table, request["Key"]) not in self._indexed:
            return []
        names = request.get("ExpressionAttributeNames", {})
        written = {
            names.get(token, token) for token in re.findall(r"#?\w+", request.get("UpdateExpression", ""))
        }
        changes_key = any(key in written for key in keys)
        return [(table, (2 if changes_key else 1) * max(1, -(-update_size(request) // 1024)))]

    def _delete(self, table: str, key: dict[str, Any]) -> list[tuple[str, int]]:
        if _item_key(table, key) in self._indexed:
            self._indexed.discard(_item_key(table, key))
            return [(table, 1)]
        return []


def _item_key(table: str, item: dict[str, Any]) -> str:
    """The primary key of an item of either table (links: code; jobs: job_id and sk)."""
    parts = [table] + [
        json.dumps(item[name], sort_keys=True) for name in ("code", "job_id", "sk") if name in item
    ]
    return "|".join(parts)


def measure_throughput(stack: LocalStack, rows: int, *, direct: bool = False) -> dict[str, Any]:
    """Time one job of ``rows`` rows from the upload until it is done, then read its results."""
    text = bulk_csv(rows, "timed")
    size = len(text.encode())
    cpu_before = stack.cpu_seconds()
    started = time.monotonic()
    with MemorySampler(stack.process.pid) as memory:  # until its results are read back too
        accepted = stack.upload(text, direct=direct)
        del text  # a 2,000,000-row file is 90 MB of text: not kept while the job runs
        uploaded = time.monotonic() - started
        job = stack.wait_until_done(accepted["job_id"], 6 * 3600, progress_every=60)
        elapsed = time.monotonic() - started
        cpu = stack.cpu_seconds() - cpu_before
        results_path = stack.log_path.parent / "results.csv"
        if direct:
            # The results file through the presigned link the job status gives (no API key): the
            # path a person's browser takes.
            job = stack.wait_until_done(accepted["job_id"], 1800, until_file=True)
            with (
                urllib.request.urlopen(job["results_file_url"], timeout=600) as answer,
                results_path.open("wb") as out,
            ):
                while block := answer.read(1 << 20):
                    out.write(block)
            fetched = "through the presigned link"
        else:
            with results_path.open("wb") as out:
                ShortenerClient(stack.api_url, timeout=600, api_key=stack.info.get("api_key")).save_results(
                    accepted["job_id"], out, deadline=time.monotonic() + 600
                )
            fetched = "through the API"
    return {
        "rows": rows,
        "bytes": size,
        "upload_seconds": uploaded,
        "seconds": elapsed,
        "succeeded": job["succeeded"],
        "failed": job["failed"],
        "outcomes": check_outcomes(results_path, rows),
        "fetched": fetched,
        "direct": direct,
        "splitter_peak_mb": stack.peak_memory_mb("shortener-local-files") if direct else None,
        "stack_peak_rss_mb": stack.peak_rss_mb(),
        "memory": memory.figures(),
        "cpu_seconds": cpu,
        "cost": job.get("cost"),
    }


def check_outcomes(path: Path, rows: int) -> dict[str, Any]:
    """Every input row has exactly one outcome in the results CSV at ``path``: a code or an error,
    never both nor neither, each row number 1..rows once (a bitmap, not a set of 2,000,000 ints).
    A job that ended early says so on a last line of its own (no row, ``ended_early: ...``): that
    line is its reason, not an outcome; ``ended_early`` then holds it."""
    seen = bytearray(rows + 1)
    counts = {"lines": 0, "codes": 0, "errors": 0, "duplicates": 0, "malformed": 0}
    ended_early = ""
    with path.open(newline="", encoding="utf-8") as results:
        for line in csv.DictReader(results):
            if not line["row"] and line["error"].startswith("ended_early:"):
                ended_early = line["error"]
                continue
            counts["lines"] += 1
            row = int(line["row"]) if line["row"].isdigit() else 0
            has_code, has_error = bool(line["code"]), bool(line["error"])
            if not 1 <= row <= rows or has_code == has_error:
                counts["malformed"] += 1
                continue
            if seen[row]:
                counts["duplicates"] += 1
            seen[row] = 1
            counts["codes" if has_code else "errors"] += 1
    counts["missing"] = rows - sum(seen)
    counts["ok"] = int(
        counts["lines"] == rows
        and not counts["duplicates"] + counts["malformed"] + counts["missing"]
        and not ended_early
    )
    return {**counts, "ended_early": ended_early}


def print_figures(options: argparse.Namespace, counted: dict[str, Any], rate: dict[str, Any] | None) -> None:
    rows = counted["rows"]
    per_thousand = counted["bulk"] * 1000 / rows
    links_units = counted["units"].get("LinksTable", 0)
    jobs_units = counted["units"].get("JobsTable", 0)
    token_units = counted["units"].get("TokensTable", 0)
    links_index = counted["units"].get("LinksTable index", 0)
    jobs_index = counted["units"].get("JobsTable index", 0)
    index_units = links_index + jobs_index
    print(
        f"Bulk on the local stack (find-if-exists {options.find_if_exists}, {os.cpu_count()} CPUs, "
        f"time x{options.time_scale:g}, DynamoDB capacity {options.dynamodb_capacity}"
        f"{''.join(', ' + param for param in options.param)})"
    )
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
    print(f"  ByOwner index of links {links_index:>6,}   {links_index / rows:.3f} per URL (every owned link)")
    print(f"  ByOwner index of jobs  {jobs_index:>6,}   (the job item's every update rewrites its entry)")
    print(f"  per URL, tables and indexes: {(links_units + jobs_units + index_units) / rows:.3f}")
    print(f"  loop heartbeats (tokens table): {token_units:,}")
    if rate:
        print()
        how = "straight to S3" if rate["direct"] else "in the request"
        outcomes = rate["outcomes"]
        print(
            f"Throughput: {rate['rows']:,} rows ({rate['bytes'] / 1e6:.1f} MB, uploaded {how} in "
            f"{rate['upload_seconds']:.1f} s) done in {rate['seconds']:.1f} s = "
            f"{rate['rows'] / rate['seconds']:,.0f} URLs/s end to end (target >= 1,000); "
            f"{rate['succeeded']:,} shortened, {rate['failed']:,} failed"
        )
        print(
            f"  results {rate['fetched']}: {outcomes['lines']:,} lines, {outcomes['codes']:,} codes, "
            f"{outcomes['errors']:,} errors, {outcomes['missing']:,} rows missing, "
            f"{outcomes['duplicates']:,} duplicated, {outcomes['malformed']:,} malformed: every row exactly "
            f"one outcome: {'yes' if outcomes['ok'] else 'NO'}"
        )
        if outcomes["ended_early"]:
            print(f"  the job ENDED EARLY: {outcomes['ended_early']}")
        print(
            f"  CPU of the whole local stack (API, functions, embedded AWS): {rate['cpu_seconds']:,.0f} s "
            f"= {rate['cpu_seconds'] * 1e6 / rate['rows']:,.0f} us per row"
        )
        memory = rate["memory"]
        print(
            f"  peak memory of the whole local stack: {memory['peak_mb']:,} MB (goal for 2,000,000 rows: "
            f"<= 3,072 MB; Pss of {memory['processes']} processes summed, sampled every 2 s: "
            f"the stack's own process (embedded AWS, API, local Lambda) {memory['root_mb']:,} MB "
            f"and its function workers); the stack process's peak RSS {memory['root_hwm_mb']:,} MB, "
            f"every live process's peak RSS summed {rate['stack_peak_rss_mb']:,} MB"
        )
        grown = memory["root_mb"] - memory["root_start_mb"]
        print(
            f"  the stack's own process grew by {grown:,} MB during the job "
            f"(from {memory['root_start_mb']:,} MB) = {grown * 2**20 / rate['rows']:,.0f} bytes per row; "
            f"its {memory['processes'] - 1} other processes (function workers, and the zygote they are "
            "forked from) held "
            f"{memory['peak_mb'] - memory['root_mb']:,} MB"
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
