"""Scaling and healing on the local stack, with alarm periods and the restarter's schedule sped up
ten times and small thresholds: loops follow a backlog up and back down to the minimum, a deleted
token stops its loop, killed loops come back, and no row of the jobs is lost on the way.

Each test waits for the events it needs (a log line, a token row, a job's status) with a deadline
that only bounds a hang; none depends on how fast the machine is. Where a race with the loops would
decide the outcome (a backlog drained before the alarms look, a job finished before the kill), the
test first takes the loops out of the race: it parks the minimum loop (its token then names a loop
that no longer runs) or freezes the loops' processes (SIGSTOP) before the work arrives."""

import csv
import dataclasses
import io
import os
import signal
import time
from collections.abc import Callable
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
KILL_ROWS_PER_JOB = 80


# Deadlines of the waits below: generous bounds for a loaded 2-core CI, never the expected time.
STARTUP_SECONDS = 120
LONG_POLL_SECONDS = 20  # a loop notices a change to its token at its next heartbeat, after a long poll


def start_scaling_stack(
    start_stack: StartStack, time_scale: float, run: ScalingRun = RUN
) -> tuple[RunningStack, StackProbe]:
    running = start_stack(time_scale=time_scale, params=run.params())
    probe = StackProbe(running.info)
    # The restarter's first run (at start) creates the minimum.
    wait_for(lambda: len(probe.tokens()) == run.min_loops, STARTUP_SECONDS, "the minimum of loops")
    return running, probe


def loop_stopped(running: RunningStack, token: str) -> bool:
    """Whether the log shows a loop of ``token`` stopping (its token deleted or taken over)."""
    return any(
        "this loop stops" in line and f"token={token}" in line.split() for line in running.log().splitlines()
    )


def park(running: RunningStack, probe: StackProbe) -> dict[str, Any]:
    """Take the one loop of the minimum out of play: its token row now names a loop id that no
    invocation runs, so the loop stops at its next heartbeat, and the restarter leaves the row alone
    until its heartbeat is stale. Returns the token as it was."""
    [token] = probe.tokens()
    running.boto3_client("dynamodb").put_item(
        TableName=probe.tokens_table,
        Item={
            "queue_url": {"S": token["queue_url"]},
            "token": {"S": token["token"]},
            "loop_id": {"S": "parked-" + token["loop_id"]},
            "started_at": {"N": str(token["started_at"])},
            "last_used": {"N": str(int(time.time()))},
        },
    )
    wait_for(lambda: loop_stopped(running, token["token"]), LONG_POLL_SECONDS + 60, "stop of the parked loop")
    return token


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


@pytest.mark.e2e_timeout(480)
def test_a_backlog_takes_the_loops_up_and_back_down_to_the_minimum(start_stack: StartStack) -> None:
    # Given the stack idle at its minimum of one loop, alarms and schedule every 2 s
    running, probe = start_scaling_stack(start_stack, time_scale=30)
    # And that loop parked: only loops that scaling adds can work off a backlog, however fast this
    # machine is (else one loop may drain it before the alarms and the restarter look)
    park(running, probe)
    started = time.monotonic()
    # When more jobs land at once than one loop receives in one batch (10 messages)
    job_ids = [probe.upload(BACKLOG_ROWS_PER_JOB, tag=f"scale/{number}")["job_id"] for number in range(16)]
    samples = []

    def drained_and_back() -> bool:
        samples.append(probe.sample(started))
        return samples[-1].loops == RUN.min_loops and all_done(probe, job_ids)

    wait_for(drained_and_back, 360, "drain and return to the minimum", interval=0.5)
    print("\n".join(sample.line() for sample in samples))
    # Then the backlog was worked off: with the minimum's loop parked, by loops scaling added
    # And every row of every job has exactly one code
    assert_every_row_has_one_code(probe, job_ids, BACKLOG_ROWS_PER_JOB)
    # And the loop count never left min..max, and is back at the minimum
    assert all(RUN.min_loops <= sample.loops <= RUN.max_loops for sample in samples)
    assert samples[-1].loops == RUN.min_loops


@pytest.mark.e2e_timeout(300)
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
    wait_for(
        lambda: loop_stopped(running, before["token"]),
        LONG_POLL_SECONDS + 60,
        "stop of the loop whose token was deleted",
    )

    # And the restarter keeps the minimum with a new loop of its own, which beats
    def replaced() -> dict[str, Any] | None:
        tokens = probe.tokens()
        fresh = [token for token in tokens if token["loop_id"] != before["loop_id"]]
        return fresh[0] if len(tokens) == RUN.min_loops and fresh else None

    replacement = wait_for(replaced, 4 * SCHEDULE_PERIOD + 30, "replacement loop")
    wait_for(
        lambda: any(int(t["last_used"]) > int(replacement["last_used"]) for t in probe.tokens()),
        LONG_POLL_SECONDS + 60,
        "heartbeat of the replacement loop",
    )


STALE_IN = 3 * SCHEDULE_PERIOD


@pytest.mark.e2e_timeout(300)
def test_a_loop_that_died_without_a_retry_is_revived_by_the_restarter(
    scaling_stack: tuple[RunningStack, StackProbe],
) -> None:
    running, probe = scaling_stack
    # Given a token whose loop is gone for good: its row names a loop id no invocation runs (a
    # loop whose retries were exhausted, or whose re-invoke was lost); the loop that ran it stops.
    # Its last heartbeat is dated so that it goes stale in STALE_IN seconds: more than two of the
    # restarter's runs away, so a restarter that did not wait for staleness would be seen.
    [token] = probe.tokens()
    dead_loop_id = "dead-" + token["loop_id"]
    died_at = int(time.time() - (RUN.stale_heartbeat_seconds - STALE_IN))
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
    # Then the restarter takes the token over (at its first run after the threshold; the deadline
    # only bounds a hang), and not before the heartbeat is stale
    revived = wait_for(
        lambda: next((t for t in probe.tokens() if t["loop_id"] != dead_loop_id), None),
        STALE_IN + 4 * SCHEDULE_PERIOD + 60,
        "take-over by the restarter",
    )
    assert time.time() - died_at >= RUN.stale_heartbeat_seconds - 1
    # And says so in its log (written as its run ends, so waited for too)
    wait_for(lambda: f'revived=["{token["token"]}"]' in running.log(), 60, "the restarter's log line")
    # And the fresh loop it started beats
    wait_for(
        lambda: any(int(t["last_used"]) > int(revived["last_used"]) for t in probe.tokens()),
        LONG_POLL_SECONDS + 60,
        "heartbeat of the revived loop",
    )


# One loop at most: no loop that scaling adds can run the jobs before the kill.
KILL_RUN = dataclasses.replace(RUN, max_loops=1)


@pytest.mark.e2e_timeout(480)
def test_loops_killed_mid_run_are_revived_and_no_row_is_lost(start_stack: StartStack) -> None:
    running, probe = start_scaling_stack(start_stack, TIME_SCALE, KILL_RUN)
    # Given the loop running: a heartbeat later than its start (its token exists before its first
    # invocation does), so that its execution environment is up and polling
    wait_for(
        lambda: all(int(token["last_used"]) > int(token["started_at"]) for token in probe.tokens()),
        LONG_POLL_SECONDS + 60,
        "a heartbeat of the loop",
    )
    workers = wait_for(lambda: running.workers("PollerFunction"), 60, "the loop's execution environment")
    # And its execution environments frozen (SIGSTOP), almost always while it waits on its long poll
    # (an idle loop spends nearly all its time there)
    for pid in workers:
        os.kill(pid, signal.SIGSTOP)
    # And jobs uploaded: the frozen loop's pending receive takes messages it will never finish (or,
    # frozen elsewhere, it leaves them waiting), and no other loop runs them (one loop at most)
    job_ids = upload_jobs(probe, "kill", rows=KILL_ROWS_PER_JOB)
    assert not any(probe.job(job_id)["succeeded"] for job_id in job_ids)
    # When every loop's execution environment is killed
    killed_at = int(time.time())
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    # Then every token gets a heartbeat newer than the kill: revived by Lambda's retry of the
    # failed invocation, or by the restarter taking the token over once its heartbeat is stale
    wait_for(
        lambda: all(int(token["last_used"]) > killed_at for token in probe.tokens()),
        KILL_RUN.stale_heartbeat_seconds + 4 * SCHEDULE_PERIOD + 60,
        "revival of every killed loop",
    )
    # And every job still finishes with exactly one outcome per row (messages the killed loop
    # held come back after their 120 s visibility timeout)
    wait_for(lambda: all_done(probe, job_ids), 300, "completion of the jobs", interval=2.0)
    assert_every_row_has_one_code(probe, job_ids, KILL_ROWS_PER_JOB)
