"""What the terminal of `make run` shows: short lines for a person, not the functions' raw output.

On AWS a function's stdout and stderr go to CloudWatch Logs, where Powertools' JSON log records and
its metric blobs (the CloudWatch embedded metric format) are exactly right; the functions keep
writing them. Locally their workers' output is rendered here, one short line per record:

    22:17:41.293 INFO  ScalerFunction   Scaling outcome  action=add loops_before=1 loops_after=2

- a JSON log record: its level, its message, the keys it added (the standard Powertools keys are
  dropped: every line would repeat them), and its exception's traceback;
- a metric blob (EMF): one line of the metrics that moved ("RowsSucceeded=250"), shown for
  background work (a loop's progress) and kept to DEBUG for a synchronous invocation, whose
  request line already says what happened; all-zero and cold-start blobs are dropped;
- a Python warning (path:line: SomeWarning: ... and its source line): DEBUG;
- a traceback printed by the runtime: ERROR; any other line: as printed, at INFO.

``--log-format json`` passes the workers' lines through unchanged instead.
"""

import json
import logging
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, Literal, TextIO

LogFormat = Literal["human", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("human", "json")
FUNCTION_LOGGER_PREFIX = "local_stack.functions."

# Keys Powertools' Logger puts on every record; the rest are what the code chose to add.
_STANDARD_KEYS = frozenset(
    {
        "level",
        "location",
        "message",
        "timestamp",
        "service",
        "sampling_rate",
        "cold_start",
        "function_name",
        "function_memory_size",
        "function_arn",
        "function_request_id",
        "xray_trace_id",
        "exception",
        "exception_name",
        "stack_trace",
    }
)
_LEVELS = {
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "CRITICAL": logging.CRITICAL,
}
_QUIET_METRICS = frozenset({"ColdStart"})  # one per container: noise in a terminal
_WARNING_LINE = re.compile(r"^\S.*:\d+: \w*Warning: ")
_MAX_VALUE_CHARS = 80
_MAX_KEYS = 8


@dataclass(frozen=True)
class Rendered:
    """One line (or a few, for a traceback) for the terminal, at a logging level."""

    level: int
    text: str


class FunctionLogRenderer:
    """Renders one worker's output, line by line (it remembers whether a warning's source line or a
    traceback's body follows)."""

    def __init__(self) -> None:
        self._continuation: int | None = None  # the level of the block being continued
        self.background = True  # whether the invocation now running is asynchronous

    def render(self, line: str) -> Rendered | None:
        """The terminal line for one line of output; None when it is not worth a line."""
        text = line.rstrip("\n")
        if self._continuation is not None and (continued := self._continue(text)) is not None:
            return continued
        if not text.strip():
            return None
        if text.startswith("{"):
            try:
                record = json.loads(text)
            except ValueError:
                record = None
            if isinstance(record, dict):
                return self._record(record, text)
        if _WARNING_LINE.match(text):
            self._continuation = logging.DEBUG
        elif text.startswith("Traceback (most recent call last):"):
            self._continuation = logging.ERROR
        return Rendered(self._continuation or logging.INFO, text)

    def _continue(self, text: str) -> Rendered | None:
        """The line as part of the warning or traceback above it, if it is; ends the block if not."""
        level = self._continuation
        assert level is not None
        if text[:1].isspace():
            return Rendered(level, text)
        self._continuation = None
        # A traceback ends with its exception's line, unindented; a warning with its source line.
        return Rendered(level, text) if level == logging.ERROR else None

    def _record(self, record: dict[str, Any], raw: str) -> Rendered | None:
        if isinstance(record.get("_aws"), dict) and "CloudWatchMetrics" in record["_aws"]:
            return self._metrics(record)
        if "message" not in record or "level" not in record:
            return Rendered(logging.INFO, raw)
        return render_record(record)

    def _metrics(self, blob: dict[str, Any]) -> Rendered | None:
        moved = metric_values(blob)
        if not moved:
            return None
        text = "metrics " + " ".join(f"{name}={value:g}" for name, value in moved.items())
        return Rendered(logging.INFO if self.background else logging.DEBUG, text)


def render_record(record: dict[str, Any]) -> Rendered:
    """A Powertools JSON log record as ``message  key=value ...`` and its traceback below."""
    level = _LEVELS.get(str(record.get("level", "INFO")).upper(), logging.INFO)
    extras = [
        f"{key}={_value(value)}"
        for key, value in record.items()
        if key not in _STANDARD_KEYS and value not in (None, "", [], {})
    ]
    if len(extras) > _MAX_KEYS:
        extras = [*extras[:_MAX_KEYS], f"(+{len(extras) - _MAX_KEYS} keys)"]
    text = "  ".join([str(record["message"]), " ".join(extras)]).rstrip()
    if record.get("exception"):
        # The traceback below the line, indented, as a person reads one.
        text += "\n" + "\n".join("    " + line for line in str(record["exception"]).splitlines())
    return Rendered(level, text)


def metric_values(blob: dict[str, Any]) -> dict[str, float]:
    """The non-zero metrics of an EMF blob (cold starts left out), by name."""
    values: dict[str, float] = {}
    for directive in blob["_aws"].get("CloudWatchMetrics", []):
        for metric in directive.get("Metrics", []):
            name = metric.get("Name")
            if name in _QUIET_METRICS or name not in blob:
                continue
            raw = blob[name]
            numbers = raw if isinstance(raw, list) else [raw]
            total = sum(number for number in numbers if isinstance(number, int | float))
            if total:
                values[name] = total
    return values


def _value(value: Any) -> str:
    if isinstance(value, str):
        shown = value if value and not any(c.isspace() for c in value) else json.dumps(value)
    else:
        shown = json.dumps(value, separators=(",", ":"), default=str)
    return shown if len(shown) <= _MAX_VALUE_CHARS else shown[: _MAX_VALUE_CHARS - 1] + "…"


# The line a worker writes after an invocation's own output (then the request id): not shown; it
# tells that every line the invocation wrote has been read (FunctionOutput.read_to_end).
OUTPUT_END = "\x00local-stack-output-end "


class FunctionOutput:
    """Where one worker's output lines go: rendered into the stack's log, or passed through."""

    _raw_lock = threading.Lock()

    def __init__(
        self,
        function: str,
        log_format: LogFormat,
        raw: TextIO | None = None,
        sink: Callable[[str], None] | None = None,
    ) -> None:
        self._log = logging.getLogger(FUNCTION_LOGGER_PREFIX + function)
        self._format = log_format
        self._raw = raw
        # The function's log group, where a subscription filter reads it (cloudwatch/logs.py).
        self._sink = sink
        self.renderer = FunctionLogRenderer()
        self._ends: dict[str, threading.Event] = {}
        self._ends_lock = threading.Lock()

    @property
    def kept(self) -> bool:
        """Whether the lines go to a log group as well as to the stack's log."""
        return self._sink is not None

    def expect_end(self, request_id: str) -> threading.Event:
        """Set once the invocation ``request_id``'s output has all been read."""
        with self._ends_lock:
            return self._ends.setdefault(request_id, threading.Event())

    def read_to_end(self, request_id: str, timeout: float) -> bool:
        """Wait until every line the invocation wrote has been read (and its log group holds them,
        journaled where the stack persists) or ``timeout`` passed; whether it was read."""
        ended = self.expect_end(request_id).wait(timeout)
        with self._ends_lock:
            self._ends.pop(request_id, None)
        return ended

    def follow(self, stream: IO[str] | None) -> None:
        """Show every line of ``stream`` (a worker's stderr) as it comes, on a thread of its own,
        until the worker is gone; read from the start, so that a full pipe never stalls a worker."""
        if stream is not None:
            name = f"log-{self._log.name.removeprefix(FUNCTION_LOGGER_PREFIX)}"
            threading.Thread(target=self._pump, args=(stream,), name=name, daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        with stream:
            try:
                for line in stream:
                    self.write(line)
            except (OSError, ValueError):  # the pipe closed under us as the stack stops
                return

    def write(self, line: str) -> None:
        """Show one line the worker wrote (and hand it to the function's log group)."""
        before, end, request_id = line.partition(OUTPUT_END)
        if not end:
            self._show(line)
            return
        if before:  # the invocation's last line had no newline of its own
            self._show(before)
        if self._sink is not None:
            self.expect_end(request_id.strip()).set()

    def _show(self, line: str) -> None:
        if self._sink is not None:
            self._sink(line)
        if self._format == "json":
            with self._raw_lock:
                (self._raw or sys.stderr).write(line if line.endswith("\n") else line + "\n")
                (self._raw or sys.stderr).flush()
            return
        rendered = self.renderer.render(line)
        if rendered is not None:
            self._log.log(rendered.level, "%s", rendered.text)


class TerminalFormatter(logging.Formatter):
    """``HH:MM:SS.mmm LEVEL source  message``: the source is a function's logical id or the local
    stack's module, so the stack's own lines and the functions' read alike."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s.%(msecs)03d %(levelname)-5s %(source)-18s %(message)s", "%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        source = record.name.removeprefix(FUNCTION_LOGGER_PREFIX).removeprefix("local_stack.")
        record.__dict__["source"] = source
        return super().format(record)


def configure_logging(level: str) -> None:
    """The stack's log on stderr in the terminal format; libraries kept quiet below WARNING."""
    handler = logging.StreamHandler()
    handler.setFormatter(TerminalFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    # moto's server logs every AWS call (werkzeug's access log); the functions' own logs say more.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    # Library warnings (Python's warnings module) are for whoever works on the stack: --log-level DEBUG.
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").setLevel(logging.NOTSET if level == "DEBUG" else logging.ERROR)
