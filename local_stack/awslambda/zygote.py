"""The function workers' parent: one process that imports, once, the libraries every function
imports (boto3 and botocore, pydantic, Powertools, the layer's own dependencies), then forks each
new execution environment from itself. The environments share those pages instead of each holding
its own copy: about 30 MB less per worker, which with twenty workers is most of what a bulk job's
workers held (docs/capacity.md).

A forked worker is what ``python -m local_stack.awslambda.bootstrap`` would be: its own session,
its function's environment variables, working folder, import path and stdin/stdout/stderr, and a
command line that says which function it runs (``ps``). It imports its handler itself, so the init
phase, module-level state and cold starts stay each environment's own. The preloaded modules are
the project's pinned dependencies, the very ones the worker would import from the same place; the
layer's own package (``shortener``) and the handlers are never preloaded: they read the function's
environment.

Protocol, over a Unix SOCK_SEQPACKET socket from the local stack, one JSON message per packet:

- the stack sends ``{"spawn": id, "argv": [...], "env": {...}, "cwd": path}`` with three file
  descriptors (the worker's stdin, stdout and stderr); the zygote answers ``{"spawned": id, "pid":
  pid}``, or ``{"spawned": id, "error": message}``;
- when a worker ends the zygote says ``{"exited": pid, "returncode": code}`` (negative: the signal
  that ended it, as ``subprocess`` reports it).

The zygote ends when the stack's end of the socket closes (the stack stopped, or was killed), and
ends quietly: after a ``kill -9`` of the stack its workers end too, and their exits, which it can no
longer report, are no error worth a traceback in the terminal the next run shares.

Run as: python -m local_stack.awslambda.zygote <socket fd> <room for workers' command lines>
"""

import contextlib
import gc
import importlib
import json
import os
import select
import signal
import socket
import sys
import time
from typing import Any, NoReturn

# What two or more functions import, from the project's pinned dependencies, none of which reads
# a function's own variables at import. Never the layer's ``shortener`` package nor a handler: they
# read the function's settings, and an edit to them must reach the next new worker.
PRELOAD = (
    "boto3",
    "boto3.dynamodb.types",
    "boto3.s3.transfer",
    "botocore.client",
    "botocore.credentials",
    "botocore.endpoint",
    "botocore.httpsession",
    "botocore.parsers",
    "botocore.regions",
    "botocore.serialize",
    "aws_lambda_powertools",
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.logging",
    "aws_lambda_powertools.metrics",
    "aws_lambda_powertools.tracing",
    "aws_lambda_powertools.utilities.batch",
    "aws_lambda_powertools.utilities.parser",
    "aws_lambda_powertools.utilities.typing",
    "aws_xray_sdk.core",  # the Tracer's: about 20 MB a worker on its own
    "pydantic",
    "ada_url",
    "cachetools",
    "crawleruseragents",
    "csv",
    "email.policy",
    "iptocc",
    "orjson",
    "sqids",
    "ua_parser",
    "yaml",
)
# The services whose clients the layer makes (shared/shortener/aws.py).
SDK_SERVICES = ("dynamodb", "sqs", "s3", "lambda", "events", "sns")
# The largest packet: a spawn request carries the function's environment.
_PACKET_BYTES = 1 << 20
_STANDARD_STREAMS = 3


def main() -> None:
    channel = socket.socket(fileno=int(sys.argv[1]))
    base_path = sys.path[1:]  # the interpreter's own (stdlib, site-packages): not this folder
    # The X-Ray SDK builds its recorder at import, for Lambda when this is set (a worker's is its
    # code folder; only whether it is set counts).
    os.environ.setdefault("LAMBDA_TASK_ROOT", os.getcwd())
    for name in PRELOAD:
        importlib.import_module(name)
    # pydantic looks for plugins (every installed package's entry points) at the first model built.
    from pydantic.plugin._loader import get_plugins

    list(get_plugins())
    warm_sdk_models()
    # Objects that exist now live as long as every worker: the collector never touches (and so never
    # copies) their pages.
    gc.collect()
    gc.freeze()
    wakeup_read, wakeup_write = os.pipe()
    os.set_blocking(wakeup_write, False)
    signal.set_wakeup_fd(wakeup_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the loop below
    workers: set[int] = set()
    while True:
        readable, _, _ = select.select([channel.fileno(), wakeup_read], [], [])
        if wakeup_read in readable:
            os.read(wakeup_read, 4096)
        if not _report_exits(channel, workers):
            return  # the stack is gone
        if channel.fileno() not in readable:
            continue
        try:
            packet, fds, _, _ = socket.recv_fds(channel, _PACKET_BYTES, _STANDARD_STREAMS)
        except ConnectionError:
            packet, fds = b"", []
        if not packet:  # the stack is gone: so are we (its workers notice and end too)
            return
        request = json.loads(packet)
        try:
            pid = os.fork()
        except OSError as exc:
            _close(fds)
            if not _send(channel, {"spawned": request["spawn"], "error": str(exc)}):
                return
            continue
        if pid == 0:
            _become_worker(request, fds, base_path)
        _close(fds)
        workers.add(pid)
        if not _send(channel, {"spawned": request["spawn"], "pid": pid}):
            return


def warm_sdk_models() -> None:
    """Leave the SDK's service models parsed in boto3's default session, which every worker
    inherits: a process's first client of a service reads and parses that service's model files,
    0.1 to 0.8 s a service on a loaded machine, which a cold function paid in its first request. The
    clients made here are thrown away: constant credentials, region and endpoint, so that nothing
    is looked up (no environment, no instance metadata) and nothing is kept but the parsed files;
    a worker's clients read its own variables when it makes them."""
    import boto3

    for service in SDK_SERVICES:
        boto3.client(
            service,  # type: ignore[call-overload]
            region_name="us-east-1",
            endpoint_url="http://127.0.0.1:9",
            aws_access_key_id="warm-up",
            aws_secret_access_key="warm-up",  # noqa: S106 (a placeholder: never sent)
        )


def _report_exits(channel: socket.socket, workers: set[int]) -> bool:
    """Reap the workers that ended and tell the stack; False when the stack is gone."""
    for pid in list(workers):
        with contextlib.suppress(ChildProcessError):
            reaped, status = os.waitpid(pid, os.WNOHANG)
            if not reaped:
                continue
            workers.discard(pid)
            if not _send(channel, {"exited": pid, "returncode": os.waitstatus_to_exitcode(status)}):
                return False
    return True


def _become_worker(request: dict[str, Any], fds: list[int], base_path: list[str]) -> NoReturn:
    """In the forked child: set up the environment ``python -m local_stack.awslambda.bootstrap``
    would have had, then run it; never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()  # its own session, as the stack starts workers: Ctrl-C reaches only the stack
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(_STANDARD_STREAMS, os.sysconf("SC_OPEN_MAX"))  # the socket, the zygote's pipe
        os.chdir(request["cwd"])
        environment: dict[str, str] = request["env"]
        os.environ.clear()
        os.environ.update(environment)
        time.tzset()
        # What the interpreter would have put first: the module's folder (-m: the working folder),
        # then PYTHONPATH, then its own.
        extra = [entry for entry in environment.get("PYTHONPATH", "").split(os.pathsep) if entry]
        sys.path[:] = [request["cwd"], *extra, *base_path]
        importlib.invalidate_caches()
        argv: list[str] = request["argv"]
        _set_command_line(argv)
        sys.argv = [argv[2], *argv[3:]]  # as -m leaves it: the module, then its arguments
        from local_stack.awslambda import bootstrap

        bootstrap.main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # a worker must never return into the zygote's loop
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _set_command_line(argv: list[str]) -> None:
    """Show ``argv`` as this process's command line (``ps``, /proc/<pid>/cmdline), written over the
    zygote's own, which was started with room to spare. Cosmetic: skipped where /proc is not."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (proc(5))
        text = b"\0".join(word.encode() for word in argv) + b"\0"
        with open("/proc/self/mem", "r+b", buffering=0) as memory:
            memory.seek(start)
            memory.write(text[: end - start].ljust(end - start, b"\0"))


def _send(channel: socket.socket, message: dict[str, Any]) -> bool:
    """Send ``message`` to the stack; False when its end is closed (ConnectionResetError,
    BrokenPipeError: it stopped or was killed)."""
    try:
        channel.send(json.dumps(message).encode())
    except ConnectionError:
        return False
    return True


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


if __name__ == "__main__":
    main()
