"""Functions in worker processes, and the Lambda Invoke endpoint that boto3 talks to."""

import json
import textwrap
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from local_stack.lambda_endpoint import LambdaEndpoint
from local_stack.lambda_runtime import LambdaRuntime, RuntimeSettings
from local_stack.resources import FunctionSpec

HANDLERS = textwrap.dedent(
    """
    import os
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
        }

    def fail(event, context):
        raise ValueError("bad input")

    def sleep(event, context):
        time.sleep(event["seconds"])
        return "slept"

    def meet(event, context):
        # Arrive, then wait for the others: all arrive only if they run at the same time.
        import pathlib
        arrivals = pathlib.Path(event["dir"])
        (arrivals / context.aws_request_id).touch()
        deadline = time.time() + event["seconds"]
        while time.time() < deadline:
            if len(list(arrivals.iterdir())) >= event["parties"]:
                return "met"
            time.sleep(0.02)
        return "alone"
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


@pytest.fixture
def runtime(code_dir: Path) -> Iterator[LambdaRuntime]:
    functions = {
        "echo": spec(code_dir, "echo", "app.echo"),
        "fail": spec(code_dir, "fail", "app.fail"),
        "sleep": spec(code_dir, "sleep", "app.sleep", timeout=1),
        "meet": spec(code_dir, "meet", "app.meet", timeout=30),
    }
    settings = RuntimeSettings("http://127.0.0.1:1", "http://127.0.0.1:2", "us-east-1", max_concurrency=4)
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


def test_a_warm_worker_is_reused(runtime: LambdaRuntime) -> None:
    counts = [runtime.invoke("echo", {}).result["invocations"] for _ in range(3)]
    assert counts == [1, 2, 3]


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


def test_concurrent_invocations_run_in_parallel(runtime: LambdaRuntime, tmp_path: Path) -> None:
    # Given three invocations that each wait (up to 20 s) until all three have arrived; one at a
    # time, the first would give up alone. No clock is measured, so a loaded machine cannot fail it.
    event = {"dir": str(tmp_path / "arrivals"), "parties": 3, "seconds": 20}
    (tmp_path / "arrivals").mkdir()
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda _: runtime.invoke("meet", event).result, range(3)))
    # Then they ran side by side
    assert results == ["met"] * 3


@pytest.fixture
def endpoint(runtime: LambdaRuntime) -> Iterator[LambdaEndpoint]:
    server = LambdaEndpoint("us-east-1")
    server.runtime = runtime
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


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


def test_boto3_invoke_event_returns_202_at_once(lambda_client: Any) -> None:
    started = time.monotonic()
    answer = lambda_client.invoke(FunctionName="sleep", InvocationType="Event", Payload=b'{"seconds": 0.5}')
    assert answer["StatusCode"] == 202
    assert time.monotonic() - started < 0.5


def test_boto3_invoke_of_an_unknown_function_is_not_found(lambda_client: Any) -> None:
    with pytest.raises(lambda_client.exceptions.ResourceNotFoundException):
        lambda_client.invoke(FunctionName="nope")


def test_an_async_payload_above_1_mb_is_refused(lambda_client: Any) -> None:
    payload = json.dumps({"blob": "x" * (1024 * 1024)})
    with pytest.raises(lambda_client.exceptions.RequestTooLargeException):
        lambda_client.invoke(FunctionName="echo", InvocationType="Event", Payload=payload)
