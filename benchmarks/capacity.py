"""Bulk at the speed of the table: one job against an emulated fresh on-demand links table (the local
DynamoDB's capacity, docs/capacity.md, divided by ``--scale``), with the loops pacing their writes
and, beside it, the same job without pacing (``BulkWritePacing=false``, each loop as fast as it can).

For each run: the share of the table's allowed write rate that the job used over its processing
time (write units the links table consumed per second, from the first to the last write, over the
rate the table allowed) and the share of write requests to it that were throttled (refused, or a
batch with items handed back). The last two lines are the paced run's.

    make bench ARGS="capacity"                # 200,000 rows, table at 4,000 / 20 write units/s
    make bench ARGS="capacity --rows 20000"   # a smoke run
"""

import argparse
import itertools
import json
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.bulk import LocalStack, bulk_csv

SAMPLE_SECONDS = 0.5


@dataclass
class CapacityRun:
    """What one job did to the links table."""

    label: str
    rows: int
    seconds: float  # from the table's first write of the job to its last
    write_units: float
    allowed_rate: float
    write_requests: int
    throttled_write_requests: int
    job_seconds: float
    throttled_by: str | None
    reasons: dict[str, int]

    @property
    def used(self) -> float:
        return self.write_units / (self.allowed_rate * self.seconds) if self.seconds else 0.0

    @property
    def throttled(self) -> float:
        return self.throttled_write_requests / self.write_requests if self.write_requests else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows of the job")
    parser.add_argument(
        "--scale",
        type=float,
        default=20,
        help="divide DynamoDB's figures by this (--dynamodb-capacity scale=)",
    )
    parser.add_argument("--time-scale", type=float, default=20, help="local stack --time-scale")
    parser.add_argument("--max-loops", type=int, default=4, help="MaxLoops of the stack")
    parser.add_argument(
        "--no-pacing",
        action="store_true",
        help="run only the job without pacing (today's behaviour before it)",
    )
    parser.add_argument("--pacing-only", action="store_true", help="skip the run without pacing")
    options = parser.parse_args()
    runs = []
    if not options.pacing_only:
        runs.append(run_job(options, pacing=False))
        print_run(runs[-1])
    if not options.no_pacing:
        runs.append(run_job(options, pacing=True))
        print_run(runs[-1])
    print(
        f"\nA {options.rows:,}-row job against a fresh on-demand links table, DynamoDB's figures / "
        f"{options.scale:g} ({4000 / options.scale:g} write units a second), MaxLoops {options.max_loops}:"
    )
    print(f"{'':24}{'paced':>12}{'not paced':>12}" if len(runs) == 2 else "")
    if len(runs) == 2:
        unpaced, paced = runs
        for name, value in (
            ("job time (s)", lambda r: f"{r.job_seconds:.0f}"),
            ("rows/s", lambda r: f"{r.rows / r.job_seconds:.0f}"),
            ("throughput used", lambda r: f"{r.used:.0%}"),
            ("throttled writes", lambda r: f"{r.throttled:.1%}"),
            ("write requests", lambda r: f"{r.write_requests:,}"),
        ):
            print(f"{name:24}{value(paced):>12}{value(unpaced):>12}")
    last = runs[-1]
    print(f"table write throughput used: {last.used * 100:.0f}%")
    print(f"throttled write requests: {last.throttled * 100:.1f}%")


def run_job(options: argparse.Namespace, *, pacing: bool) -> CapacityRun:
    params = {
        "FindIfExists": "false",
        "MaxLoops": str(options.max_loops),
        "BulkWritePacing": "true" if pacing else "false",
    }
    label = "paced" if pacing else "not paced"
    with tempfile.TemporaryDirectory(prefix="bench-capacity-") as folder:
        stack = LocalStack(Path(folder), options.time_scale, params, capacity=f"scale={options.scale:g}")
        try:
            table = str(stack.info["resources"]["LinksTable"])
            sampler = Sampler(stack.aws_endpoint, table)
            sampler.start()
            started = time.monotonic()
            # As a file to S3 (POST /bulk/uploads): 200,000 rows are more than POST /bulk's body takes.
            job = stack.upload(bulk_csv(options.rows, label.replace(" ", "-")), direct=True)
            done = stack.wait_until_done(str(job["job_id"]), 3 * 3600, progress_every=30)
            job_seconds = time.monotonic() - started
            sampler.stop()
        finally:
            stack.stop()
    assert done["succeeded"] + done["failed"] == options.rows, done
    first, last = sampler.window()
    seconds = last["at"] - first["at"]
    return CapacityRun(
        label=label,
        rows=options.rows,
        seconds=seconds,
        write_units=last["write_units"] - first["write_units"],
        allowed_rate=sampler.allowed_units(first, last) / seconds if seconds else first["write_rate"],
        write_requests=last["write_requests"] - first["write_requests"],
        throttled_write_requests=last["throttled_write_requests"] - first["throttled_write_requests"],
        job_seconds=job_seconds,
        throttled_by=done.get("throttled_by"),
        reasons={
            reason: count - first["reasons"].get(reason, 0)
            for reason, count in last["reasons"].items()
            if count - first["reasons"].get(reason, 0)
        },
    )


class Sampler:
    """Reads the links table's capacity figures every SAMPLE_SECONDS while the job runs."""

    def __init__(self, aws_endpoint: str, table: str) -> None:
        self._url = f"{aws_endpoint}/_local/dynamodb-capacity"
        self._table = table
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(self._read())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self._read())
            self._stop.wait(SAMPLE_SECONDS)

    def _read(self) -> dict[str, Any]:
        with urllib.request.urlopen(self._url, timeout=30) as answer:
            figures = json.load(answer)["tables"][self._table]
        return {**figures, "at": time.monotonic()}

    def allowed_units(self, first: dict[str, Any], last: dict[str, Any]) -> float:
        """Write units the table allowed between two samples (its rate may grow meanwhile)."""
        window = self.samples[self.samples.index(first) : self.samples.index(last) + 1]
        return sum(a["write_rate"] * (b["at"] - a["at"]) for a, b in itertools.pairwise(window))

    def window(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The sample before the job's first write and the first after its last one."""
        units = [sample["write_units"] for sample in self.samples]
        final = units[-1]
        start = max(0, next(i for i, value in enumerate(units) if value > units[0]) - 1)
        end = next(i for i, value in enumerate(units) if value == final)
        return self.samples[start], self.samples[end]


def print_run(run: CapacityRun) -> None:
    print(
        f"{run.label}: {run.rows:,} rows in {run.job_seconds:.0f} s; the table's writes over "
        f"{run.seconds:.0f} s used {run.used:.0%} of its {run.allowed_rate:g} units/s; "
        f"{run.throttled_write_requests:,} of {run.write_requests:,} write requests throttled "
        f"({run.throttled:.1%}); status throttled_by={run.throttled_by}; items throttled by reason: "
        f"{run.reasons}",
        flush=True,
    )


if __name__ == "__main__":
    main()
