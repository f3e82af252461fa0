"""Zero idle cost: with MinLoops 0 (the default) no loop runs while there is no work, so the only
AWS requests of an idle stack are the restarter's schedule; a job that arrives then starts its own
loops, and they go back to none once its backlog is gone.

    python -m benchmarks idle [--minutes 10] [--time-scale 60] [--jobs 3] [--rows 1000]

Starts its own local stack (no persistence) with moto's request recorder, records --minutes of
simulated idle time (the schedule runs --time-scale times faster), counts the requests the
functions made (the local stack's own CloudWatch emulation is not counted: on AWS those metrics
cost nothing) and works out the requests per idle hour from the requests per restarter run. Then,
--jobs times, uploads a job of --rows rows with no loop running and prints when the upload was
answered (202), when its first row was done, when the job was done, and when the loops were back to
none. The first job meets a cold API function and a cold poller (new execution environments: on a
loaded two-core machine their imports take seconds); the next ones warm ones. The targets (a
1,000-row job on an idle machine): first row within 1 s, the job done within 2 s.
"""

import argparse
import json
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.bulk import LocalStack, bulk_csv
from local_stack.embedded import request_log

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
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as folder:
        stack = LocalStack(Path(folder), options.time_scale, {"MinLoops": "0"})
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
    print(f"  => {per_run * RUNS_PER_HOUR:.0f} AWS requests per idle hour (the restarter's schedule only)")
    print(
        f"  (the local stack's own CloudWatch emulation made {idle['stack_requests']} requests; not counted)"
    )


def run_job(stack: LocalStack, rows: int, tag: str) -> dict[str, float]:
    """Upload a job with no loop running; when its upload was answered, its first row, the job,
    and the loop count's return to zero happened."""
    wait_for_no_loops(stack, 120)
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
        "accepted": answered,
        "first_row": first_row,
        "done": done,
        "loops_gone": gone,
        "peak_loops": peak,
    }


def job_status(stack: LocalStack, job_id: str) -> dict[str, Any]:
    request = urllib.request.Request(f"{stack.api_url}jobs/{job_id}", headers=stack.key_header)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return dict(json.loads(answer.read()))


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
