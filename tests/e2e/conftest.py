"""The end-to-end harness: the local stack as a subprocess on free loopback ports, driven over HTTP.

Fixtures:
- ``start_stack(*args, time_scale=..., params={...}, faults=[...], data_dir=...)``: start a stack of
  your own (stopped at the end of the test); ``stack.restart()`` keeps its data dir and ports;
  ``stack.kill()`` SIGKILLs it with its workers, as `kill -9` of its process group would.
- ``stack``: one stack shared by the tests of a module, with default settings.

Every test under tests/e2e is marked ``e2e`` and is killed by SIGALRM after ``E2E_TEST_TIMEOUT``
seconds (override per test with ``@pytest.mark.e2e_timeout(seconds)``), so nothing hangs."""

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config

PROJECT_ROOT = Path(__file__).resolve().parents[2]
READY_PREFIX = "READY "
# Bounds of a hang, not expectations: a start on a loaded 2-core CI (imports, the API's first
# environment) has taken most of a minute.
START_TIMEOUT = 180.0
STOP_TIMEOUT = 30.0
E2E_TEST_TIMEOUT = 240  # above START_TIMEOUT: a test that starts its own stack must get to run
# RunningStack.request's default: send the stack's own admin API key.
STACK_KEY = object()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e_timeout(seconds): hard time limit of one e2e test")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def _hard_time_limit(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail (rather than hang) a test that runs past its limit."""
    marker = request.node.get_closest_marker("e2e_timeout")
    seconds = int(marker.args[0]) if marker else E2E_TEST_TIMEOUT

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"e2e test exceeded {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class Answer:
    """An HTTP answer, redirects not followed."""

    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


def http_request(
    api_url: str,
    method: str,
    path: str,
    body: bytes | str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> Answer:
    """One HTTP(S) request to ``path`` below ``api_url`` (which may end in a stage, "/dev/");
    redirects are not followed."""
    url = urlsplit(api_url)
    connection_type = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    connection = connection_type(url.netloc, timeout=timeout)
    try:
        payload = body.encode() if isinstance(body, str) else body
        target = url.path.rstrip("/") + "/" + path.lstrip("/")
        connection.request(method, target, body=payload, headers=headers or {})
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        connection.close()


@dataclass
class RunningStack:
    """A local stack subprocess and what it printed in its READY line."""

    args: list[str]
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    killed: bool = False
    # Extra environment of the stack process (e.g. MOTO_RECORDER_FILEPATH).
    env: dict[str, str] = field(default_factory=dict)

    @property
    def api_url(self) -> str:
        """Base URL of the REST API, ending with "/"."""
        return str(self.info["api_url"])

    @property
    def aws_endpoint(self) -> str:
        return str(self.info["aws_endpoint"])

    @property
    def lambda_endpoint(self) -> str:
        return str(self.info["lambda_endpoint"])

    @property
    def region(self) -> str:
        return str(self.info["region"])

    @property
    def resources(self) -> dict[str, str]:
        """Logical id -> physical id: table and function names, queue URLs, topic ARNs."""
        return dict(self.info["resources"])

    def boto3_client(self, service: str) -> Any:
        """A boto3 client for the stack's embedded AWS (or its Lambda endpoint for "lambda")."""
        endpoint = self.lambda_endpoint if service == "lambda" else self.aws_endpoint
        return boto3.session.Session(
            aws_access_key_id="local", aws_secret_access_key="local", region_name=self.region
        ).client(service, endpoint_url=endpoint, config=Config(retries={"mode": "standard"}))

    @property
    def api_key(self) -> str | None:
        """The stack's own admin API key (from its READY line)."""
        return self.info.get("api_key")

    def request(
        self,
        method: str,
        path: str,
        body: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
        api_key: str | object | None = STACK_KEY,
    ) -> Answer:
        """One HTTP request to the API (``path`` relative to api_url); redirects are not followed.
        It sends the stack's admin key as X-Api-Key unless ``api_key`` (a key, or None for none)
        or ``headers`` say otherwise."""
        key = self.api_key if api_key is STACK_KEY else api_key
        sent = dict(headers or {})
        if isinstance(key, str) and not any(name.lower() == "x-api-key" for name in sent):
            sent["X-Api-Key"] = key
        return http_request(self.api_url, method, path, body, sent, timeout)

    def post_json(self, path: str, payload: Any, api_key: str | object | None = STACK_KEY) -> Answer:
        return self.request(
            "POST", path, json.dumps(payload), {"Content-Type": "application/json"}, api_key=api_key
        )

    def log(self) -> str:
        """Everything the stack printed so far (banner, function logs)."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout: float = START_TIMEOUT) -> "RunningStack":
        """Start the subprocess and wait for its READY line."""
        with self.log_path.open("ab") as log:
            offset = log.tell()
            self.process = subprocess.Popen(
                [sys.executable, "-m", "local_stack", *self.args],
                cwd=PROJECT_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                # A process group of its own, which kill() can end whole without touching pytest's.
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.log()[offset:].splitlines():
                if line.startswith(READY_PREFIX):
                    self.info = json.loads(line.removeprefix(READY_PREFIX))
                    return self
            if self.process.poll() is not None:
                raise RuntimeError(f"the local stack exited with {self.process.returncode}:\n{self._tail()}")
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"the local stack was not ready after {timeout} s:\n{self._tail()}")

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
        workers = _descendants(self.process.pid)
        os.killpg(self.process.pid, signal.SIGKILL)
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(5)
        self.killed = True

    def restart(self, timeout: float = START_TIMEOUT) -> "RunningStack":
        """Stop cleanly (unless kill() ended it) and start again with the same data dir and ports."""
        if not self.killed:
            assert self.stop() == 0, f"the local stack did not stop cleanly:\n{self._tail()}"
        self.killed = False
        self.args = _with_port(
            _with_port(self.args, "--api-port", self.api_url), "--aws-port", self.aws_endpoint
        )
        return self.start(timeout)

    def _tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])


def _descendants(pid: int) -> list[int]:
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


def _with_port(args: list[str], option: str, url: str) -> list[str]:
    port = str(urlsplit(url).port)
    index = args.index(option)
    return [*args[: index + 1], port, *args[index + 2 :]]


StartStack = Callable[..., RunningStack]


def _factory(directory: Path, started: list[RunningStack]) -> StartStack:
    def start_stack(
        *extra_args: str,
        time_scale: float = 1.0,
        params: dict[str, Any] | None = None,
        faults: list[str] | None = None,
        data_dir: Path | None = None,
        timeout: float = START_TIMEOUT,
        env: dict[str, str] | None = None,
    ) -> RunningStack:
        """Start a local stack on free ports; it is stopped when the test (or module) ends."""
        number = len(started)
        state = data_dir or directory / f"data-{number}"
        args = [
            "--api-port",
            "0",
            "--aws-port",
            "0",
            "--data-dir",
            str(state),
            "--time-scale",
            str(time_scale),
        ]
        for key, value in (params or {}).items():
            args += ["--param", f"{key}={value}"]
        for fault in faults or []:
            args += ["--fault", fault]
        running = RunningStack([*args, *extra_args], state, directory / f"stack-{number}.log", env=env or {})
        started.append(running)
        return running.start(timeout)

    return start_stack


@pytest.fixture
def start_stack(tmp_path: Path) -> Iterator[StartStack]:
    """A factory of local stacks for one test; each is stopped when the test ends."""
    started: list[RunningStack] = []
    yield _factory(tmp_path, started)
    for running in started:
        running.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """One local stack with default settings, shared by the tests of a module."""
    started: list[RunningStack] = []
    yield _factory(tmp_path_factory.mktemp("stack"), started)()
    for running in started:
        running.stop()


# The `deployment` fixture (the local stack, or a deployed stack under `make acceptance`) and the
# skip of local-only tests against a deployed stack. Imported last: it builds on the names above.
from tests.e2e.deployment import deployment, pytest_runtest_setup  # noqa: E402, F401
