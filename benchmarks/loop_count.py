"""Loops over time: start the local stack with short periods and small scaling thresholds, upload a
bulk backlog, and print one line per sample (elapsed seconds, visible messages, loop count) until
the backlog is drained and the loops are back at their minimum.

    python -m benchmarks.loop_count [--jobs 24] [--rows 150] [--time-scale 30] [--max-loops 5]
    python -m benchmarks.loop_count --job-rows 100000 [--max-loops 10]

The backlog is --jobs CSV uploads of --rows rows each, sent at once: each job of up to 250 rows is
one queued message, so the backlog in messages is known and drains in minutes on a laptop.

With --job-rows the backlog is one large job instead, on a stack with MinLoops 0 and real time
(alarm periods of a minute): the job starts the loops it needs itself, so the loop count reaches
its target within the first seconds instead of after alarm periods. A job larger than the 4 MB
body limit is uploaded straight to S3.

The loop count is the number of rows in the tokens table (one per loop); the alarms, the scaler and
the restarter move it, nothing here does.
"""

import argparse
import json
import signal
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from local_stack.harness import StackProcess
from shortener_cli.client import ShortenerClient
from shortener_cli.main import SMALL_BODY_BYTES

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ScalingRun:
    """The template parameters of a short scaling run (alarm periods and schedules are divided by
    the stack's time scale; these thresholds are in queued messages)."""

    min_loops: int = 1
    max_loops: int = 5
    messages_per_loop: int = 2
    threshold_low: int = 2
    threshold_medium: int = 6
    threshold_high: int = 12
    # Above the poller's longest quiet spell (a 20 s long poll, or 30 s between heartbeats while a
    # batch is processed), so a healthy loop is never mistaken for a dead one; the template's
    # MinValue (Lambda's shortest MaximumEventAgeInSeconds, which it also sets).
    stale_heartbeat_seconds: int = 60
    # The probe polls every job of a run twice a second through the admin key: far above a
    # client's usage plan (10 requests/s), which this run does not measure.
    key_rate_limit: int = 1000

    def params(self) -> dict[str, str]:
        return {
            "MinLoops": str(self.min_loops),
            "MaxLoops": str(self.max_loops),
            "MessagesPerLoop": str(self.messages_per_loop),
            "ScaleThresholdLow": str(self.threshold_low),
            "ScaleThresholdMedium": str(self.threshold_medium),
            "ScaleThresholdHigh": str(self.threshold_high),
            "StaleHeartbeatSeconds": str(self.stale_heartbeat_seconds),
            "KeyRateLimit": str(self.key_rate_limit),
            "KeyBurstLimit": str(2 * self.key_rate_limit),
        }


@dataclass(frozen=True)
class Sample:
    elapsed: float
    visible: int
    in_flight: int
    loops: int

    @property
    def drained(self) -> bool:
        """No message left in the queue, waiting or in flight."""
        return self.visible == 0 and self.in_flight == 0

    def line(self) -> str:
        return (
            f"{self.elapsed:7.1f} s  visible={self.visible:4d}  in_flight={self.in_flight:4d}  "
            f"loops={self.loops}"
        )


class StackProbe:
    """Reads what the scaling run is about from a running local stack: queue depth and loops."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info
        session = boto3.session.Session(
            aws_access_key_id="local", aws_secret_access_key="local", region_name=info["region"]
        )
        config = Config(retries={"mode": "standard"})
        self.sqs = session.client("sqs", endpoint_url=info["aws_endpoint"], config=config)
        self.dynamodb = session.client("dynamodb", endpoint_url=info["aws_endpoint"], config=config)
        self.queue_url = info["resources"]["BulkQueue"]
        self.tokens_table = info["resources"]["TokensTable"]

    def tokens(self) -> list[dict[str, Any]]:
        """Every token row: {queue_url, token, loop_id, last_used, started_at}."""
        rows: list[dict[str, Any]] = []
        options: dict[str, Any] = {"TableName": self.tokens_table, "ConsistentRead": True}
        while True:
            page = self.dynamodb.scan(**options)
            rows += [
                {key: next(iter(value.values())) for key, value in item.items()} for item in page["Items"]
            ]
            if "LastEvaluatedKey" not in page:
                return rows
            options["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def sample(self, started: float) -> Sample:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return Sample(
            elapsed=time.monotonic() - started,
            visible=int(attributes["ApproximateNumberOfMessages"]),
            in_flight=int(attributes["ApproximateNumberOfMessagesNotVisible"]),
            loops=len(self.tokens()),
        )

    def upload(self, rows: int, tag: str = "loop-count") -> dict[str, Any]:
        """A job of ``rows`` distinct URLs: POST /bulk, or straight to S3 above the body limit."""
        body = ("url\n" + "".join(f"https://example.com/{tag}/{number}\n" for number in range(rows))).encode()
        if len(body) <= SMALL_BODY_BYTES:
            return self._request("POST", "bulk", body, {"Content-Type": "text/csv"})
        path = Path(tempfile.mkdtemp(prefix="loop-count-")) / "job.csv"
        path.write_bytes(body)
        client = ShortenerClient(self.info["api_url"], timeout=600, api_key=self.info.get("api_key"))
        job = client.start_upload(path.name, len(body))
        client.put_file(job["upload"], path, lambda _: None)
        return job

    def job(self, job_id: str) -> dict[str, Any]:
        return self._request("GET", f"jobs/{job_id}")

    def results(self, job_id: str) -> str:
        request = urllib.request.Request(self.info["api_url"] + f"jobs/{job_id}/results", headers=self._key())
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.read().decode("utf-8")

    def _request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        request = urllib.request.Request(
            self.info["api_url"] + path, data=body, headers={**(headers or {}), **self._key()}, method=method
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())

    def _key(self) -> dict[str, str]:
        """The stack's admin API key as a header (POST /bulk and GET /jobs/... need one)."""
        return {"X-Api-Key": str(self.info["api_key"])} if self.info.get("api_key") else {}


@contextmanager
def local_stack(
    run: ScalingRun,
    time_scale: float,
    log_path: Path,
    *,
    faults: Sequence[str] = (),
    template: Path | None = None,
) -> Iterator[dict[str, Any]]:
    """A local stack subprocess on free ports with ``run``'s parameters; its READY info.
    ``faults``: values of ``--fault`` (e.g. ``duplicate-async=0.2``); ``template``: another SAM
    template than the project's."""
    data_dir = Path(tempfile.mkdtemp(prefix="loop-count-"))
    args = [
        "--api-port", "0", "--aws-port", "0", "--lambda-port", "0",
        "--no-persist", "--data-dir", str(data_dir), "--time-scale", str(time_scale),
    ]  # fmt: skip
    for key, value in run.params().items():
        args += ["--param", f"{key}={value}"]
    for fault in faults:
        args += ["--fault", fault]
    if template is not None:
        args += ["--template", str(template)]
    log_path.unlink(missing_ok=True)  # a fresh log, as before the harness (which appends)
    stack = StackProcess(args, log_path)
    try:
        yield stack.launch(90)
    finally:
        stack.stop()


def watch(
    probe: StackProbe, run: ScalingRun, started: float, timeout: float, settle: float, interval: float = 1.0
) -> Iterator[Sample]:
    """Samples until the queue drained and the loops are back at the minimum: right away once
    they went up, else after ``settle`` seconds drained (a backlog the minimum drained alone)."""
    peak = 0
    drained_since: float | None = None
    while time.monotonic() - started < timeout:
        sample = probe.sample(started)
        peak = max(peak, sample.loops)
        yield sample
        drained_since = (drained_since or sample.elapsed) if sample.drained else None
        if sample.drained and sample.loops == run.min_loops:
            assert drained_since is not None
            if peak > run.min_loops or sample.elapsed - drained_since >= settle:
                return
        time.sleep(interval)
    raise TimeoutError(f"not drained and back at {run.min_loops} loops after {timeout} s")


def wait_for_minimum(probe: StackProbe, run: ScalingRun, timeout: float) -> None:
    """The restarter's first run creates the minimum of loops; start from there."""
    deadline = time.monotonic() + timeout
    while len(probe.tokens()) < run.min_loops:
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {run.min_loops} loops after {timeout} s")
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=24, help="CSV uploads sent at once")
    parser.add_argument("--rows", type=int, default=150, help="rows per uploaded CSV")
    parser.add_argument("--time-scale", type=float, default=30.0, help="speed-up of alarms and schedules")
    parser.add_argument("--max-loops", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    parser.add_argument("--log", type=Path, default=Path(tempfile.gettempdir()) / "loop-count-stack.log")
    parser.add_argument(
        "--job-rows", type=int, default=0, help="one job of this many rows instead (MinLoops 0, real time)"
    )
    options = parser.parse_args()

    # A SIGTERM (timeout, CI) unwinds like Ctrl-C, so the stack below is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if options.job_rows:
        one_large_job(options)
        return
    run = ScalingRun(max_loops=options.max_loops)
    print(f"local stack: time scale {options.time_scale}, parameters {run.params()}; log in {options.log}")
    with local_stack(run, options.time_scale, options.log) as info:
        probe = StackProbe(info)
        wait_for_minimum(probe, run, options.timeout)
        started = time.monotonic()
        job_ids = [
            probe.upload(options.rows, tag=f"loop-count/{number}")["job_id"] for number in range(options.jobs)
        ]
        print(f"uploaded {options.jobs} jobs of {options.rows} rows")
        print("elapsed    visible messages, in flight, loops")
        peak = 0
        settle = 3 * 60 / options.time_scale  # three runs of the restarter
        for sample in watch(probe, run, started, options.timeout, settle):
            peak = max(peak, sample.loops)
            print(sample.line(), flush=True)
        statuses = [probe.job(job_id) for job_id in job_ids]
        done = sum(status["status"] == "done" for status in statuses)
        succeeded = sum(status["succeeded"] for status in statuses)
        failed = sum(status["failed"] for status in statuses)
        print(
            f"{done}/{len(job_ids)} jobs done: {succeeded} rows succeeded, {failed} failed of "
            f"{options.jobs * options.rows}; loops {run.min_loops} -> {peak} -> {run.min_loops}"
        )


def one_large_job(options: argparse.Namespace) -> None:
    """One job of --job-rows rows with no loop running: the loop count over time."""
    # The template's own scaling settings, with no loop at rest and real (unscaled) time.
    run = ScalingRun(
        min_loops=0,
        max_loops=options.max_loops,
        messages_per_loop=20,
        threshold_low=10,
        threshold_medium=100,
        threshold_high=500,
        stale_heartbeat_seconds=180,
    )
    time_scale = 1.0
    print(f"local stack: time scale {time_scale:g} (alarm periods of 60 s), parameters {run.params()}")
    with local_stack(run, time_scale, options.log) as info:
        probe = StackProbe(info)
        started = time.monotonic()
        job_id = probe.upload(options.job_rows, tag="one-job")["job_id"]
        print(f"uploaded one job of {options.job_rows:,} rows in {time.monotonic() - started:.1f} s")
        print("elapsed    visible messages, in flight, loops")
        target = min(run.max_loops, -(-options.job_rows // 250 // run.messages_per_loop))
        reached: float | None = None
        drained: float | None = None
        # settle: a file still being split can leave the queue empty for a moment at the start.
        # watch() ends only once the queue is drained and the loop count is back at 0 (the last sample).
        for sample in watch(probe, run, started, options.timeout, settle=60, interval=0.5):
            if reached is None and sample.loops >= target:
                reached = sample.elapsed
            drained = (drained or sample.elapsed) if sample.drained else None
            if sample.elapsed < 30 or int(sample.elapsed * 2) % 10 == 0 or sample.loops == 0:
                print(sample.line(), flush=True)
        job = probe.job(job_id)
        when = f"{reached:.1f} s" if reached is not None else "never"
        back = sample.elapsed
        print(
            f"job {job['status']}: {job['succeeded']:,} succeeded, {job['failed']:,} failed; "
            f"target of {target} loops reached after {when} (the first alarm period ends at 60 s); "
            f"loops back to 0 at {back:.1f} s, {back - (drained or back):.1f} s after the queue drained"
        )


if __name__ == "__main__":
    main()
