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
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config

from local_stack.harness import (
    PROJECT_ROOT,
    READY_PREFIX,
    START_TIMEOUT,
    STOP_TIMEOUT,
    StackProcess,
    descendants,
)

__all__ = ["PROJECT_ROOT", "READY_PREFIX", "START_TIMEOUT", "STOP_TIMEOUT", "RunningStack"]

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


class RunningStack(StackProcess):
    """A local stack subprocess (local_stack.harness) and what it printed in its READY line."""

    def __init__(
        self, args: list[str], data_dir: Path, log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        super().__init__(args, log_path, env)
        self.data_dir = data_dir
        self.info: dict[str, Any] = {}
        self.killed = False

    @property
    def api_url(self) -> str:
        """Base URL of the REST API, ending with "/"."""
        return str(self.info["api_url"])

    @property
    def aws_endpoint(self) -> str:
        return str(self.info["aws_endpoint"])

    @property
    def edge_url(self) -> str:
        """Base URL of the local edge (the distribution's cache in front of the API), ending with
        "/"; short URLs name it."""
        assert self.info.get("edge_url"), "this stack has no edge (its template's Edge is off)"
        return str(self.info["edge_url"])

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

    def workers(self, logical_id: str) -> list[int]:
        """The process ids of a function's execution environments in this stack: its descendants
        whose command line is `... local_stack.awslambda.bootstrap <function name> ...` (a worker
        forked from the zygote shows it too; its /proc environ is the zygote's)."""
        assert self.process is not None
        name = self.resources[logical_id].encode()
        found = []
        for pid in descendants(self.process.pid):
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if b"local_stack.awslambda.bootstrap" in argv and name in argv:
                    found.append(pid)
        return found

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

    def start(self, timeout: float = START_TIMEOUT) -> "RunningStack":
        """Start the subprocess and wait for its READY line."""
        self.info = self.launch(timeout)
        return self

    def kill(self) -> None:
        super().kill()
        self.killed = True

    def restart(self, timeout: float = START_TIMEOUT) -> "RunningStack":
        """Stop cleanly (unless kill() ended it) and start again with the same data dir and ports."""
        if not self.killed:
            assert self.stop() == 0, f"the local stack did not stop cleanly:\n{self.tail()}"
        self.killed = False
        self.args = _with_port(
            _with_port(self.args, "--api-port", self.api_url), "--aws-port", self.aws_endpoint
        )
        if self.info.get("edge_url"):
            self.args = _with_port(self.args, "--edge-port", self.edge_url)
        if self.info.get("auth_url"):
            self.args = _with_port(self.args, "--auth-port", self.info["auth_url"])
        return self.start(timeout)


def _with_port(args: list[str], option: str, url: str) -> list[str]:
    port = str(urlsplit(url).port)
    if option not in args:
        return [*args, option, port]
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
