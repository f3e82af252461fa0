"""The one way tests and benchmarks start a local stack: `python -m local_stack` as a subprocess (on
the free ports its arguments ask for, ``--api-port 0`` and so on), its output appended to a log file,
waited for until it prints its READY line (one JSON object: URLs, region, resources, admin key).

tests/e2e/conftest.py's RunningStack, benchmarks/bulk.py, benchmarks/loop_count.py and
benchmarks/persistence.py all start their stacks through :class:`StackProcess`."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
READY_PREFIX = "READY "
# Bounds of a hang, not expectations: a start on a loaded 2-core CI (imports, the API's first
# environment) has taken most of a minute.
START_TIMEOUT = 180.0
STOP_TIMEOUT = 30.0


class StackProcess:
    """A local stack subprocess: ``args`` are `python -m local_stack`'s, ``env`` is added to this
    process's environment, the output goes to ``log_path`` (appended to, so a restart's READY line is
    told from the one before). In a process group of its own, which :meth:`kill` ends whole."""

    def __init__(self, args: list[str], log_path: Path, env: dict[str, str] | None = None) -> None:
        self.args = args
        self.log_path = log_path
        self.env = dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        """Everything the stack printed so far (banner, function logs)."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def launch(self, timeout: float = START_TIMEOUT) -> dict[str, Any]:
        """Start the subprocess and wait for its READY line; what that line says. Stopped again and
        RuntimeError if it exits first, TimeoutError if it is not ready within ``timeout`` seconds."""
        with self.log_path.open("ab") as log:
            offset = log.tell()
            self.process = subprocess.Popen(  # noqa: S603 (this interpreter, the local stack module)
                [sys.executable, "-m", "local_stack", *self.args],
                cwd=PROJECT_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                # A process group of its own, which kill() can end whole without touching the caller's.
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.log()[offset:].splitlines():
                if line.startswith(READY_PREFIX):
                    return dict(json.loads(line.removeprefix(READY_PREFIX)))
            if self.process.poll() is not None:
                raise RuntimeError(f"the local stack exited with {self.process.returncode}:\n{self.tail()}")
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"the local stack was not ready after {timeout} s:\n{self.tail()}")

    def stop(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM, as Ctrl-C would; SIGKILL if it does not stop in time. The exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL the stack's whole process group and its Lambda workers (which run in sessions of
        their own) at once: nothing gets to save or clean up, as after `kill -9` or a crash."""
        assert self.process is not None and self.running
        workers = descendants(self.process.pid)
        os.killpg(self.process.pid, signal.SIGKILL)
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(5)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # The command name (field 2) may hold spaces; the fields after its ")" are plain.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, pending = [], [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found
