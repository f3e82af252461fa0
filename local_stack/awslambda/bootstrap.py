"""One Lambda execution environment: a worker process that imports a handler once (the cold start)
and then runs one invocation at a time, told by the local stack over stdin/stdout.

Protocol: one JSON line per message. The worker says {"ready": true} (or {"init_error": ...}) after
init; each request line {"request_id", "event", "deadline", "invoked_function_arn"} gets one answer
line {"result": ...} or {"error": {"errorMessage", "errorType", "stackTrace"}}. The handler's own
prints and logs go to stderr, so they can never corrupt the protocol.

Run as: python -m local_stack.awslambda.bootstrap <function name> <handler> <faults-json> (the name is only
there to make `ps` readable; the environment says everything else).
"""

import importlib
import json
import os
import resource
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, TextIO

from local_stack.awslambda.log_format import OUTPUT_END
from local_stack.faults import injection as faults

_ORPHAN_CHECK_SECONDS = 1.0


class LambdaContext:
    """The context object Lambda passes to a Python handler."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.function_name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = int(os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"])
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.invoked_function_arn = request["invoked_function_arn"]
        self.aws_request_id = request["request_id"]
        self.identity = None
        self.client_context = None
        self._deadline = float(request["deadline"])

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.time()) * 1000))


def main() -> None:
    handler_name, fault_config = sys.argv[2], json.loads(sys.argv[3])
    # Keep the real stdout for the protocol; everything else printed goes to stderr (the log).
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    _exit_when_orphaned()
    faults.install(fault_config)
    try:
        handler = _load_handler(handler_name)
    except Exception as exc:
        _send(protocol, {"init_error": _error(exc)})
        return
    _send(protocol, {"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        answer = _invoke(handler, request)
        # After everything the invocation printed, in the same pipe: the local stack reads up to
        # here before it passes the answer on (local_stack.awslambda.log_format.OUTPUT_END).
        sys.stderr.write(f"{OUTPUT_END}{request['request_id']}\n")
        sys.stderr.flush()
        # The environment's peak memory so far, for the REPORT line Lambda logs after each invocation.
        _send(protocol, {**answer, "max_memory_kb": _peak_memory_kb()})


def _load_handler(handler_name: str) -> Callable[[Any, LambdaContext], Any]:
    module_name, _, function_name = handler_name.rpartition(".")
    module = importlib.import_module(module_name)
    handler = getattr(module, function_name)
    if not callable(handler):
        raise TypeError(f"Handler {handler_name} is not callable")
    return handler  # type: ignore[no-any-return]


def _invoke(handler: Callable[[Any, LambdaContext], Any], request: dict[str, Any]) -> dict[str, Any]:
    try:
        result = handler(request["event"], LambdaContext(request))
    except Exception as exc:
        traceback.print_exc()
        return {"error": _error(exc)}
    try:
        json.dumps(result)
    except (TypeError, ValueError) as exc:
        return {"error": {"errorType": "Runtime.MarshalError", "errorMessage": str(exc), "stackTrace": []}}
    return {"result": result}


def _error(exc: BaseException) -> dict[str, Any]:
    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }


def _peak_memory_kb() -> int:
    """This process's peak resident memory. On Linux that is VmHWM: ru_maxrss would also count the
    local stack's own memory, since Linux keeps the high-water mark of the process image replaced
    by exec (the spawning stack, which holds the embedded AWS's data) in ru_maxrss."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak


def _send(protocol: TextIO, message: dict[str, Any]) -> None:
    protocol.write(json.dumps(message) + "\n")
    protocol.flush()


def _exit_when_orphaned() -> None:
    """Die with the local stack even when it was killed too hard to stop its workers."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_ORPHAN_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


if __name__ == "__main__":
    main()
