"""The local stack's side of the zygote (local_stack/awslambda/zygote.py): it starts the zygote,
asks it for workers, and hands each back as a process with the part of ``subprocess.Popen``'s
interface the runtime uses (pid, text stdin/stdout/stderr, poll, wait, terminate, kill,
returncode). A forked worker is not the stack's child, so its exit is what the zygote reports."""

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any

log = logging.getLogger(__name__)

_SPAWN_TIMEOUT_SECONDS = 30.0
_PACKET_BYTES = 1 << 20
# Room in the zygote's command line for its workers' own (written over it: ps shows the function).
_COMMAND_LINE_ROOM = 2048


class ForkedProcess:
    """A worker forked by the zygote, seen from the stack."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.args = "<forked>"
        self.stdin: IO[str] | None = None
        self.stdout: IO[str] | None = None
        self.stderr: IO[str] | None = None
        self.returncode: int | None = None
        self._ended = threading.Event()

    def ended(self, returncode: int) -> None:
        """The zygote reaped it (negative: the signal that ended it)."""
        self.returncode = returncode
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, number: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, number)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _Reply:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.process: ForkedProcess | None = None
        self.error = "the zygote is gone"


class Zygote:
    """The zygote process and its socket; started at the first spawn, again if it died."""

    def __init__(self, environment: Mapping[str, str], cwd: str) -> None:
        self._environment = dict(environment)
        self._cwd = cwd
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._channel: socket.socket | None = None
        self._replies: dict[int, _Reply] = {}
        self._workers: dict[int, ForkedProcess] = {}
        self._next = 0
        self._closed = False

    def spawn(self, argv: Sequence[str], environment: Mapping[str, str], cwd: str) -> ForkedProcess:
        """A new worker running ``argv`` (a ``python -m local_stack.awslambda.bootstrap`` command
        line) with ``environment`` in ``cwd``; OSError when the zygote cannot fork one."""
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        ours, theirs = (stdin_write, stdout_read, stderr_read), (stdin_read, stdout_write, stderr_write)
        reply = _Reply()
        try:
            with self._lock:
                channel = self._running()
                self._next += 1
                self._replies[self._next] = reply
                request = {"spawn": self._next, "argv": list(argv), "env": dict(environment), "cwd": cwd}
                socket.send_fds(channel, [json.dumps(request).encode()], list(theirs))
        except OSError:
            _close(ours)
            raise
        finally:
            _close(theirs)
        if not reply.done.wait(_SPAWN_TIMEOUT_SECONDS) or reply.process is None:
            _close(ours)
            raise OSError(f"the zygote did not fork a worker: {reply.error}")
        process = reply.process
        process.stdin = open(stdin_write, "w", encoding="utf-8", errors="replace")  # noqa: SIM115
        process.stdout = open(stdout_read, encoding="utf-8", errors="replace")  # noqa: SIM115
        process.stderr = open(stderr_read, encoding="utf-8", errors="replace")  # noqa: SIM115
        return process

    def close(self) -> None:
        """Stop the zygote (its workers are the runtime's to stop, before this)."""
        with self._lock:
            self._closed = True
            channel, process = self._channel, self._process
            self._channel = None
        if channel is not None:
            with contextlib.suppress(OSError):
                channel.shutdown(socket.SHUT_RDWR)
            channel.close()
        if process is not None:
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _running(self) -> socket.socket:
        if self._closed:
            raise OSError("the local stack is stopping")
        if self._channel is not None:
            return self._channel
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self._process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [
                    sys.executable,
                    "-m",
                    "local_stack.awslambda.zygote",
                    str(theirs.fileno()),
                    "-" * _COMMAND_LINE_ROOM,
                ],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                cwd=self._cwd,
                env=self._environment,
                # Its own session: Ctrl-C reaches the local stack, which then stops it in order.
                start_new_session=True,
            )
        self._channel = ours
        threading.Thread(target=self._listen, args=(ours, self._process), name="zygote", daemon=True).start()
        return ours

    def _listen(self, channel: socket.socket, process: subprocess.Popen[bytes]) -> None:
        """Read the zygote's answers and exit reports until its socket closes."""
        while True:
            try:
                packet = channel.recv(_PACKET_BYTES)
            except OSError:
                packet = b""
            if not packet:
                break
            message: dict[str, Any] = json.loads(packet)
            if "spawned" in message:
                reply = self._replies.pop(message["spawned"], None) or _Reply()
                if "pid" in message:
                    reply.process = self._workers[message["pid"]] = ForkedProcess(message["pid"])
                else:
                    reply.error = message.get("error", reply.error)
                reply.done.set()
            elif "exited" in message:
                worker = self._workers.pop(message["exited"], None)
                if worker is not None:
                    worker.ended(message["returncode"])
        self._gone(channel, process)

    def _gone(self, channel: socket.socket, process: subprocess.Popen[bytes]) -> None:
        """The zygote ended: its workers end too (they watch their parent), and the next spawn
        starts a new one."""
        with self._lock:
            if self._channel is channel:
                self._channel = None
            replies, self._replies = self._replies, {}
            workers, self._workers = self._workers, {}
        with contextlib.suppress(OSError):
            channel.close()
        if not self._closed:
            log.warning("The functions' zygote process ended (%s); starting another", process.poll())
        for reply in replies.values():
            reply.done.set()
        for worker in workers.values():
            worker.ended(-signal.SIGKILL)


def _close(fds: Sequence[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
