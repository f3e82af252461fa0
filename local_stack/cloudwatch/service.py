"""CloudWatch in the stack: the alarms evaluated on their own timer, and the API's access log
delivered to its subscription filters' functions."""

from typing import Any

from local_stack.cloudwatch.alarms import AlarmEvaluator, alarm_specs
from local_stack.kms import KeyRing
from local_stack.service import Service, Stack


class CloudWatchService(Service):
    name = "cloudwatch"

    def __init__(self) -> None:
        self._parts: list[Any] = []

    def start(self, stack: Stack) -> None:
        options, resources = stack.options, stack.resources
        evaluator = AlarmEvaluator(
            alarm_specs(resources),
            stack.moto.url,
            options.region,
            options.time_scale,
            keys=KeyRing.from_resources(resources) if options.iam else None,
        )
        for part in (evaluator, stack.access_log):
            if part is not None:
                part.start()
                self._parts.append(part)

    def stop(self) -> None:
        for part in self._parts:
            part.stop()
        self._parts.clear()
