"""A loop whose invocation crashes is running again within seconds: Lambda (the local runtime)
sends the record of the failed asynchronous invocation to the poller's on-failure destination, the
operations topic, to which the restarter is subscribed; it revives that loop at once, long before
the stale-heartbeat scan would find it."""

import contextlib
import os
import signal
import time

import pytest

from benchmarks.loop_count import StackProbe
from tests.e2e.conftest import StartStack
from tests.e2e.test_scaling_e2e import wait_for

REVIVED_WITHIN_SECONDS = 10


@pytest.mark.e2e_timeout(180)
def test_a_loop_whose_invocation_crashes_runs_again_within_seconds(start_stack: StartStack) -> None:
    # Given one loop running (time scale 1), and a stale-heartbeat threshold of an hour: only the
    # failure of the invocation can bring it back soon
    running = start_stack(params={"MinLoops": "1", "StaleHeartbeatSeconds": "3600"})
    probe = StackProbe(running.info)
    row = wait_for(lambda: next((t for t in probe.tokens() if t.get("holder")), None), 90, "a running loop")
    # When its execution environment dies mid-invocation (kill -9, as an out-of-memory kill)
    workers = wait_for(lambda: running.workers("PollerFunction"), 30, "the poller's worker")
    killed_at = time.monotonic()
    for pid in workers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    # Then within seconds the token runs under a new loop id whose first invocation claimed it
    revived = wait_for(
        lambda: next(
            (
                t
                for t in probe.tokens()
                if t["token"] == row["token"] and t["loop_id"] != row["loop_id"] and t.get("holder")
            ),
            None,
        ),
        60,
        "the revived loop",
        interval=0.2,
    )
    elapsed = time.monotonic() - killed_at
    assert elapsed <= REVIVED_WITHIN_SECONDS, f"revived after {elapsed:.1f} s"
    assert int(revived["seq"]) >= 1
    # And the restarter logged that it revived it from the failure record
    assert "Loops whose invocation failed revived" in running.log()
