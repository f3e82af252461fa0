"""Chaos: the same bulk workload on two fresh local stacks, one without faults and one under the
faults of issue #24 (5% DynamoDB and 2% SQS throttles, 2% exceptions and 1% crashes per poller AWS
call, 10% duplicated asynchronous deliveries), and every row of every job checked.

    python -m benchmarks chaos [--quick] [--body-jobs 4] [--body-rows 5000] [--direct-rows 50000]

The workload: --body-jobs CSV uploads of --body-rows rows in the request body, and one direct
upload (presigned S3 PUT) of --direct-rows rows, all started at once; ``--quick`` is a smoke size
(2 x 500 + 2,000 rows). Real time (time scale 1) and the template's defaults but MaxLoops 10, so
the restarter's stale-heartbeat scan is the template's 180 s.

Checked for every row of every job, from its results file: exactly one outcome (a code or an
error), in input order with its own URL; no code given to two rows. Every row is a valid URL, so
every failed row counts. The last two lines are the figures:

    valid rows failed: N of M          (under faults)
    slowdown under faults: X           (wall time with faults / without)
"""

import argparse
import csv
import io
import signal
import sys
import tempfile
import time
import urllib.error
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.loop_count import ScalingRun, StackProbe, local_stack
from shortener_cli.client import ShortenerClient

FAULTS = (
    "dynamodb-throttle=0.05",
    "sqs-throttle=0.02",
    "raise-in=PollerFunction:0.02",
    "crash-in=PollerFunction:0.01",
    "duplicate-async=0.1",
)
RUN = ScalingRun(
    min_loops=0,
    max_loops=10,
    messages_per_loop=20,
    threshold_low=10,
    threshold_medium=100,
    threshold_high=500,
    stale_heartbeat_seconds=180,
)


@dataclass
class Outcome:
    """One run of the workload: its wall time and what the check of every row found."""

    label: str
    seconds: float = 0.0
    rows: int = 0
    failed: int = 0
    problems: list[str] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


def job_urls(tag: str, rows: int) -> list[str]:
    return [f"https://example.com/chaos/{tag}/{number}" for number in range(rows)]


def start_jobs(probe: StackProbe, body_jobs: int, body_rows: int, direct_rows: int) -> dict[str, list[str]]:
    """Start every job at once; job id -> its URLs in input order."""
    jobs: dict[str, list[str]] = {}
    for number in range(body_jobs):
        urls = job_urls(f"body-{number}", body_rows)
        body = ("url\n" + "".join(f"{url}\n" for url in urls)).encode()
        jobs[probe._request("POST", "bulk", body, {"Content-Type": "text/csv"})["job_id"]] = urls
    if direct_rows:
        urls = job_urls("direct", direct_rows)
        path = Path(tempfile.mkdtemp(prefix="chaos-")) / "direct.csv"
        path.write_text("url\n" + "".join(f"{url}\n" for url in urls))
        client = ShortenerClient(probe.info["api_url"], timeout=600, api_key=probe.info.get("api_key"))
        job = client.start_upload(path.name, path.stat().st_size)
        client.put_file(job["upload"], path, lambda _: None)
        jobs[job["job_id"]] = urls
    return jobs


def wait_done(probe: StackProbe, jobs: dict[str, list[str]], started: float, timeout: float) -> float:
    """Seconds from ``started`` until every job is done (progress printed every 30 s)."""
    last_print = 0.0
    while True:
        elapsed = time.monotonic() - started
        statuses = [probe.job(job_id) for job_id in jobs]
        if all(status["status"] == "done" for status in statuses):
            return elapsed
        if elapsed > timeout:
            raise TimeoutError(f"jobs not done after {timeout:.0f} s: {[s['status'] for s in statuses]}")
        if elapsed - last_print >= 30:
            finished = sum(s["succeeded"] + s["failed"] for s in statuses)
            total = sum(len(urls) for urls in jobs.values())
            print(f"  {elapsed:6.0f} s  {finished:,} of {total:,} rows finished", flush=True)
            last_print = elapsed
        time.sleep(2)


def results_file(probe: StackProbe, job_id: str, timeout: float = 600) -> str:
    """The job's results file; a 409 means it is still being written (the files function was
    asked when the job completed), so ask again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return probe.results(job_id)
        except urllib.error.HTTPError as error:
            if error.code != 409 or time.monotonic() > deadline:
                raise
        time.sleep(2)


def check_rows(probe: StackProbe, jobs: dict[str, list[str]], outcome: Outcome) -> None:
    """Every row of every results file: one outcome, its own URL, in order; no code twice."""
    codes: Counter[str] = Counter()
    for job_id, urls in jobs.items():
        lines = list(csv.DictReader(io.StringIO(results_file(probe, job_id))))
        if [int(line["row"]) for line in lines] != list(range(1, len(urls) + 1)):
            outcome.problems.append(f"job {job_id}: rows missing, repeated or out of order")
        for line, url in zip(lines, urls, strict=False):
            outcome.rows += 1
            if line["url"] != url:
                outcome.problems.append(f"job {job_id} row {line['row']}: URL {line['url']!r}, not {url!r}")
            if bool(line["code"]) == bool(line["error"]):
                outcome.problems.append(f"job {job_id} row {line['row']}: not exactly one outcome")
            if line["code"]:
                codes[line["code"]] += 1
            else:
                outcome.failed += 1
                outcome.errors[line["error"].split(":", 1)[0]] += 1
    outcome.problems += [f"code {code} given to {count} rows" for code, count in codes.items() if count > 1]


def run_once(label: str, faults: tuple[str, ...], options: argparse.Namespace) -> Outcome:
    log = Path(tempfile.gettempdir()) / f"chaos-{label}.log"
    print(f"{label}: local stack (faults: {', '.join(faults) or 'none'}); log in {log}", flush=True)
    outcome = Outcome(label)
    with local_stack(RUN, 1.0, log, faults=faults) as info:
        probe = StackProbe(info)
        started = time.monotonic()
        jobs = start_jobs(probe, options.body_jobs, options.body_rows, options.direct_rows)
        outcome.seconds = wait_done(probe, jobs, started, options.timeout)
        check_rows(probe, jobs, outcome)
    print(
        f"{label}: {outcome.rows:,} rows in {outcome.seconds:.1f} s; {outcome.failed:,} failed"
        + (f" ({dict(outcome.errors)})" if outcome.errors else "")
        + f"; {len(outcome.problems)} invariant problems",
        flush=True,
    )
    for problem in outcome.problems[:20]:
        print(f"  {problem}")
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke size: 2 x 500 body rows + 2,000 direct")
    parser.add_argument("--body-jobs", type=int, default=4)
    parser.add_argument("--body-rows", type=int, default=5_000)
    parser.add_argument("--direct-rows", type=int, default=50_000)
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="give up on a run after this many seconds"
    )
    options = parser.parse_args()
    if options.quick:
        options.body_jobs, options.body_rows, options.direct_rows = 2, 500, 2_000
    # A SIGTERM (timeout, CI) unwinds like Ctrl-C, so the stacks are stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    total = options.body_jobs * options.body_rows + options.direct_rows
    print(
        f"workload: {options.body_jobs} x {options.body_rows:,} body rows + "
        f"{options.direct_rows:,} direct = {total:,}"
    )
    clean = run_once("without-faults", (), options)
    chaos = run_once("with-faults", FAULTS, options)
    if clean.problems or chaos.problems:
        print("INVARIANTS BROKEN: see the problems above")
    print(f"valid rows failed: {chaos.failed} of {chaos.rows}")
    print(f"slowdown under faults: {chaos.seconds / clean.seconds:.2f}")
    if clean.problems or chaos.problems:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
