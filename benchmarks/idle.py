"""Zero idle cost: with MinLoops 0 (the default) no loop runs while there is no work, so the only
AWS requests of an idle stack are the restarter's schedule; a job that arrives then starts its own
loops, and they go back to none once its backlog is gone.

    python -m benchmarks idle [--minutes 10] [--time-scale 60] [--jobs 3] [--rows 1000] [--timeline]
        [--loops-for-new-work 1]

Starts its own local stack (no persistence) with moto's request recorder, records --minutes of
simulated idle time (the schedule runs --time-scale times faster), counts the requests the
functions made (the local stack's own CloudWatch emulation is not counted: on AWS those metrics
cost nothing) and works out the requests per idle hour from the requests per restarter run. Then,
--jobs times, uploads a job of --rows rows with no loop running and prints when the upload was
answered (202), when its first row was done, when the job was done, and when the loops were back to
none. The first job meets a cold API function and a cold poller (new execution environments: on a
loaded two-core machine their imports take seconds); the next ones warm ones. The targets (a
1,000-row job on an idle machine): first row within 1 s, the job done within 2 s.

The stack's DynamoDB has `make run`'s capacity (AWS's figures for a new on-demand table), not the
bulk benchmarks' scale=4: a 1,000-row job with find-if-exists writes about 3,000 units (each link,
and its claim in a transaction at twice the units), three seconds' worth of a table scaled down
four times, while a new on-demand table takes 4,000 units at once.

--timeline runs the functions at LogLevel DEBUG and prints each job's phases from the stack's log,
in seconds after the upload began: the upload answered, the loops started, each invocation (its
start worked out from its REPORT line), each receive, each message's start and end, the results
file written. On a shared machine the totals move with the load; the phases say where time went.
"""

import argparse
import re
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.bulk import LocalStack, bulk_csv
from local_stack.embedded import request_log
from shortener.jobs.store.items import job_from_item, job_key

# rate(1 minute): the restarter runs 60 times an idle hour.
RUNS_PER_HOUR = 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10, help="simulated idle minutes recorded")
    parser.add_argument("--time-scale", type=float, default=60, help="local stack --time-scale")
    parser.add_argument(
        "--jobs", type=int, default=3, help="jobs uploaded after the idle time, one at a time"
    )
    parser.add_argument("--rows", type=int, default=1000, help="rows per job")
    parser.add_argument(
        "--gap",
        type=float,
        default=25,
        help="seconds between a job's loops going back to none and the next job: a loop whose token "
        "is gone still ends its last long poll (20 s), and could take the next job's first message",
    )
    parser.add_argument(
        "--capacity",
        default="on",
        help="the local DynamoDB's capacity (docs/capacity.md); default on, as `make run` starts it: "
        "AWS's own figures for a new on-demand table",
    )
    parser.add_argument(
        "--loops-for-new-work", type=int, default=1, help="the LoopsForNewWork parameter (template.yaml)"
    )
    parser.add_argument(
        "--timeline", action="store_true", help="print each job's phases (from the stack's log)"
    )
    options = parser.parse_args()
    params = {"MinLoops": "0", "LoopsForNewWork": str(options.loops_for_new_work)}
    params |= {"LogLevel": "DEBUG"} if options.timeline else {}
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as folder:
        stack = LocalStack(
            Path(folder),
            options.time_scale,
            params,
            capacity=options.capacity,
            log_level="DEBUG" if options.timeline else "INFO",
        )
        try:
            time.sleep(2 * 60 / options.time_scale)  # past the schedule's first run at start
            idle = record_idle(stack, options.minutes * 60 / options.time_scale)
            print_idle(options, idle)
            print()
            print("Jobs arriving with no loop running (first row done, job done, loops back to none):")
            for number in range(options.jobs):
                if number:
                    time.sleep(options.gap)
                timings = run_job(stack, options.rows, f"idle-{number}")
                print(
                    f"  job {number + 1}: {options.rows:,} rows, answered after {timings['accepted']:.1f} s, "
                    f"first row done {timings['first_row']:.1f} s after the upload (target < 1 s), job "
                    f"done after {timings['done']:.1f} s (target < 2 s), loops back to 0 after "
                    f"{timings['loops_gone']:.1f} s (peak {timings['peak_loops']} loops)"
                )
                if options.timeline:
                    print_timeline(stack.log_path, timings["began"], timings["began"] + timings["done"])
        finally:
            stack.stop()


def record_idle(stack: LocalStack, seconds: float) -> dict[str, Any]:
    stack.recorder("reset-recording")
    stack.recorder("start-recording")
    time.sleep(seconds)
    stack.recorder("stop-recording")
    requests = request_log.read_recording(stack.recording)
    by_function = Counter(request.name for request in requests if request.by_function)
    return {
        "function_requests": by_function,
        "stack_requests": sum(1 for request in requests if not request.by_function),
        # Each restarter run scans the tokens table once for stale loops.
        "runs": by_function.get("dynamodb.Scan", 0),
    }


def print_idle(options: argparse.Namespace, idle: dict[str, Any]) -> None:
    total = sum(idle["function_requests"].values())
    runs = idle["runs"] or 1
    per_run = total / runs
    print(f"Idle with MinLoops 0, {options.minutes:g} simulated minutes (time scale {options.time_scale:g}):")
    print(
        f"  AWS requests by the functions: {total} in {idle['runs']} restarter runs = {per_run:.1f} per run"
    )
    for name, count in idle["function_requests"].most_common():
        print(f"    {name:<32} {count:>5}")
    print(f"  => {per_run * RUNS_PER_HOUR:.0f} AWS requests per idle hour (the schedules only)")
    print(
        f"  (the local stack's own CloudWatch emulation made {idle['stack_requests']} requests; not counted)"
    )


def run_job(stack: LocalStack, rows: int, tag: str) -> dict[str, float]:
    """Upload a job with no loop running; when its upload was answered, its first row, the job,
    and the loop count's return to zero happened."""
    wait_for_no_loops(stack, 120)
    began = time.time()
    started = time.monotonic()
    accepted = stack.upload(bulk_csv(rows, tag))
    answered = time.monotonic() - started
    first_row = done = None
    peak = 0
    while done is None and time.monotonic() - started < 600:
        job = job_status(stack, accepted["job_id"])
        peak = max(peak, loops(stack))
        if job["processed"] and first_row is None:
            first_row = time.monotonic() - started
        if job["status"] == "done":
            done = time.monotonic() - started
        time.sleep(0.1)
    if first_row is None or done is None:
        raise RuntimeError(f"job {accepted['job_id']} was not done in time")
    gone = wait_for_no_loops(stack, 600) - started
    return {
        "began": began,
        "accepted": answered,
        "first_row": first_row,
        "done": done,
        "loops_gone": gone,
        "peak_loops": peak,
    }


# A line of the stack's log: its time of day, the logger's short name, the rest.
_LOG_LINE = re.compile(r"^(\d\d):(\d\d):(\d\d\.\d{3}) +\w+ +(\S+) +(.*)$")
_REPORT = re.compile(r"shortener-local-(\S+) REPORT RequestId: \S+ Duration: ([\d.]+) ms")
# Not phases of the job: the schedule's runs (every second at --time-scale 60) and status reads.
_NOT_PHASES = ("RestarterFunction", "ApiFunction REPORT", "GET /jobs/", "ScalerFunction")


def print_timeline(log_path: Path, began: float, done: float) -> None:
    """The job's phases from the stack's log, in seconds after ``began`` (an epoch time), up to
    ``done``."""
    # The log's times of day are local times (the formatter's).
    clock = time.localtime(began)
    midnight = began - (clock.tm_hour * 3600 + clock.tm_min * 60 + clock.tm_sec + began % 1)
    entries: list[tuple[float, str]] = []
    for line in log_path.read_text(errors="replace").splitlines():
        found = _LOG_LINE.match(line)
        if not found or any(noise in line for noise in _NOT_PHASES):
            continue
        hours, minutes, seconds, source, text = found.groups()
        at = midnight + int(hours) * 3600 + int(minutes) * 60 + float(seconds) - began
        within = -0.5 <= at <= done - began + 0.5
        if report := _REPORT.search(text):
            function, duration = report[1], float(report[2]) / 1000
            if -0.5 <= at - duration <= done - began + 0.5:
                entries.append((at - duration, f"{function} invocation began ({duration:.2f} s)"))
            if within:
                entries.append((at, f"{function} invocation ended"))
        elif within and (source.endswith("Function") or source == "apigateway.gateway"):
            entries.append((at, f"{source} {text}"[:150]))
    print("    timeline (s after the upload began):")
    for at, text in sorted(entries):
        print(f"    {at:7.3f}  {text}")


def job_status(stack: LocalStack, job_id: str) -> dict[str, Any]:
    """The job's progress, read in its item (one GetItem): a status read through the API, ten a
    second, took CPU and the embedded AWS's one request at a time from the job it measured."""
    dynamodb, table = stack.client("dynamodb"), stack.info["resources"]["JobsTable"]
    job = job_from_item(dynamodb.get_item(TableName=table, Key=job_key(job_id), ConsistentRead=True)["Item"])
    return {"processed": job.processed, "status": job.status}


def loops(stack: LocalStack) -> int:
    table = stack.info["resources"]["TokensTable"]
    return int(stack.client("dynamodb").scan(TableName=table, Select="COUNT", ConsistentRead=True)["Count"])


def wait_for_no_loops(stack: LocalStack, seconds: float) -> float:
    deadline = time.monotonic() + seconds
    while loops(stack):
        if time.monotonic() > deadline:
            raise TimeoutError(f"loops still running after {seconds} s")
        time.sleep(0.25)
    return time.monotonic()


if __name__ == "__main__":
    main()
