"""Scaling and healing on the local stack, with alarm periods and the restarter's schedule sped up
ten times and small thresholds: loops follow a backlog up and back down to the minimum, a deleted
token stops its loop, killed loops come back, and no row of the jobs is lost on the way."""

import csv
import io
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.loop_count import ScalingRun, StackProbe
from tests.e2e.conftest import RunningStack, StartStack

TIME_SCALE = 10.0
SCHEDULE_PERIOD = 60 / TIME_SCALE  # the restarter's rate(1 minute), sped up
RUN = ScalingRun(min_loops=1, max_loops=4, messages_per_loop=2, threshold_low=2, threshold_medium=4)
# A bulk message holds up to 250 rows; small jobs make one message each, so the backlog is counted
# in messages without hours of rows on a laptop.
JOBS, ROWS_PER_JOB = 8, 30
BACKLOG_ROWS_PER_JOB = 150
KILL_ROWS_PER_JOB = 80  # enough work that the kill lands while batches are being processed


def start_scaling_stack(start_stack: StartStack, time_scale: float) -> tuple[RunningStack, StackProbe]:
    running = start_stack(time_scale=time_scale, params=RUN.params())
    probe = StackProbe(running.info)
    # The restarter's first run (at start) creates the minimum, once its cold start is over: that
    # takes seconds of imports on a loaded machine, whatever the time scale.
    bound = max(60.0, 4 * 60 / time_scale)
    wait_for(lambda: len(probe.tokens()) == RUN.min_loops, bound, "the minimum of loops")
    return running, probe


@pytest.fixture
def scaling_stack(start_stack: StartStack) -> tuple[RunningStack, StackProbe]:
    return start_scaling_stack(start_stack, TIME_SCALE)


def wait_for(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"no {what} within {timeout:.0f} s")


def upload_jobs(probe: StackProbe, tag: str, rows: int = ROWS_PER_JOB) -> list[str]:
    return [probe.upload(rows, tag=f"{tag}/{number}")["job_id"] for number in range(JOBS)]


def all_done(probe: StackProbe, job_ids: list[str]) -> bool:
    return all(probe.job(job_id)["status"] == "done" for job_id in job_ids)


def assert_every_row_has_one_code(
    probe: StackProbe, job_ids: list[str], rows_per_job: int = ROWS_PER_JOB
) -> None:
    for job_id in job_ids:
        status = probe.job(job_id)
        assert (status["succeeded"], status["failed"]) == (rows_per_job, 0), status
        rows = list(csv.DictReader(io.StringIO(probe.results(job_id))))
        assert [int(row["row"]) for row in rows] == sorted({int(row["row"]) for row in rows})
        assert len(rows) == rows_per_job
        assert all(row["code"] and not row["error"] for row in rows)


@pytest.mark.e2e_timeout(420)
def test_a_backlog_takes_the_loops_up_and_back_down_to_the_minimum(start_stack: StartStack) -> None:
    # Given the stack idle at its minimum of one loop, alarms and schedule every 2 s: a backlog of
    # a few seconds' work must be seen while it lasts
    _, probe = start_scaling_stack(start_stack, time_scale=30)
    started = time.monotonic()
    # When more jobs land at once than one loop receives in one batch (10 messages)
    job_ids = [probe.upload(BACKLOG_ROWS_PER_JOB, tag=f"scale/{number}")["job_id"] for number in range(16)]
    samples = []

    def drained_and_back() -> bool:
        samples.append(probe.sample(started))
        return samples[-1].loops == RUN.min_loops and all_done(probe, job_ids)

    wait_for(drained_and_back, 360, "drain and return to the minimum", interval=0.5)
    # Then the loop count rose above the minimum, never above the maximum, and came back down
    peak = max(sample.loops for sample in samples)
    print("\n".join(sample.line() for sample in samples))
    assert RUN.min_loops < peak <= RUN.max_loops
    assert all(RUN.min_loops <= sample.loops <= RUN.max_loops for sample in samples)
    # And every row of every job has exactly one code
    assert_every_row_has_one_code(probe, job_ids, BACKLOG_ROWS_PER_JOB)


@pytest.mark.e2e_timeout(180)
def test_deleting_a_token_stops_its_loop(scaling_stack: tuple[RunningStack, StackProbe]) -> None:
    running, probe = scaling_stack
    # Given the one loop of the minimum, beating
    [before] = probe.tokens()
    dynamodb = running.boto3_client("dynamodb")
    # When its token is deleted
    dynamodb.delete_item(
        TableName=probe.tokens_table,
        Key={"queue_url": {"S": before["queue_url"]}, "token": {"S": before["token"]}},
    )
    # Then that loop stops at its next heartbeat (a long poll of at most 20 s later)
    stopped = f'"token":"{before["token"]}"'
    wait_for(
        lambda: any(
            "this loop stops" in line and stopped in line.replace(" ", "")
            for line in running.log().splitlines()
        ),
        60,
        "stop of the loop whose token was deleted",
    )

    # And the restarter keeps the minimum with a new loop of its own, which beats
    def replaced() -> dict[str, Any] | None:
        tokens = probe.tokens()
        fresh = [token for token in tokens if token["loop_id"] != before["loop_id"]]
        return fresh[0] if len(tokens) == RUN.min_loops and fresh else None

    replacement = wait_for(replaced, 4 * SCHEDULE_PERIOD, "replacement loop")
    wait_for(
        lambda: any(int(t["last_used"]) > int(replacement["last_used"]) for t in probe.tokens()),
        40,
        "heartbeat of the replacement loop",
    )


@pytest.mark.e2e_timeout(180)
def test_a_loop_that_died_without_a_retry_is_revived_by_the_restarter(
    scaling_stack: tuple[RunningStack, StackProbe],
) -> None:
    running, probe = scaling_stack
    # Given a token whose loop is gone for good: its row names a loop id no invocation runs (a
    # loop whose retries were exhausted, or whose re-invoke was lost); the loop that ran it stops
    [token] = probe.tokens()
    dead_loop_id = "dead-" + token["loop_id"]
    died_at = int(time.time())
    running.boto3_client("dynamodb").put_item(
        TableName=probe.tokens_table,
        Item={
            "queue_url": {"S": token["queue_url"]},
            "token": {"S": token["token"]},
            "loop_id": {"S": dead_loop_id},
            "started_at": {"N": str(token["started_at"])},
            "last_used": {"N": str(died_at)},
        },
    )
    # When its heartbeat goes stale
    # Then within the threshold plus one schedule period the restarter takes the token over
    bound = RUN.stale_heartbeat_seconds + SCHEDULE_PERIOD + 5
    revived = wait_for(
        lambda: next((t for t in probe.tokens() if t["loop_id"] != dead_loop_id), None),
        bound,
        "take-over by the restarter",
    )
    assert time.time() - died_at >= RUN.stale_heartbeat_seconds - 1
    # (the restarter logs the revival once its run ends, a moment after the take-over)
    wait_for(
        lambda: '"revived":["' + token["token"] + '"]' in running.log().replace(" ", ""),
        30,
        "the restarter's log of the revival",
    )
    # And the fresh loop it started beats
    wait_for(
        lambda: any(int(t["last_used"]) > int(revived["last_used"]) for t in probe.tokens()),
        40,
        "heartbeat of the revived loop",
    )


def poller_workers(running: RunningStack) -> list[int]:
    """The process ids of this stack's poller execution environments (matched by their
    environment, so the workers of other stacks on this machine are left alone)."""
    wanted = {
        f"AWS_LAMBDA_FUNCTION_NAME={running.resources['PollerFunction']}",
        f"AWS_ENDPOINT_URL={running.aws_endpoint}",
    }
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = set((entry / "environ").read_bytes().decode(errors="replace").split("\0"))
        except OSError:
            continue
        if wanted <= environment:
            pids.append(int(entry.name))
    return pids


@pytest.mark.e2e_timeout(420)
def test_loops_killed_mid_run_are_revived_and_no_row_is_lost(
    scaling_stack: tuple[RunningStack, StackProbe],
) -> None:
    running, probe = scaling_stack
    # Given jobs being processed by the loops
    job_ids = upload_jobs(probe, "kill", rows=KILL_ROWS_PER_JOB)
    wait_for(lambda: any(probe.job(job_id)["succeeded"] for job_id in job_ids), 120, "processing")
    assert not all_done(probe, job_ids), "the jobs finished before the loops could be killed"
    # When every loop's execution environment is killed mid-run
    killed_at = int(time.time())
    workers = poller_workers(running)
    assert workers, "no poller worker found"
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    # Then within the stale threshold plus one schedule period (and a little slack for the
    # restarter's own run), every token has a heartbeat newer than the kill: revived, either by
    # Lambda's retry of the failed invocation or by the restarter taking the token over
    bound = RUN.stale_heartbeat_seconds + SCHEDULE_PERIOD + 10
    wait_for(
        lambda: all(int(token["last_used"]) > killed_at for token in probe.tokens()),
        bound,
        "revival of every killed loop",
    )
    # And every job still finishes with exactly one outcome per row (messages of the killed
    # batches come back after their 120 s visibility timeout)
    wait_for(lambda: all_done(probe, job_ids), 300, "completion of the jobs", interval=2.0)
    assert_every_row_has_one_code(probe, job_ids, KILL_ROWS_PER_JOB)
