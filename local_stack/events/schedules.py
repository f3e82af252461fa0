"""EventBridge schedules, locally: each rule with a rate() expression fires its function targets at
that rate divided by the time scale, with the scheduled-event shape
(`sam local generate-event cloudwatch scheduled-event`)."""

import json
import logging
import re
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from local_stack.awslambda.runtime import LambdaRuntime
from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudformation.resources import RULE, Resources

log = logging.getLogger(__name__)

_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


def rate_seconds(expression: str) -> float | None:
    """The interval of a rate() expression in seconds; None for anything else (cron())."""
    match = _RATE.match(expression.strip())
    if not match:
        return None
    return int(match[1]) * _UNIT_SECONDS[match[2].rstrip("s")]


def scheduled_event(rule_arn: str, region: str, now: datetime | None = None) -> dict[str, Any]:
    """The event EventBridge sends a target when a schedule fires."""
    moment = now or datetime.now(UTC)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [rule_arn],
        "detail": {},
    }


@dataclass(frozen=True)
class Schedule:
    """One rule's timer: which functions it invokes, how often (in local seconds)."""

    rule: str
    rule_arn: str
    interval_seconds: float
    targets: tuple[tuple[str, str | None], ...]  # (function name, constant Input or None)


def schedules_of(resources: Resources, runtime: LambdaRuntime, time_scale: float) -> list[Schedule]:
    """The schedules to run: enabled rate() rules whose targets are local functions."""
    schedules = []
    for logical_id, properties in resources.of_type(RULE).items():
        expression = properties.get("ScheduleExpression")
        if not expression or properties.get("State", "ENABLED") != "ENABLED":
            continue
        interval = rate_seconds(expression)
        if interval is None:
            log.warning("%s: %s is not a rate(); it will not fire locally", logical_id, expression)
            continue
        targets = tuple(
            (spec.name, target.get("Input"))
            for target in properties.get("Targets", [])
            if (spec := runtime.function(target["Arn"])) is not None
        )
        if targets:
            schedules.append(
                Schedule(
                    resources.physical_id(logical_id),
                    resources.resolver.get_att(logical_id, "Arn"),
                    interval / time_scale,
                    targets,
                )
            )
    return schedules


class Scheduler:
    """Fires every schedule on its own timer thread until stopped."""

    def __init__(self, schedules: list[Schedule], runtime: LambdaRuntime, region: str) -> None:
        self._schedules = schedules
        self._runtime = runtime
        self._region = region
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for schedule in self._schedules:
            thread = threading.Thread(target=self._run, args=(schedule,), name=schedule.rule, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _run(self, schedule: Schedule) -> None:
        # Unlike EventBridge, the first firing comes at start, not one interval later: a fresh
        # `make run` then starts the minimum loops (and revives restored ones) at once, instead of
        # leaving a newcomer's first upload queued for a minute.
        while not self._stopping.is_set():
            for function, constant_input in schedule.targets:
                event = (
                    json.loads(constant_input)
                    if constant_input
                    else scheduled_event(schedule.rule_arn, self._region)
                )
                # DEBUG: at --time-scale 20 a rate(1 minute) fires every 3 s; what it does is logged.
                log.debug("schedule %s fires %s", schedule.rule, function)
                self._runtime.invoke_async(function, event)
            if self._stopping.wait(schedule.interval_seconds):
                return
