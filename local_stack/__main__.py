"""`python -m local_stack` (`make run`): the whole system on this machine, in the foreground."""

import argparse
import atexit
import contextlib
import json
import os
import select
import shlex
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import NoReturn

from local_stack.apigateway import ADMIN_KEY_FILE
from local_stack.awslambda.log_format import LOG_FORMATS, configure_logging
from local_stack.cloudformation import PROJECT_ROOT, IntrinsicError, TemplateError
from local_stack.cloudwatch.alarms import unevaluated_alarms
from local_stack.cognito.person import PERSON_FILE
from local_stack.durability import CorruptStateError, DataDirInUseError
from local_stack.durability.private_files import make_private
from local_stack.dynamodb.capacity import CapacitySettings
from local_stack.faults import FAULT_KINDS, FaultError, parse_faults
from local_stack.ports import taken_ports
from local_stack.stack import LocalStack, StackOptions
from stack_tools import edge_preflight

READY_PREFIX = "READY "


def parse_args(argv: list[str] | None = None) -> StackOptions:
    """StackOptions from the command line."""
    defaults = StackOptions()
    parser = argparse.ArgumentParser(
        prog="python -m local_stack",
        description="Run the template's whole system on loopback: embedded AWS (moto), the REST API, "
        "the functions, schedules and alarms. No AWS account, no Docker.",
    )
    parser.add_argument("--api-port", type=int, default=defaults.api_port, help="REST API port (0: any free)")
    parser.add_argument(
        "--aws-port", type=int, default=defaults.aws_port, help="embedded AWS port (0: any free)"
    )
    parser.add_argument(
        "--edge-port",
        type=int,
        default=None,
        help=f"the local edge's port, with the template's Edge on (0: any free; default "
        f"{defaults.edge_port}, or any free with --api-port 0, so stacks on free ports never collide)",
    )
    parser.add_argument(
        "--auth-port",
        type=int,
        default=None,
        help=f"the user pool's hosted sign-in port, with the template's SignIn on (0: any free; default "
        f"{defaults.auth_port}, or any free with --api-port 0)",
    )
    parser.add_argument(
        "--edge-country",
        "--viewer-country",
        dest="edge_country",
        default=defaults.edge_country,
        help="CloudFront-Viewer-Country of requests through the local edge (loopback has no country; "
        "a link's geo rules read it: --viewer-country DE)",
    )
    parser.add_argument("--lambda-port", type=int, default=defaults.lambda_port, help="Lambda endpoint port")
    parser.add_argument(
        "--data-dir", type=Path, default=defaults.data_dir, help="where state survives restarts"
    )
    parser.add_argument("--no-persist", action="store_true", help="start empty and save nothing on stop")
    parser.add_argument(
        "--time-scale",
        type=float,
        default=defaults.time_scale,
        help="speed-up of schedules and alarm periods",
    )
    parser.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE", help="override a template parameter"
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="FAULT",
        help=f"inject faults ({', '.join(FAULT_KINDS)}), e.g. dynamodb-throttle=0.05, "
        "raise-in=PollerFunction:0.1 or duplicate-async=0.2",
    )
    parser.add_argument(
        "--dynamodb-capacity",
        default=str(defaults.dynamodb_capacity),
        metavar="on|off|scale=F",
        help="enforce DynamoDB's on-demand capacity as AWS documents it (4,000 write and 12,000 read "
        "units a second per new table and index, 1,000 write units per partition key, ...); scale=F "
        "divides every figure by F so that this machine reaches them (docs/capacity.md)",
    )
    parser.add_argument("--template", type=Path, default=defaults.template_path, help="the SAM template")
    parser.add_argument("--stack-name", default=defaults.stack_name, help="prefix of the resources' names")
    parser.add_argument("--region", default=defaults.region)
    parser.add_argument(
        "--max-concurrency", type=int, default=defaults.max_concurrency, help="workers per function at most"
    )
    parser.add_argument(
        "--no-iam",
        action="store_true",
        help="do not authorise the functions' AWS calls against their roles (for debugging)",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument(
        "--moto-api",
        action="store_true",
        help="answer moto's admin paths (/moto-api/: dashboard, data, reset, recorder); off by default, "
        "so that no web page can read or reset local data",
    )
    parser.add_argument(
        "--log-format",
        default="human",
        choices=LOG_FORMATS,
        help="human: a short line per request, log record and progress; json: the functions' own "
        "output unchanged (Powertools JSON records and metric blobs, as CloudWatch Logs gets them)",
    )
    args = parser.parse_args(argv)
    if args.time_scale <= 0:
        parser.error("--time-scale must be positive")
    try:
        params = dict(_key_value(item) for item in args.param)
        faults = parse_faults(args.fault)
        capacity = CapacitySettings.parse(args.dynamodb_capacity)
    except (ValueError, FaultError) as exc:
        parser.error(str(exc))
    configure_logging(args.log_level)
    return StackOptions(
        template_path=args.template,
        stack_name=args.stack_name,
        region=args.region,
        api_port=args.api_port,
        aws_port=args.aws_port,
        lambda_port=args.lambda_port,
        edge_port=_edge_port(args.edge_port, args.api_port, defaults.edge_port),
        auth_port=_edge_port(args.auth_port, args.api_port, defaults.auth_port),
        edge_country=args.edge_country,
        data_dir=args.data_dir,
        persist=not args.no_persist,
        time_scale=args.time_scale,
        params=params,
        faults=faults,
        max_concurrency=args.max_concurrency,
        iam=not args.no_iam,
        log_format=args.log_format,
        moto_api=args.moto_api,
        dynamodb_capacity=capacity,
    )


def _edge_port(given: int | None, api_port: int, default: int) -> int:
    """The edge's (or the hosted sign-in's) port: as given; else any free one when the API's is
    (tests, benchmarks), else the default."""
    if given is not None:
        return given
    return 0 if api_port == 0 else default


def _key_value(item: str) -> tuple[str, str]:
    key, separator, value = item.partition("=")
    if not separator or not key:
        raise ValueError(f"--param {item}: expected KEY=VALUE")
    return key, value


def banner(stack: LocalStack) -> str:
    """What a person sees once the stack is up."""
    assert stack.resources is not None
    options, resources = stack.options, stack.resources
    data_dir = _shown(options.data_dir)
    restored = stack.report.restored
    lines = [
        f"Local stack of {_shown(options.template_path)}: stack {options.stack_name}, {options.region}, "
        f"time x{options.time_scale:g}, DynamoDB capacity {options.dynamodb_capacity}",
        "",
        f"  API          {stack.api_url}",
        *(
            [f"  Edge         {stack.edge_url}   (the distribution's cache in front of the API)"]
            + [f"  Domain       {url}   ({name}: its links only)" for name, url in stack.domain_urls.items()]
            if stack.edge_url
            else []
        ),
        f"  AWS          {stack.aws_endpoint}   (AWS_ENDPOINT_URL for boto3 / aws --endpoint-url; any keys)",
        f"  Lambda       {stack.lambda_endpoint}   (Invoke API)",
        "  IAM          "
        + (
            "enforced: each function's AWS calls are checked against its role (--no-iam: off)"
            if stack.access.enforcing
            else "off: functions may call anything"
        ),
    ]
    if stack.api_key:
        kept = (
            f"kept in {_shown(options.data_dir / ADMIN_KEY_FILE)}"
            if options.persist
            else "new on every start"
        )
        lines.append(f"  API key      {stack.api_key}   (admin; send it as X-Api-Key; {kept})")
    lines += _sign_in_lines(stack)
    if options.persist:
        state = "nothing saved yet"
        if restored:
            state = (
                f"restored {restored.items} items, {restored.messages} messages in {restored.seconds:.1f} s"
            )
            if restored.journal_records:
                state += f"; {restored.journal_records} changes replayed from the journal"
        lines.append(f"  Data         {data_dir}   ({state})")
    lines += ["", "Resources:"]
    template = resources.template["Resources"]
    for logical_id, name in resources.names.items():
        lines.append(f"  {logical_id:<30} {template[logical_id]['Type']:<28} {name}")
    unevaluated = unevaluated_alarms(resources)
    if unevaluated:
        lines += [
            "",
            f"Alarms: {len(unevaluated)} watch metrics that only CloudWatch in AWS produces and are not "
            f"evaluated here ({', '.join(unevaluated)}); the others are.",
        ]
    lines += [f"  ! {warning}" for warning in stack.report.warnings]
    if options.faults:
        lines.append(f"Faults: {options.faults}")
    # `shortener` finds the stack by its stack.json in the default data dir by itself, whatever the
    # ports; another data dir is named to it.
    cli = ".venv/bin/shortener"
    if options.data_dir.resolve() != StackOptions().data_dir.resolve():
        cli += f" --local-stack {shlex.quote(str(options.data_dir))}"
    lines += [
        "",
        "Try:",
        f"  curl -i -X POST {stack.api_url} -H 'Content-Type: application/json'"
        + (f" -H 'X-Api-Key: {stack.api_key}'" if stack.api_key else "")
        + ' -d \'{"url": "https://example.com/"}\'',
        f"  {cli} shorten https://example.com/",
        f"  {cli} bulk links.csv --wait --output results.csv",
        f"  open {stack.api_url} in a browser",
        "",
        "Ctrl-C stops" + (f" (state saved to {data_dir})." if options.persist else "."),
    ]
    return "\n".join(lines)


def _sign_in_lines(stack: LocalStack) -> list[str]:
    """The hosted sign-in and its person, when the template makes a user pool."""
    if not stack.auth_url:
        return []
    lines = [f"  Sign-in      {stack.auth_url}   (the user pool's hosted sign-in; docs/sign-in.md)"]
    person = stack.sign_in_person
    if person is not None:
        kept = (
            f"kept in {_shown(stack.options.data_dir / PERSON_FILE)}"
            if stack.options.persist
            else "new on every start"
        )
        lines.append(f"  Sign in as   {person.username} / {person.password}   (admin; on the page; {kept})")
    return lines


class StopRequest:
    """A stop asked for by a signal, waited for by the main thread.

    A Python signal handler runs in the main thread between two bytecodes, possibly while that
    thread is inside ``threading.Event.wait`` holding the event's (non-reentrant) lock: an
    ``Event.set`` in the handler then waits for that lock forever. So the handler takes no lock: it
    sets a plain flag, and the main thread sleeps in ``select`` on a pipe that the interpreter's C
    handler writes a byte to on every signal (``signal.set_wakeup_fd``), which ends the sleep at
    once."""

    def __init__(self) -> None:
        self.requested = False
        self._wakeup_read, self._wakeup_write = os.pipe()
        for fd in (self._wakeup_read, self._wakeup_write):
            os.set_blocking(fd, False)

    def install(self, signals: tuple[int, ...]) -> None:
        """Handle ``signals`` (main thread only, as ``signal.signal`` requires)."""
        signal.set_wakeup_fd(self._wakeup_write, warn_on_full_buffer=False)
        for signum in signals:
            signal.signal(signum, self.handle)

    def handle(self, signum: int, _: FrameType | None) -> None:
        """The signal handler: a flag, nothing that can block."""
        self.requested = True
        # A second Ctrl-C ends the process at once; orphaned workers notice and exit too.
        signal.signal(signum, signal.SIG_DFL)

    def wait(self, poll_seconds: float = 0.5) -> None:
        """Return once a stop was asked for. The poll is a safeguard for a signal that arrived
        before the wakeup descriptor was set."""
        while not self.requested:
            select.select([self._wakeup_read], [], [], poll_seconds)
            with contextlib.suppress(BlockingIOError):
                os.read(self._wakeup_read, 512)


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT)) + ("/" if path.is_dir() else "")
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    """Start, print the banner and the READY line, run until SIGINT, SIGTERM or SIGHUP, stop
    cleanly (saving the state)."""
    options = parse_args(argv)
    # What `make deploy` refuses before CloudFormation sees it (its check-edge step) is refused here
    # too: a parameter the template's rules cannot check would otherwise start a stack whose API
    # fails every request.
    if refused := edge_preflight.refusals(edge_preflight.EdgePlan.of(options.region, options.params)):
        for reason in refused:
            print(f"local stack: cannot start: {reason}", file=sys.stderr)
        return 1
    stop = StopRequest()
    # SIGHUP: the terminal was closed; stop as cleanly as on Ctrl-C.
    stop.install((signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    if taken := taken_ports(
        {
            options.api_port: "the API (--api-port)",
            options.aws_port: "the embedded AWS (--aws-port)",
            options.lambda_port: "the Lambda endpoint (--lambda-port)",
            options.edge_port: "the local edge (--edge-port)",
            options.auth_port: "the hosted sign-in (--auth-port)",
        }
    ):
        # Checked before anything starts, so a second `make run` says at once what is in the way.
        for port in taken:
            print(f"local stack: cannot start: {port.message()}", file=sys.stderr)
        print(
            "Is another local stack running? Stop it (Ctrl-C in its terminal), or pick other ports: "
            'make run ARGS="--api-port 0 --aws-port 0" (0 picks a free port).',
            file=sys.stderr,
        )
        return 1
    # The data folder holds every table, file and the admin key: the developer's alone.
    make_private(options.data_dir)
    stack = LocalStack(options)
    try:
        stack.start()
    except OSError as exc:
        print(
            f"local stack: cannot start: {exc} (is another one running? --api-port 0 picks a free port)",
            file=sys.stderr,
        )
        return 1
    except (TemplateError, IntrinsicError, CorruptStateError, DataDirInUseError) as exc:
        print(f"local stack: {exc}", file=sys.stderr)
        return 1
    print(banner(stack), flush=True)
    # One machine-readable line for test harnesses and scripts.
    # One write, newline included: print() writes its end apart, and a function's log line written
    # in between (they run from the start) would break the line the harness reads.
    sys.stdout.write(READY_PREFIX + json.dumps(stack.ready_info()) + "\n")
    sys.stdout.flush()
    stop.wait()
    _say("Stopping...")
    summary = stack.stop()
    if summary is not None:
        _say(
            f"Saved {summary.items} items and {summary.messages} messages to {_shown(options.data_dir)} "
            f"in {summary.seconds:.1f} s"
        )
    _say("Stopped.")
    return 0


def _say(text: str) -> None:
    # After SIGHUP the terminal may be gone, and writing to it fails: that must not stop the save.
    with contextlib.suppress(OSError):
        print(text, flush=True)


def _exit(code: int) -> NoReturn:
    """End the process once everything is saved and stopped: the exit handlers run (logging's
    flush among them), the interpreter's teardown does not: freeing moto's in-memory backends one
    object at a time takes seconds, and there is nothing left to save."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit(main())
