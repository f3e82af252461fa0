"""CloudWatch in the stack: the alarms evaluated on their own timer, the API's access log delivered
to its subscription filters' functions, and so are events put into any other subscribed log group
(the edge's logs: subscriptions.py)."""

import logging
from pathlib import Path
from typing import Any

from local_stack.cloudwatch import subscriptions
from local_stack.cloudwatch.alarms import AlarmEvaluator, alarm_specs
from local_stack.cloudwatch.log_state import AccessLogState
from local_stack.cloudwatch.logs import SUBSCRIPTION_FILTER
from local_stack.kms import KeyRing
from local_stack.service import Service, Stack

log = logging.getLogger(__name__)


class CloudWatchService(Service):
    name = "cloudwatch"

    def __init__(self) -> None:
        self._parts: list[Any] = []
        self._log_state: AccessLogState | None = None

    def attach(self, stack: Stack) -> None:
        subscriptions.install()

    def connect(self, stack: Stack) -> None:
        runtime = stack.runtime

        def function_of(arn: str) -> str | None:
            spec = runtime.function(arn)
            return spec.name if spec is not None else None

        subscriptions.set_delivery(
            subscriptions.runtime_delivery(
                function_of, runtime.invoke_async, stack.options.faults.duplicate_logs
            )
        )

    def durable_state(self, stack: Stack, data_dir: Path) -> AccessLogState:
        self._log_state = AccessLogState()
        return self._log_state

    def start(self, stack: Stack) -> None:
        options, resources = stack.options, stack.resources
        evaluator = AlarmEvaluator(
            alarm_specs(resources),
            stack.moto.url,
            options.region,
            options.time_scale,
            keys=KeyRing.from_resources(resources) if options.iam else None,
        )
        # Other subscribed log groups (the edge's logs), delivered from PutLogEvents on.
        subscriptions.create_subscribed_groups(
            resources.of_type(SUBSCRIPTION_FILTER),
            stack.account_id,
            options.region,
            skip=stack.access_log.name if stack.access_log else None,
        )
        # Lines of the previous run not yet delivered go first (cloudwatch/log_state.py): the access
        # log's, and the subscribed function groups' (the API function's destination lines).
        groups = [group for group in (stack.access_log, *stack.function_logs) if group is not None]
        left = sum(self._log_state.attach(group) for group in groups) if self._log_state else 0
        if left:
            log.info("Log groups: %d lines not yet delivered before the restart delivered again", left)
        for part in (evaluator, stack.access_log, *stack.function_logs):
            if part is not None:
                part.start()
                self._parts.append(part)

    def stop(self) -> None:
        subscriptions.set_delivery(None)
        for part in self._parts:
            part.stop()
        self._parts.clear()
        self._log_state = None
