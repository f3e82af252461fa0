"""The local stack's stop on SIGINT/SIGTERM/SIGHUP: a signal arriving at any moment of the main
thread's wait ends the wait, never a deadlock (the handler used to set a threading.Event while
the main thread could be inside that event's wait, holding its lock)."""

import os
import signal
import subprocess
import sys
import textwrap

from local_stack.__main__ import StopRequest

# Runs the handler at every line the main thread executes inside the wait (its own and the
# standard library's), one run per line: with a handler that takes a lock the waiter may hold, one
# of these runs blocks forever.
_EVERY_MOMENT = textwrap.dedent(
    """
    import signal, sys
    from local_stack.__main__ import StopRequest

    def run(fire_at):
        stop = StopRequest()
        lines = 0

        def tracer(frame, event, arg):
            nonlocal lines
            if event == "line":
                lines += 1
                if lines == fire_at:
                    stop.handle(signal.SIGTERM, None)
            return tracer

        sys.settrace(tracer)
        try:
            stop.wait(poll_seconds=0.0001)
        finally:
            sys.settrace(None)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        return lines

    # Every moment of the first several polls of the wait (each poll is a handful of lines).
    for fire_at in range(1, 61):
        assert run(fire_at) >= fire_at
    print("moments", fire_at)
    """
)


def test_a_signal_at_any_moment_of_the_wait_ends_it() -> None:
    # Given the handler run at each line the waiting main thread executes, one run per line
    done = subprocess.run(
        [sys.executable, "-c", _EVERY_MOMENT], capture_output=True, text=True, timeout=120, check=False
    )
    # Then every run ends (none deadlocks), and there were several moments to try
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) > 1


def test_a_real_signal_ends_the_wait_at_once() -> None:
    # Given a stop request installed for SIGTERM
    stop = StopRequest()
    previous = signal.getsignal(signal.SIGTERM)
    previous_fd = signal.set_wakeup_fd(-1)
    try:
        stop.install((signal.SIGTERM,))
        # When the process gets SIGTERM
        os.kill(os.getpid(), signal.SIGTERM)
        # Then the wait returns (a poll far longer than any test: only the wakeup can end it)
        stop.wait(poll_seconds=3600)
        assert stop.requested
        # and the handler gave the signal back its default, so a second one ends the process at once
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.set_wakeup_fd(previous_fd)
