"""After `kill -9` of the local stack, the work its invocations held is taken over within seconds of
READY: the split and results leases of the previous run have run out (ExpireOnRestart on the jobs
table), the loops' heartbeats are forgotten (ForgetOnRestart on the tokens table), so a status read
re-drives the split and the restarter revives the loops at once; every row ends with one outcome."""

import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import RunningStack, StartStack
from tests.e2e.test_direct_upload_e2e import status
from tests.e2e.test_direct_upload_e2e import wait_for as wait_for_job
from tests.e2e.test_restart_e2e import NEVER_STALE, TIME_SCALE, direct_upload, downloaded_results

# The brief's bound: progress within this many seconds of READY.
RESUME_SECONDS = 15


def progress(job: dict[str, Any]) -> tuple[Any, ...]:
    return (job["phase"], job["total"], job["processed"])


def wait_for_change(stack: RunningStack, job_id: str, before: tuple[Any, ...], seconds: float) -> float:
    """Poll the job (each read may re-drive stalled work) until its progress differs from
    ``before``; the seconds it took (or more than ``seconds`` when it never did)."""
    started = time.monotonic()
    while time.monotonic() - started <= seconds:
        if progress(status(stack, job_id)) != before:
            return time.monotonic() - started
        time.sleep(0.5)
    return time.monotonic() - started


def kill_and_resume(stack: RunningStack, job_id: str, fault: str, phase: str) -> float:
    """Wait for the job to stall in ``phase`` behind ``fault``, kill -9 the stack, start it again
    without the fault; the seconds from READY to the job's next progress."""
    stalled = wait_for_job(stack, job_id, phase, 60)
    assert stalled["phase"] == phase, (stalled, stack.log()[-3000:])
    time.sleep(2)  # the invocation is now inside its slow call, holding its lease
    before = progress(status(stack, job_id))
    stack.kill()
    stack.args = [arg for arg in stack.args if arg not in ("--fault", fault)]
    stack.restart()
    return wait_for_change(stack, job_id, before, RESUME_SECONDS)


def assert_every_row_one_outcome(stack: RunningStack, job_id: str, rows: int) -> None:
    done = wait_for_job(stack, job_id, "done", 120)
    assert (done["phase"], done["succeeded"] + done["failed"]) == ("done", rows), (done, stack.log()[-3000:])
    lines = downloaded_results(stack, job_id)
    assert [int(line["row"]) for line in lines] == list(range(1, rows + 1))


@pytest.mark.e2e_timeout(300)
def test_a_split_killed_midway_resumes_within_seconds_of_ready(
    start_stack: StartStack, tmp_path: Path
) -> None:
    # Given a split that holds its lease, stuck queueing its first rows, when the stack is killed
    slow_queueing = "delay-in=FilesFunction.SendMessageBatch:600"
    stack = start_stack(time_scale=TIME_SCALE, params=NEVER_STALE, faults=[slow_queueing])
    rows = 300
    job_id = direct_upload(stack, tmp_path / "catalogue.csv", rows)
    # When it is killed and started again
    took = kill_and_resume(stack, job_id, slow_queueing, "splitting")
    # Then the split moves on within seconds of READY, and every row has one outcome
    assert took <= RESUME_SECONDS, (took, status(stack, job_id), stack.log()[-3000:])
    assert_every_row_one_outcome(stack, job_id, rows)


@pytest.mark.e2e_timeout(300)
def test_processing_killed_midway_resumes_within_seconds_of_ready(
    start_stack: StartStack, tmp_path: Path
) -> None:
    # Given a split job whose loops are stuck writing their first links
    slow_writes = "delay-in=PollerFunction.BatchWriteItem:600"
    stack = start_stack(time_scale=TIME_SCALE, params=NEVER_STALE, faults=[slow_writes])
    rows = 300
    job_id = direct_upload(stack, tmp_path / "catalogue.csv", rows)
    # When the stack is killed mid-processing and started again
    took = kill_and_resume(stack, job_id, slow_writes, "processing")
    # Then rows are processed again within seconds of READY, and every row has one outcome
    assert took <= RESUME_SECONDS, (took, status(stack, job_id), stack.log()[-3000:])
    assert_every_row_one_outcome(stack, job_id, rows)
