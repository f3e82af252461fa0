"""Lambda, locally: each function runs in worker processes (its execution environments), with its
own environment from the template, warm workers reused, concurrent invocations in parallel.

Separate processes, not threads, because functions differ in environment variables and keep
module-level caches, exactly as separate Lambda containers do. On Linux each worker is forked from
one zygote process that already imported the libraries every function imports (forking.py,
zygote.py), so that twenty workers do not hold twenty copies of boto3; elsewhere each worker is an
interpreter of its own."""

import enum
import json
import logging
import math
import os
import secrets
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from local_stack.awslambda.destinations import AsyncConfig, DestinationSender, failure_record
from local_stack.awslambda.forking import ForkedProcess, Zygote
from local_stack.awslambda.log_format import FunctionOutput, LogFormat
from local_stack.cloudformation.resources import FunctionSpec
from local_stack.cloudformation.template import PROJECT_ROOT
from local_stack.faults import AsyncDuplicator
from local_stack.iam import function_credentials

log = logging.getLogger(__name__)

# Lambda gives a function's init phase 10 s, and when that is not enough retries the init at the
# first invocation under the function's own timeout ("Lambda execution environment lifecycle",
# https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html): an environment may
# take 10 s + Timeout to become ready. Never less than 30 s here: imports on a busy laptop are slow.
_INIT_PHASE_SECONDS = 10.0
_INIT_TIMEOUT_SECONDS = 30.0
# Lambda retries a failed asynchronous invocation twice, one and then two minutes later (fewer when
# the function's EventInvokeConfig says so: local_stack/awslambda/destinations.py).
_ASYNC_RETRY_DELAYS_SECONDS = (60.0, 120.0)
_KILL_GRACE_SECONDS = 2.0
# How long an answer waits for its invocation's output to be read (microseconds when all is well; a
# stalled reader must not hold the answer for longer).
_OUTPUT_READ_SECONDS = 2.0
# Lambda keeps an idle execution environment warm for a while, then reclaims it; for how long is
# not documented (minutes, as observed). Reclaiming here too keeps a long-running stack from holding
# every worker that a burst once needed.
IDLE_RECLAIM_SECONDS = 300.0
# Lambda's payload limits: 6 MB for a synchronous response (and request), 1 MB for an async event.
SYNC_PAYLOAD_LIMIT_BYTES = 6 * 1024 * 1024
ASYNC_PAYLOAD_LIMIT_BYTES = 1024 * 1024
_INHERITED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
# What Lambda sets alike for every Python function (and the zygote imports under).
_RUNTIME_ENV = {
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
    "PYTHONUNBUFFERED": "1",
    "TZ": "UTC",
    # There is no X-Ray daemon on this machine.
    "POWERTOOLS_TRACE_DISABLED": "true",
}


class FunctionThrottledError(Exception):
    """Every execution environment of the function is busy (Lambda's TooManyRequestsException)."""


@dataclass(frozen=True)
class Invocation:
    """The outcome of one invocation: a result, or an error in Lambda's error shape."""

    request_id: str
    result: Any = None
    error: dict[str, Any] | None = None

    @property
    def payload(self) -> bytes:
        """What Lambda's Invoke API returns as the response payload."""
        body = self.result if self.error is None else {**self.error, "requestId": self.request_id}
        return json.dumps(body).encode()


@dataclass(frozen=True)
class RuntimeSettings:
    """What every worker shares: the endpoints it talks to and the knobs of the local stack."""

    aws_endpoint: str
    lambda_endpoint: str
    region: str
    max_concurrency: int = 16
    time_scale: float = 1.0
    async_retries: int = 2
    faults: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    log_format: LogFormat = "human"
    duplicate_async: float = 0.0  # the duplicate-async fault's probability
    # The local API Gateway, which functions reach as their execute-api endpoint (stage cache).
    execute_api_endpoint: str = ""
    # Each function's EventInvokeConfig (retries, on-failure destination), by function name.
    async_configs: Mapping[str, AsyncConfig] = field(default_factory=dict)
    # Workers forked from a preloaded zygote (Linux), or each started as its own interpreter.
    fork_workers: bool = sys.platform == "linux"
    # How long a worker may stay idle before it is reclaimed (machine seconds, not scaled).
    idle_reclaim_seconds: float = IDLE_RECLAIM_SECONDS
    # The secret of the functions' keys (local_stack/iam/signing_secret.py); random when not given.
    function_secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))


class _Silence(enum.Enum):
    """Why a worker gave no answer."""

    TIMED_OUT = "timed out"
    CLOSED = "closed"


_TIMED_OUT, _CLOSED = _Silence.TIMED_OUT, _Silence.CLOSED


class Worker:
    """One execution environment: a process that imported the handler and waits for events."""

    def __init__(
        self,
        spec: FunctionSpec,
        settings: RuntimeSettings,
        zygote: Zygote | None = None,
        output_sink: Callable[[str], None] | None = None,
    ) -> None:
        self.spec = spec
        argv = [
            sys.executable,
            "-m",
            "local_stack.awslambda.bootstrap",
            spec.name,
            spec.handler,
            json.dumps(settings.faults.get(spec.logical_id, {})),
        ]
        environment = worker_environment(spec, settings)
        self.process: subprocess.Popen[str] | ForkedProcess
        if zygote is not None:
            try:
                self.process = zygote.spawn(argv, environment, str(spec.code_dir))
            except OSError as exc:
                raise WorkerInitError({"errorMessage": f"The worker did not start: {exc}"}) from exc
        else:
            self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=spec.code_dir,
                env=environment,
                # Its own session: Ctrl-C reaches the local stack, which then stops workers in order.
                start_new_session=True,
                text=True,
                encoding="utf-8",
                errors="replace",
            )
        # The function's own output (its logs, prints, tracebacks), read from the start so that a
        # full pipe can never stall the worker.
        self.output = FunctionOutput(spec.logical_id, settings.log_format, sink=output_sink)
        self.output.follow(self.process.stderr)

    def wait_ready(self) -> None:
        """Wait for the handler's import (the init phase); WorkerInitError if it fails."""
        ready = self._read(max(_INIT_TIMEOUT_SECONDS, _INIT_PHASE_SECONDS + self.spec.timeout_seconds))
        if not isinstance(ready, dict) or "init_error" in ready:
            self.kill()
            error = (ready if isinstance(ready, dict) else {}).get("init_error")
            raise WorkerInitError(error or {"errorMessage": "The worker did not start"})

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def invoke(self, event: Any, request_id: str, invoked_arn: str, background: bool = False) -> Invocation:
        """Run one event; a timeout kills the environment, as Lambda does. ``background``: an
        asynchronous invocation (nobody waits for its answer, so its log says more)."""
        self.output.renderer.background = background
        timeout = self.spec.timeout_seconds
        request = {
            "request_id": request_id,
            "event": event,
            "deadline": time.time() + timeout,
            "invoked_function_arn": invoked_arn,
        }
        started = time.monotonic()
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            return Invocation(request_id, error=_runtime_error("Runtime.ExitError", "The worker is gone"))
        answer = self._read(timeout + 1.0)
        if isinstance(answer, dict) and "max_memory_kb" in answer:
            if self.output.kept:
                # A line the invocation wrote to a subscribed log group (a click's destination) is
                # kept before its answer goes out, as the access log's line is: kill -9 loses neither.
                self.output.read_to_end(request_id, _OUTPUT_READ_SECONDS)
            self._report(request_id, started, int(answer["max_memory_kb"]))
        if answer is _TIMED_OUT:
            self.kill()
            message = f"Task timed out after {timeout:.2f} seconds"
            return Invocation(request_id, error=_runtime_error("Sandbox.Timedout", message))
        if not isinstance(answer, dict):
            # The protocol pipe closed (or spoke nonsense) before the deadline: the runtime died. Lambda
            # reports that as Runtime.ExitError, "RequestId: ... Error: Runtime exited with error: exit
            # status 129" (AWS knowledge center, lambda-runtime-error), never as a timeout.
            message = f"RequestId: {request_id} Error: {self._exit_message()}"
            return Invocation(request_id, error=_runtime_error("Runtime.ExitError", message))
        if "result" in answer and len(json.dumps(answer["result"])) > SYNC_PAYLOAD_LIMIT_BYTES:
            limit = SYNC_PAYLOAD_LIMIT_BYTES
            message = f"Response payload size exceeded maximum allowed payload size ({limit} bytes)."
            return Invocation(request_id, error=_runtime_error("Function.ResponseSizeTooLarge", message))
        return Invocation(request_id, result=answer.get("result"), error=answer.get("error"))

    def _report(self, request_id: str, started: float, max_memory_kb: int) -> None:
        """The line Lambda logs at the end of each invocation (Max Memory Used: the execution
        environment's peak resident memory), prefixed with the function's name."""
        duration_ms = (time.monotonic() - started) * 1000
        log.info(
            "%s REPORT RequestId: %s Duration: %.2f ms Billed Duration: %d ms Memory Size: %d MB "
            "Max Memory Used: %d MB",
            self.spec.name,
            request_id,
            duration_ms,
            math.ceil(duration_ms),
            self.spec.memory_mb,
            math.ceil(max_memory_kb / 1024),
        )

    def kill(self) -> None:
        """Stop the process: politely, then for sure."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(_KILL_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()

    def _read(self, timeout: float) -> dict[str, Any] | _Silence:
        """The next answer line; _TIMED_OUT when none came in ``timeout`` seconds, _CLOSED when the
        pipe closed (the process exited) or the line was not a JSON object."""
        stdout: IO[str] | None = self.process.stdout
        assert stdout is not None
        try:
            readable, _, _ = select.select([stdout], [], [], timeout)
            if not readable:
                return _TIMED_OUT
            line = stdout.readline()
            answer = json.loads(line) if line else None
        except (OSError, ValueError):  # closed under us (the stack is stopping), or garbled
            return _CLOSED
        return answer if isinstance(answer, dict) else _CLOSED

    def _exit_message(self) -> str:
        """Lambda's message for a runtime that exited mid-invocation, after reaping the process."""
        code: int | None
        try:
            code = self.process.wait(_KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            # The pipe closed but the process lingers (exiting, or it closed the pipe itself).
            self.kill()
            code = self.process.returncode
        self.kill()
        # Lambda reports "exit status N" for an exit and "signal: killed" for a kill -9.
        if code is not None and code < 0:
            return f"Runtime exited with error: signal: {_signal_name(-code)}"
        return f"Runtime exited with error: exit status {code}"


class WorkerInitError(Exception):
    """The handler could not be imported (Lambda's Runtime.ImportModuleError and friends)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("errorMessage"))
        self.error = error


class FunctionPool:
    """The execution environments of one function: warm ones reused, new ones up to a cap."""

    def __init__(self, spec: FunctionSpec, settings: RuntimeSettings, zygote: Zygote | None = None) -> None:
        self.spec = spec
        self._settings = settings
        self._zygote = zygote
        self._slots = threading.BoundedSemaphore(settings.max_concurrency)
        self._idle: list[tuple[Worker, float]] = []  # with when each became idle, oldest first
        self._all: set[Worker] = set()
        self._lock = threading.Lock()
        self._closed = False
        # Where its workers' output lines also go (its log group, where subscribed).
        self.output_sink: Callable[[str], None] | None = None

    def invoke(self, event: Any, slot_timeout: float | None, background: bool = False) -> Invocation:
        """Run ``event`` on a warm worker, or a new one; wait at most ``slot_timeout`` for a slot."""
        request_id = str(uuid.uuid4())
        if not self._slots.acquire(timeout=slot_timeout):
            raise FunctionThrottledError(self.spec.name)
        try:
            try:
                worker = self._take_worker()
            except WorkerInitError as exc:
                return Invocation(request_id, error={**exc.error, "errorType": "Runtime.ImportModuleError"})
            invocation = worker.invoke(event, request_id, self.spec.arn, background)
            self._give_back(worker)
            return invocation
        finally:
            self._slots.release()

    def warm_up(self) -> None:
        """Start one environment ahead of the first request (a provisioned-concurrency of one)."""
        try:
            worker = self._take_worker()
        except WorkerInitError as exc:
            log.warning("%s failed to start: %s", self.spec.logical_id, exc)
            return
        self._give_back(worker)

    def reclaim_idle(self, idle_seconds: float) -> int:
        """Kill the workers idle for ``idle_seconds`` or more; how many."""
        cutoff = time.monotonic() - idle_seconds
        with self._lock:
            stale = [worker for worker, since in self._idle if since <= cutoff]
            self._idle = [(worker, since) for worker, since in self._idle if since > cutoff]
            self._all.difference_update(stale)
        for worker in stale:
            worker.kill()
        return len(stale)

    def close(self) -> None:
        """Kill every worker, busy or not."""
        with self._lock:
            self._closed = True
            workers = list(self._all)
            self._idle.clear()
        for worker in workers:
            worker.kill()

    def _take_worker(self) -> Worker:
        with self._lock:
            if self._closed:
                raise WorkerInitError({"errorMessage": "The local stack is stopping"})
            while self._idle:
                worker, _ = self._idle.pop()  # the most recently used: the others may go idle for good
                if worker.alive:
                    return worker
                self._all.discard(worker)
        # Known to the pool from its first moment, so that close() kills one still starting too
        # (a worker born while the stack stops must not outlive it).
        worker = Worker(self.spec, self._settings, self._zygote, self.output_sink)
        with self._lock:
            closed = self._closed
            if not closed:
                self._all.add(worker)
        if closed:
            worker.kill()
            raise WorkerInitError({"errorMessage": "The local stack is stopping"})
        try:
            worker.wait_ready()
        except WorkerInitError:
            with self._lock:
                self._all.discard(worker)
            raise
        return worker

    def _give_back(self, worker: Worker) -> None:
        with self._lock:
            if worker.alive and not self._closed:
                self._idle.append((worker, time.monotonic()))
                return
            self._all.discard(worker)
        worker.kill()


class EventKeeper(Protocol):
    """``local_stack.awslambda.event_queue.AsyncEventQueue``."""

    def event_accepted(self, function: str, event: Any) -> Callable[[], None]: ...


class LambdaRuntime:
    """Invokes the template's functions by name, synchronously or in the background."""

    def __init__(self, functions: Mapping[str, FunctionSpec], settings: RuntimeSettings) -> None:
        self._settings = settings
        self._zygote = Zygote(runtime_environment(), str(PROJECT_ROOT)) if settings.fork_workers else None
        self._pools = {spec.name: FunctionPool(spec, settings, self._zygote) for spec in functions.values()}
        self._stopping = threading.Event()
        self._threads: set[threading.Thread] = set()
        self._threads_lock = threading.Lock()
        self._event_queue: EventKeeper | None = None
        self._duplicator = AsyncDuplicator(settings.duplicate_async, settings.time_scale)
        self._destinations = DestinationSender(
            settings.aws_endpoint, settings.region, self._invoke_destination
        )
        threading.Thread(target=self._reclaim_idle_workers, name="lambda-reclaim", daemon=True).start()

    def function(self, name_or_arn: str) -> FunctionSpec | None:
        """The function that a name, an ARN or a partial ARN designates."""
        name = name_or_arn.split(":function:", 1)[-1].split(":", 1)[0]
        pool = self._pools.get(name)
        return pool.spec if pool else None

    def send_output(self, name: str, sink: Callable[[str], None]) -> None:
        """Hand every line that ``name``'s workers write to ``sink`` too (its log group), from its
        next worker on: set before the function's workers start."""
        self._pools[name].output_sink = sink

    def invoke(self, name: str, event: Any, slot_timeout: float | None = 10.0) -> Invocation:
        """RequestResponse: run and wait for the outcome."""
        return self._pools[name].invoke(event, slot_timeout)

    def keep_events(self, queue: "EventKeeper | None") -> None:
        """Keep the events of ``invoke_event`` in ``queue`` (the durable state's) until their
        invocation is over."""
        self._event_queue = queue

    def invoke_event(self, name: str, event: Any) -> str:
        """Lambda's Invoke with InvocationType Event: the event joins Lambda's queue (kept durably
        when the stack persists, see awslambda/event_queue.py), then runs as ``invoke_async``."""
        queue = self._event_queue
        return self.invoke_async(
            name, event, queue.event_accepted(name, event) if queue is not None else None
        )

    def invoke_async(self, name: str, event: Any, on_done: Callable[[], None] | None = None) -> str:
        """Event: queue the invocation and return at once; failures are retried like Lambda's. Under
        the duplicate-async fault the event may be delivered a second time, as Lambda's queue may.
        ``on_done`` is called once the event has left Lambda's queue for good (an invocation
        succeeded, or the last retry failed), never when the runtime stopped first."""
        request_id = str(uuid.uuid4())
        self._deliver(name, event, request_id, None, on_done)
        if (delay := self._duplicator.second_delivery()) is not None:
            self._deliver(name, event, request_id, delay)
        return request_id

    def _invoke_destination(self, function_arn: str, record: Any) -> None:
        """A Lambda destination: the record is the function's event, invoked asynchronously."""
        spec = self.function(function_arn)
        if spec is None:
            raise LookupError(f"no function {function_arn}")
        self.invoke_async(spec.name, record)

    def _deliver(
        self,
        name: str,
        event: Any,
        request_id: str,
        duplicate_after: float | None,
        on_done: Callable[[], None] | None = None,
    ) -> None:
        thread = threading.Thread(
            target=self._run_async,
            args=(name, event, request_id, duplicate_after, on_done),
            name=f"async-{name}-{request_id[:8]}" + ("-duplicate" if duplicate_after is not None else ""),
            daemon=True,
        )
        with self._threads_lock:
            self._threads.add(thread)
        thread.start()

    def warm_up(self, names: list[str], *, wait: bool = True) -> None:
        """Start one environment of each named function, in parallel (``wait``: until they are up)."""
        threads = [threading.Thread(target=self._pools[name].warm_up, daemon=True) for name in names]
        for thread in threads:
            thread.start()
        for thread in threads if wait else ():
            thread.join(_INIT_TIMEOUT_SECONDS)

    def _reclaim_idle_workers(self) -> None:
        idle_seconds = self._settings.idle_reclaim_seconds
        while not self._stopping.wait(min(30.0, idle_seconds / 2)):
            for pool in self._pools.values():
                if reclaimed := pool.reclaim_idle(idle_seconds):
                    log.debug("%s: reclaimed %d idle environment(s)", pool.spec.logical_id, reclaimed)

    def stop(self) -> None:
        """Stop accepting work and kill every worker, even those mid-invocation."""
        self._stopping.set()
        for pool in self._pools.values():
            pool.close()
        if self._zygote is not None:
            self._zygote.close()

    def _run_async(
        self,
        name: str,
        event: Any,
        request_id: str,
        duplicate_after: float | None,
        on_done: Callable[[], None] | None,
    ) -> None:
        try:
            if duplicate_after is not None:
                if self._stopping.wait(duplicate_after):
                    return
                # One line per duplicate, so that a test (or a person) can count them.
                log.info(
                    "duplicate delivery of Event %s to %s (fault duplicate-async, %s)",
                    request_id,
                    name,
                    "in parallel" if duplicate_after == 0 else f"{duplicate_after:.1f} s later",
                )
            config = self._settings.async_configs.get(name, AsyncConfig())
            retries = min(config.maximum_retry_attempts, self._settings.async_retries)
            delays = _ASYNC_RETRY_DELAYS_SECONDS[:retries]
            invocation = None
            for attempt in range(len(delays) + 1):
                if self._stopping.is_set():
                    return
                # Asynchronous events wait in Lambda's queue while the function is at its limit.
                invocation = self._pools[name].invoke(event, slot_timeout=None, background=True)
                if self._stopping.is_set():
                    return
                if invocation.error is None:
                    if on_done is not None:
                        on_done()
                    return
                log.warning(
                    "%s failed (%s: %s), attempt %d",
                    name,
                    invocation.error.get("errorType"),
                    invocation.error.get("errorMessage"),
                    attempt + 1,
                )
                if attempt < len(delays) and self._stopping.wait(delays[attempt] / self._settings.time_scale):
                    return
            if config.on_failure is not None and invocation is not None and invocation.error is not None:
                # The retries are spent: Lambda sends the invocation record to the destination.
                record = failure_record(
                    request_id=request_id,
                    function_arn=self._pools[name].spec.arn,
                    event=event,
                    error=invocation.error,
                    invoke_count=len(delays) + 1,
                )
                if self._destinations.send(config.on_failure, record):
                    log.info("%s: record of failed Event %s sent to %s", name, request_id, config.on_failure)
            if on_done is not None:  # the retries are spent: Lambda drops the event
                on_done()
        finally:
            with self._threads_lock:
                self._threads.discard(threading.current_thread())


def runtime_environment() -> dict[str, str]:
    """What every worker's environment holds alike: the zygote's."""
    inherited = {key: os.environ[key] for key in _INHERITED_ENV if key in os.environ}
    return {**inherited, **_RUNTIME_ENV}


def worker_environment(spec: FunctionSpec, settings: RuntimeSettings) -> dict[str, str]:
    """A worker's environment: the function's variables from the template, then what Lambda
    itself sets (which a function cannot override), then the local endpoints."""
    python_path = [str(spec.code_dir), *(str(layer) for layer in spec.layer_dirs), str(PROJECT_ROOT)]
    inherited = {key: os.environ[key] for key in _INHERITED_ENV if key in os.environ}
    return {
        **inherited,
        **spec.environment,
        "AWS_LAMBDA_FUNCTION_NAME": spec.name,
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{spec.name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": f"local/[$LATEST]{uuid.uuid4().hex}",
        **_RUNTIME_ENV,
        "AWS_REGION": settings.region,
        "AWS_DEFAULT_REGION": settings.region,
        "LAMBDA_TASK_ROOT": str(spec.code_dir),
        "PYTHONPATH": os.pathsep.join(python_path),
        # The function's own key: the embedded AWS authorises its calls against its role.
        **function_credentials(spec.name, settings.function_secret),
        "AWS_ENDPOINT_URL": settings.aws_endpoint,
        "AWS_ENDPOINT_URL_LAMBDA": settings.lambda_endpoint,
        "AWS_ENDPOINT_URL_EXECUTE_API": settings.execute_api_endpoint,
        # The stack lives on loopback: webhooks may be delivered to receivers there
        # (shortener.webhooks.destinations). Never set on AWS.
        "LOOPBACK_RECEIVERS": "true",
    }


# How Lambda's runtime interface (written in Go) names the signals that end a runtime.
_SIGNAL_WORDS = {
    signal.SIGKILL: "killed",
    signal.SIGTERM: "terminated",
    signal.SIGSEGV: "segmentation fault",
    signal.SIGABRT: "aborted",
}


def _signal_name(number: int) -> str:
    try:
        known = signal.Signals(number)
    except ValueError:
        return str(number)
    return _SIGNAL_WORDS.get(known, known.name.removeprefix("SIG").lower())


def _runtime_error(error_type: str, message: str) -> dict[str, Any]:
    return {"errorType": error_type, "errorMessage": message, "stackTrace": []}
