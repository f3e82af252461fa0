"""Functions in worker processes, and the Lambda Invoke endpoint that boto3 talks to."""

import http.client
import json
import logging
import os
import signal
import sys
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from local_stack.awslambda.destinations import AsyncConfig
from local_stack.awslambda.endpoint import LambdaEndpoint
from local_stack.awslambda.runtime import LambdaRuntime, RuntimeSettings
from local_stack.cloudformation.resources import FunctionSpec
from tests.support.servers import serving

pytestmark = pytest.mark.integration

HANDLERS = textwrap.dedent(
    """
    import json
    import os
    import sys
    import time

    INVOCATIONS = 0  # module state: shows that a warm worker is reused

    def echo(event, context):
        global INVOCATIONS
        INVOCATIONS += 1
        print("handler output goes to the log, not the protocol")
        return {
            "event": event,
            "invocations": INVOCATIONS,
            "remaining_ms": context.get_remaining_time_in_millis(),
            "function_name": context.function_name,
            "arn": context.invoked_function_arn,
            "endpoint": os.environ["AWS_ENDPOINT_URL"],
            "greeting": os.environ["GREETING"],
            "pid": os.getpid(),
            "parent": os.getppid(),
            "path": sys.path,
        }

    def fail(event, context):
        raise ValueError("bad input")

    def sleep(event, context):
        time.sleep(event["seconds"])
        return "slept"

    def rendezvous(event, context):
        # Each invocation signs in, then waits for the others: only invocations that run at the
        # same time can all meet.
        folder = event["folder"]
        open(os.path.join(folder, context.aws_request_id), "w").close()
        deadline = time.monotonic() + event["wait_seconds"]
        outcome = "alone"
        while time.monotonic() < deadline:
            if len(os.listdir(folder)) >= event["parties"]:
                outcome = "met"
                break
            time.sleep(0.02)
        if event.get("outcome"):
            with open(event["outcome"] + ".part", "w") as file:
                file.write(outcome)
            os.rename(event["outcome"] + ".part", event["outcome"])  # seen whole or not at all
        return outcome

    def record(event, context):
        # One file per delivery: shows how many times the event arrived.
        open(os.path.join(event["folder"], context.aws_request_id + "-" + str(time.time_ns())), "w").close()

    def fail_and_record(event, context):
        open(os.path.join(event["folder"], "attempt-" + str(time.time_ns())), "w").close()
        raise ValueError("bad input")

    def keep(event, context):
        # An on-failure destination: keeps each invocation record it is given.
        folder = event["requestPayload"]["folder"]
        with open(os.path.join(folder, "record-" + context.aws_request_id + ".part"), "w") as file:
            json.dump(event, file)
        os.rename(file.name, file.name.removesuffix(".part"))

    def crash(event, context):
        if event.get("signal"):
            os.kill(os.getpid(), event["signal"])
        if event.get("linger"):
            # The runtime's answer pipe closes first, and the process ends a moment later: the
            # stack sees the end of the pipe while the process is still alive.
            for fd in os.listdir("/proc/self/fd"):
                if int(fd) > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                    os.close(int(fd))
            time.sleep(event["linger"])
        os._exit(3)
    """
)


@pytest.fixture
def code_dir(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(HANDLERS)
    return tmp_path


def spec(code_dir: Path, name: str, handler: str, timeout: int = 5) -> FunctionSpec:
    return FunctionSpec(
        logical_id=name,
        name=name,
        arn=f"arn:aws:lambda:us-east-1:123456789012:function:{name}",
        code_dir=code_dir,
        handler=handler,
        timeout_seconds=timeout,
        memory_mb=128,
        environment={"GREETING": "hello"},
    )


FORKING = [True, False] if sys.platform == "linux" else [False]


@pytest.fixture(params=FORKING, ids=lambda forked: "forked" if forked else "interpreter")
def runtime(code_dir: Path, request: pytest.FixtureRequest) -> Iterator[LambdaRuntime]:
    functions = {
        "echo": spec(code_dir, "echo", "app.echo"),
        "fail": spec(code_dir, "fail", "app.fail"),
        "sleep": spec(code_dir, "sleep", "app.sleep", timeout=1),
        "crash": spec(code_dir, "crash", "app.crash", timeout=60),
        "rendezvous": spec(code_dir, "rendezvous", "app.rendezvous", timeout=60),
    }
    settings = RuntimeSettings(
        "http://127.0.0.1:1", "http://127.0.0.1:2", "us-east-1", max_concurrency=4, fork_workers=request.param
    )
    running = LambdaRuntime(functions, settings)
    yield running
    running.stop()


def test_an_invocation_gets_the_event_the_context_and_the_environment(runtime: LambdaRuntime) -> None:
    invocation = runtime.invoke("echo", {"a": 1})
    assert invocation.error is None
    result = invocation.result
    assert result["event"] == {"a": 1}
    assert result["function_name"] == "echo"
    assert result["arn"] == "arn:aws:lambda:us-east-1:123456789012:function:echo"
    assert 0 < result["remaining_ms"] <= 5000
    assert (result["endpoint"], result["greeting"]) == ("http://127.0.0.1:1", "hello")


def _proc(pid: int, name: str) -> str:
    return Path(f"/proc/{pid}/{name}").read_text(errors="replace")


def _shared_kib(pid: int) -> int:
    sizes = dict(line.split()[:2] for line in _proc(pid, "smaps_rollup").splitlines()[1:])
    return int(sizes["Shared_Clean:"]) + int(sizes["Shared_Dirty:"])


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
def test_workers_are_forked_from_one_zygote_that_holds_the_libraries_they_share(code_dir: Path) -> None:
    functions = {"echo": spec(code_dir, "echo", "app.echo"), "echo2": spec(code_dir, "echo2", "app.echo")}
    runtime = LambdaRuntime(
        functions, RuntimeSettings("http://127.0.0.1:1", "http://127.0.0.1:2", "us-east-1")
    )
    try:
        # When two functions run
        first, second = (runtime.invoke(name, {}).result for name in ("echo", "echo2"))
        # Then both workers are children of one process, the zygote, which preloaded boto3
        assert first["parent"] == second["parent"] != first["pid"] != second["pid"]
        assert "local_stack.awslambda.zygote" in _proc(first["parent"], "cmdline")
        # And each is still its own function's environment: its command line names it, its import
        # path starts with its own folder, its variables are its own
        for result, name in ((first, "echo"), (second, "echo2")):
            argv = _proc(result["pid"], "cmdline").split("\0")
            assert argv[2:5] == ["local_stack.awslambda.bootstrap", name, "app.echo"]
            assert result["path"][0] == str(code_dir)
            assert (result["function_name"], result["greeting"]) == (name, "hello")
        # And the zygote's pages are shared with them, not copied (boto3 alone is over 20 MB)
        assert _shared_kib(first["pid"]) > 20 * 1024
    finally:
        runtime.stop()
    # And stopping the runtime stops the zygote
    time.sleep(0.5)
    assert not Path(f"/proc/{first['parent']}").exists() or "Z" in _proc(first["parent"], "stat").split()[2]


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
def test_a_zygote_that_dies_is_replaced_and_its_workers_end(code_dir: Path) -> None:
    runtime = LambdaRuntime(
        {"echo": spec(code_dir, "echo", "app.echo")},
        RuntimeSettings("http://127.0.0.1:1", "http://127.0.0.1:2", "us-east-1"),
    )
    try:
        before = runtime.invoke("echo", {}).result
        # When the zygote is killed
        os.kill(before["parent"], signal.SIGKILL)
        # Then its worker ends within seconds (it watches its parent)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{before['pid']}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not Path(f"/proc/{before['pid']}").exists()
        # And the next invocation runs in a new environment forked from a new zygote
        after = runtime.invoke("echo", {}).result
        assert after["invocations"] == 1
        assert after["parent"] != before["parent"]
    finally:
        runtime.stop()


def test_a_warm_worker_is_reused(runtime: LambdaRuntime) -> None:
    counts = [runtime.invoke("echo", {}).result["invocations"] for _ in range(3)]
    assert counts == [1, 2, 3]


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_an_idle_worker_is_reclaimed_and_a_busy_one_is_not(code_dir: Path) -> None:
    settings = RuntimeSettings(
        "http://127.0.0.1:1", "http://127.0.0.1:2", "us-east-1", idle_reclaim_seconds=1.0
    )
    runtime = LambdaRuntime({"echo": spec(code_dir, "echo", "app.echo")}, settings)
    try:
        # Given a worker used every 0.3 s for 2 s: never idle for its 1 s
        first = runtime.invoke("echo", {}).result
        for _ in range(6):
            time.sleep(0.3)
            kept = runtime.invoke("echo", {}).result
        assert (kept["pid"], kept["invocations"]) == (first["pid"], 7)
        # When it then stays idle for longer than that
        time.sleep(2.5)
        # Then its process is gone, and the next invocation is a cold start in a new environment
        assert not Path(f"/proc/{first['pid']}").exists() or "Z" in _proc(first["pid"], "stat").split()[2]
        after = runtime.invoke("echo", {}).result
        assert after["pid"] != first["pid"] and after["invocations"] == 1
    finally:
        runtime.stop()


def test_an_exception_comes_back_in_lambdas_error_shape(runtime: LambdaRuntime) -> None:
    invocation = runtime.invoke("fail", {})
    assert invocation.error is not None
    assert (invocation.error["errorType"], invocation.error["errorMessage"]) == ("ValueError", "bad input")
    assert json.loads(invocation.payload)["requestId"] == invocation.request_id


def test_a_timeout_kills_the_environment(runtime: LambdaRuntime) -> None:
    invocation = runtime.invoke("sleep", {"seconds": 10})
    assert invocation.error is not None
    assert invocation.error["errorType"] == "Sandbox.Timedout"
    assert runtime.invoke("sleep", {"seconds": 0}).result == "slept"  # a fresh environment


def test_a_worker_that_exits_is_a_crash_not_a_timeout(runtime: LambdaRuntime) -> None:
    # When the handler's process exits mid-invocation, long before its 60 s timeout
    invocation = runtime.invoke("crash", {})
    # Then Lambda's runtime exit error comes back, with the exit status
    assert invocation.error is not None
    assert invocation.error["errorType"] == "Runtime.ExitError"
    expected = f"RequestId: {invocation.request_id} Error: Runtime exited with error: exit status 3"
    assert invocation.error["errorMessage"] == expected


def test_a_worker_killed_by_a_signal_is_a_crash_named_by_its_signal(runtime: LambdaRuntime) -> None:
    invocation = runtime.invoke("crash", {"signal": signal.SIGKILL})
    assert invocation.error is not None
    assert invocation.error["errorType"] == "Runtime.ExitError"
    assert invocation.error["errorMessage"].endswith(" Error: Runtime exited with error: signal: killed")


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds its pipes in /proc")
def test_a_worker_whose_pipe_closes_before_it_exits_is_a_crash(runtime: LambdaRuntime) -> None:
    # Given a worker whose answer pipe ends while its process is still alive (as when a process
    # is being torn down)
    invocation = runtime.invoke("crash", {"linger": 0.3})
    # Then that is a crash too, never a timeout of an invocation that had 60 s left
    assert invocation.error is not None
    assert invocation.error["errorType"] == "Runtime.ExitError"
    # And the next invocation gets a fresh environment
    assert runtime.invoke("echo", {}).error is None


def test_concurrent_invocations_run_in_parallel(runtime: LambdaRuntime, tmp_path: Path) -> None:
    # Given three invocations that each wait (up to 20 s) until all three have started
    event = {"folder": str(tmp_path), "parties": 3, "wait_seconds": 20}
    # When they are invoked at once
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda _: runtime.invoke("rendezvous", event).result, range(3)))
    # Then they all met: each ran in its own environment at the same time
    assert results == ["met"] * 3


def test_duplicate_async_delivers_an_event_twice_and_logs_it(
    code_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a runtime with the duplicate-async fault at probability 1, ten times faster
    functions = {"record": spec(code_dir, "record", "app.record")}
    settings = RuntimeSettings(
        "http://127.0.0.1:1", "http://127.0.0.1:2", "us-east-1", time_scale=10, duplicate_async=1.0
    )
    runtime = LambdaRuntime(functions, settings)
    deliveries = tmp_path / "deliveries"
    deliveries.mkdir()
    try:
        with caplog.at_level(logging.INFO, logger="local_stack.awslambda.runtime"):
            # When three events are invoked asynchronously
            for _ in range(3):
                runtime.invoke_async("record", {"folder": str(deliveries)})
            # Then each arrives twice
            assert wait_for(lambda: len(list(deliveries.iterdir())) == 6, seconds=30)
    finally:
        runtime.stop()
    # And each duplicate delivery was logged once
    duplicates = [r for r in caplog.records if r.getMessage().startswith("duplicate delivery of Event")]
    assert len(duplicates) == 3


@pytest.mark.parametrize("retries", [0, 1])
def test_a_failed_event_is_retried_as_configured_then_its_record_goes_to_the_on_failure_destination(
    code_dir: Path, tmp_path: Path, retries: int
) -> None:
    # Given a function whose EventInvokeConfig allows ``retries`` retries and names a function as
    # its on-failure destination, in a runtime 60 times faster (a retry comes 1 s later, not 60 s)
    functions = {
        "failing": spec(code_dir, "failing", "app.fail_and_record"),
        "keep": spec(code_dir, "keep", "app.keep"),
    }
    config = AsyncConfig(maximum_retry_attempts=retries, on_failure=functions["keep"].arn)
    settings = RuntimeSettings(
        "http://127.0.0.1:1",
        "http://127.0.0.1:2",
        "us-east-1",
        time_scale=60,
        async_configs={"failing": config},
    )
    runtime = LambdaRuntime(functions, settings)
    try:
        # When an event of it is invoked asynchronously, and fails every time
        request_id = runtime.invoke_async("failing", {"folder": str(tmp_path)})
        assert wait_for(lambda: list(tmp_path.glob("record-*[!t]")), seconds=30)
        time.sleep(2.5)  # any retry Lambda would not make would have come by now (2 s and 4 s)
    finally:
        runtime.stop()
    # Then it ran 1 + retries times, and one invocation record reached the destination, in
    # Lambda's shape
    assert len(list(tmp_path.glob("attempt-*"))) == 1 + retries
    [path] = [path for path in tmp_path.glob("record-*") if not path.name.endswith(".part")]
    record = json.loads(path.read_text())
    assert record["version"] == "1.0" and record["timestamp"].endswith("Z")
    assert record["requestContext"] == {
        "requestId": request_id,
        "functionArn": functions["failing"].arn + ":$LATEST",
        "condition": "RetriesExhausted",
        "approximateInvokeCount": 1 + retries,
    }
    assert record["requestPayload"] == {"folder": str(tmp_path)}
    assert record["responseContext"]["functionError"] == "Unhandled"
    assert record["responsePayload"]["errorType"] == "ValueError"
    assert record["responsePayload"]["errorMessage"] == "bad input"


@pytest.fixture
def endpoint(runtime: LambdaRuntime) -> Iterator[LambdaEndpoint]:
    server = LambdaEndpoint("us-east-1")
    server.runtime = runtime
    with serving(server):
        yield server


@pytest.fixture
def lambda_client(endpoint: LambdaEndpoint) -> Any:
    return boto3.client(
        "lambda",
        endpoint_url=endpoint.url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(retries={"max_attempts": 1}),
    )


def test_boto3_invoke_request_response(lambda_client: Any) -> None:
    answer = lambda_client.invoke(FunctionName="echo", Payload=json.dumps({"x": 1}))
    assert answer["StatusCode"] == 200
    assert json.loads(answer["Payload"].read())["event"] == {"x": 1}


def test_boto3_invoke_by_arn_reports_function_errors(lambda_client: Any) -> None:
    answer = lambda_client.invoke(FunctionName="arn:aws:lambda:us-east-1:123456789012:function:fail")
    assert answer["FunctionError"] == "Unhandled"
    assert json.loads(answer["Payload"].read())["errorType"] == "ValueError"


def test_boto3_invoke_event_returns_202_before_the_function_ends(lambda_client: Any, tmp_path: Path) -> None:
    # Given a function that waits (up to 20 s) until the test signs in too, after the answer
    parties, outcome = tmp_path / "parties", tmp_path / "outcome"
    parties.mkdir()
    event = {"folder": str(parties), "parties": 2, "wait_seconds": 20, "outcome": str(outcome)}
    # When it is invoked asynchronously
    payload = json.dumps(event)
    answer = lambda_client.invoke(FunctionName="rendezvous", InvocationType="Event", Payload=payload)
    assert answer["StatusCode"] == 202
    (parties / "test").touch()
    # Then the function met the test: the 202 came while it was running, not after it ended
    assert wait_for(outcome.exists, seconds=30)
    assert outcome.read_text() == "met"


def wait_for(condition: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_boto3_invoke_of_an_unknown_function_is_not_found(lambda_client: Any) -> None:
    with pytest.raises(lambda_client.exceptions.ResourceNotFoundException):
        lambda_client.invoke(FunctionName="nope")


def test_an_async_payload_above_1_mb_is_refused(lambda_client: Any) -> None:
    payload = json.dumps({"blob": "x" * (1024 * 1024)})
    with pytest.raises(lambda_client.exceptions.RequestTooLargeException):
        lambda_client.invoke(FunctionName="echo", InvocationType="Event", Payload=payload)


@pytest.mark.parametrize(
    ("method", "headers"),
    [
        # A page's text/plain POST needs no preflight, but the browser still sends its Origin
        ("POST", {"Origin": "https://some-site.example", "Content-Type": "text/plain"}),
        # DNS rebinding: a page's own domain made to resolve to 127.0.0.1
        ("POST", {"Host": "rebound.example"}),
        ("OPTIONS", {"Origin": "https://some-site.example", "Access-Control-Request-Method": "POST"}),
    ],
)
def test_the_lambda_endpoint_refuses_what_only_a_web_page_sends(
    endpoint: LambdaEndpoint, tmp_path: Path, method: str, headers: dict[str, str]
) -> None:
    # When a page asks the endpoint to invoke a function
    host, port = endpoint.server_address[:2]
    connection = http.client.HTTPConnection(str(host), int(port), timeout=30)
    deliveries = tmp_path / "deliveries"
    deliveries.mkdir()
    body = json.dumps({"folder": str(deliveries)}).encode()
    connection.request(method, "/2015-03-31/functions/record/invocations", body=body, headers=headers)
    answer = connection.getresponse()
    answer.read()
    connection.close()
    # Then it is refused, with no CORS headers, and the function did not run
    assert answer.status == 403
    assert not [key for key in answer.headers if key.lower().startswith("access-control-")]
    assert list(deliveries.iterdir()) == []
