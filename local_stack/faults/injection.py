"""Fault injection for tests and demos, installed by the worker bootstrap and never deployed.

Faults are botocore event hooks on the default boto3 session of a function's worker process, so the
function's own code is untouched and unaware:

- ``<service>-throttle=P`` (dynamodb, sqs, lambda): each HTTP attempt to that service is answered
  with the service's throttling error with probability P, *before* botocore's retry logic, exactly
  as a real throttle would be; the configured retries absorb most of them, as in AWS.
- ``raise-in=Function:P``: each AWS call made inside that function (logical id or name) raises
  ``InjectedFault`` with probability P before anything is sent: an exception at a random point of
  the function's work.
- ``crash-in=Function:P``: likewise, but the execution environment dies on the spot (the process
  exits), as on a timeout or out-of-memory: the invocation fails and nothing after it runs.
- ``duplicate-async=P``: each asynchronous (``Event``) invocation is delivered a second time with
  probability P, half the time at once (the two run in parallel), half the time after a random
  delay of up to a few seconds (divided by --time-scale). Lambda documents this at-least-once
  delivery: "Even if your function doesn't return an error, it's possible for it to receive the same
  event from Lambda multiple times because the queue itself is eventually consistent"
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html). Applied by
  the local Lambda runtime where it runs Event invocations (runtime.py), not in workers.
- ``duplicate-logs=P``: each batch a log group's subscription filter delivers is delivered a second
  time with probability P, as CloudWatch Logs may (local_stack/cloudwatch/logs.py).
- ``raise-in=Function.Operation:P``: ``raise-in`` for one operation only (``BatchWriteItem``), so
  one kind of work fails every time (a poisoned message) while the rest goes on.
- ``delay-in=Function[.Operation]:S``: each such call waits S seconds first (a slow dependency).
"""

import json
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse

# (status, headers, body) of each service's throttling answer, as the service sends it.
_THROTTLES: dict[str, tuple[int, dict[str, str], dict[str, Any]]] = {
    "dynamodb": (
        400,
        {"Content-Type": "application/x-amz-json-1.0"},
        {
            "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
            "message": "The level of configured provisioned throughput for the table was exceeded.",
        },
    ),
    "sqs": (
        400,
        {"Content-Type": "application/x-amz-json-1.0", "x-amzn-query-error": "RequestThrottled;Sender"},
        {"__type": "com.amazonaws.sqs#RequestThrottled", "message": "Request is throttled."},
    ),
    "lambda": (
        429,
        {"Content-Type": "application/json", "x-amzn-ErrorType": "TooManyRequestsException"},
        {"Type": "User", "message": "Rate Exceeded.", "Reason": "CallerRateLimitExceeded"},
    ),
}
FAULT_KINDS = (
    *(f"{service}-throttle" for service in _THROTTLES),
    "raise-in",
    "crash-in",
    "delay-in",
    "duplicate-async",
    "duplicate-logs",
)
CRASH_EXIT_CODE = 137
# The longest wait before a later duplicate delivery, in unscaled seconds.
DUPLICATE_MAX_DELAY_SECONDS = 5.0


class FaultError(ValueError):
    """A --fault option that does not parse."""


class InjectedFault(RuntimeError):
    """The exception ``raise-in`` raises inside a function."""


@dataclass(frozen=True)
class Faults:
    """Every fault the local stack was started with."""

    throttles: dict[str, float] = field(default_factory=dict)
    # Keyed by "Function" or "Function.Operation" (raise-in and delay-in).
    raise_in: dict[str, float] = field(default_factory=dict)
    crash_in: dict[str, float] = field(default_factory=dict)
    delay_in: dict[str, float] = field(default_factory=dict)
    duplicate_async: float = 0.0
    duplicate_logs: float = 0.0

    def __bool__(self) -> bool:
        return bool(
            self.throttles
            or self.raise_in
            or self.crash_in
            or self.delay_in
            or self.duplicate_async
            or self.duplicate_logs
        )

    def for_function(self, logical_id: str, name: str) -> dict[str, Any]:
        """The faults one function's workers install (JSON-serialisable, for the bootstrap)."""

        def pick(table: dict[str, float]) -> float:
            return table.get(logical_id, table.get(name, 0.0))

        def per_operation(table: dict[str, float]) -> dict[str, float]:
            return {
                operation: value
                for key, value in table.items()
                for function, _, operation in [key.partition(".")]
                if operation and function in (logical_id, name)
            }

        chosen: dict[str, Any] = {
            "throttles": self.throttles,
            "raise": pick(self.raise_in),
            "crash": pick(self.crash_in),
        }
        if raise_operations := per_operation(self.raise_in):
            chosen["raise_operations"] = raise_operations
        delays = per_operation(self.delay_in)
        if pick(self.delay_in):
            delays["*"] = pick(self.delay_in)
        if delays:
            chosen["delay"] = delays
        return chosen


def parse_faults(options: list[str]) -> Faults:
    """Faults from ``--fault`` options such as ``dynamodb-throttle=0.05`` or ``raise-in=Fn:0.1``."""
    throttles: dict[str, float] = {}
    raise_in: dict[str, float] = {}
    crash_in: dict[str, float] = {}
    duplicate_async = duplicate_logs = 0.0
    delay_in: dict[str, float] = {}
    for option in options:
        kind, _, value = option.partition("=")
        if kind == "duplicate-async":
            duplicate_async = _probability(option, value)
        elif kind == "duplicate-logs":
            duplicate_logs = _probability(option, value)
        elif kind.endswith("-throttle") and kind.removesuffix("-throttle") in _THROTTLES:
            throttles[kind.removesuffix("-throttle")] = _probability(option, value)
        elif kind in ("raise-in", "crash-in", "delay-in"):
            function, _, number = value.rpartition(":")
            if not function or (kind == "crash-in" and "." in function):
                what = "seconds" if kind == "delay-in" else "probability"
                operation = "" if kind == "crash-in" else "[.<Operation>]"
                raise FaultError(f"{option}: expected {kind}=<Function>{operation}:<{what}>")
            if kind == "delay-in":
                delay_in[function] = _seconds(option, number)
            else:
                (raise_in if kind == "raise-in" else crash_in)[function] = _probability(option, number)
        else:
            raise FaultError(f"{option}: unknown fault; known: {', '.join(FAULT_KINDS)}")
    return Faults(throttles, raise_in, crash_in, delay_in, duplicate_async, duplicate_logs)


def _seconds(option: str, text: str) -> float:
    return _number(option, text, 900, "a number of seconds", "the delay must be between 0 and 900 seconds")


def _probability(option: str, text: str) -> float:
    return _number(option, text, 1, "a probability", "the probability must be between 0 and 1")


def _number(option: str, text: str, most: float, what: str, bounds: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise FaultError(f"{option}: {text!r} is not {what}") from None
    if not 0 <= value <= most:
        raise FaultError(f"{option}: {bounds}")
    return value


class AsyncDuplicator:
    """Decides, for each asynchronous invocation, whether Lambda's event queue delivers it a second
    time (``duplicate-async``), and after how many (local) seconds."""

    def __init__(self, probability: float, time_scale: float = 1.0, rng: random.Random | None = None) -> None:
        self._probability = probability
        self._time_scale = time_scale
        self._chance = rng or random.Random()

    def second_delivery(self) -> float | None:
        """None: delivered once. 0.0: a second delivery at once, in parallel with the first.
        Otherwise the delay of the second delivery in seconds."""
        if self._probability <= 0 or self._chance.random() >= self._probability:
            return None
        if self._chance.random() < 0.5:
            return 0.0
        return self._chance.uniform(0.1, DUPLICATE_MAX_DELAY_SECONDS) / self._time_scale


def install(faults: dict[str, Any], rng: random.Random | None = None) -> None:
    """Register the hooks on the default boto3 session (every client created after this)."""
    chance = rng or random.Random()
    if not boto3.DEFAULT_SESSION:
        boto3.setup_default_session()
    events = boto3.DEFAULT_SESSION.events  # type: ignore[union-attr]
    for service, probability in faults.get("throttles", {}).items():
        if probability > 0:
            events.register(f"before-send.{service}", _throttler(service, probability, chance))
    raise_probability, crash_probability = faults.get("raise", 0.0), faults.get("crash", 0.0)
    operations, delays = faults.get("raise_operations", {}), faults.get("delay", {})
    if raise_probability > 0 or crash_probability > 0 or operations or delays:
        events.register(
            "before-call", _saboteur(raise_probability, crash_probability, chance, operations, delays)
        )


def _throttler(service: str, probability: float, chance: random.Random) -> Any:
    status, headers, body = _THROTTLES[service]

    def throttle(request: Any, **_: Any) -> AWSResponse | None:
        if chance.random() >= probability:
            return None
        # A response returned from before-send replaces the HTTP exchange; parsing and the
        # retry handler treat it like the service's own answer.
        return AWSResponse(request.url, status, headers, _Raw(json.dumps(body).encode()))  # type: ignore[arg-type]

    return throttle


def _saboteur(
    raise_probability: float,
    crash_probability: float,
    chance: random.Random,
    raise_operations: dict[str, float] | None = None,
    delays: dict[str, float] | None = None,
) -> Any:
    def sabotage(event_name: str, **_: Any) -> None:
        operation = event_name.removeprefix("before-call.")
        name = operation.rpartition(".")[2]  # "dynamodb.BatchWriteItem" -> "BatchWriteItem"
        if delay := (delays or {}).get(name, (delays or {}).get("*", 0.0)):
            time.sleep(delay)
        if chance.random() < crash_probability:
            os._exit(CRASH_EXIT_CODE)
        if chance.random() < max(raise_probability, (raise_operations or {}).get(name, 0.0)):
            raise InjectedFault(f"Injected fault (raise-in) before {operation}")

    return sabotage


class _Raw:
    """The slice of urllib3's response that AWSResponse reads."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, *_: Any, **__: Any) -> Any:
        yield self._body
