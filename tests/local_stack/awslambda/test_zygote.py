"""The zygote (local_stack/awslambda/zygote.py) after its stack is gone: the exits of its workers,
which it can no longer report, end it quietly (no ConnectionResetError traceback in the terminal
the next run shares)."""

import os
import socket
import sys

from local_stack.awslambda import zygote


def test_an_exit_it_cannot_report_ends_the_zygote_without_an_error() -> None:
    # Given a worker that has ended, and the stack's end of the zygote's socket closed (kill -9)
    channel, stack_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", ""], dict(os.environ))
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    stack_end.close()
    # When the zygote reaps it and tries to report its exit
    try:
        reported = zygote._report_exits(channel, {pid})
    finally:
        channel.close()
    # Then it learns that the stack is gone, without raising
    assert reported is False


def test_a_message_to_a_stack_that_is_gone_is_not_sent_and_raises_nothing() -> None:
    # Given the stack's end of the socket closed
    channel, stack_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stack_end.close()
    # Then sending says so
    try:
        assert zygote._send(channel, {"spawned": 1, "pid": 2}) is False
    finally:
        channel.close()
