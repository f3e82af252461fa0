"""The Max Memory Used of the local Lambda's REPORT lines is the worker's own peak, not the local
stack's: Linux keeps the spawning process's high-water mark in a child's ru_maxrss across exec."""

import subprocess
import sys

PARENT_MB = 200


def test_a_workers_peak_memory_does_not_count_the_process_that_spawned_it() -> None:
    # Given a spawning process that holds 200 MB (as the local stack holds the embedded AWS's data)
    held = bytearray(PARENT_MB * 1024 * 1024)
    for offset in range(0, len(held), 4096):
        held[offset] = 1
    # When a fresh worker process reports its peak memory
    answer = subprocess.run(
        [
            sys.executable,
            "-c",
            "from local_stack.awslambda.bootstrap import _peak_memory_kb; print(_peak_memory_kb())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    # Then it is its own (an interpreter and its imports), far below what its parent holds
    assert int(answer.stdout) // 1024 < PARENT_MB // 2, answer.stdout
    del held
