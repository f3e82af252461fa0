"""EventBridge in the stack: put events delivered to their rules' targets, and the schedules."""

from collections.abc import Callable

from local_stack.events.rules import deliver_rule_targets
from local_stack.events.schedules import Scheduler, schedules_of
from local_stack.service import Service, Stack


class EventsService(Service):
    name = "events"

    def __init__(self) -> None:
        self._undo_rules: Callable[[], None] | None = None
        self._scheduler: Scheduler | None = None

    def connect(self, stack: Stack) -> None:
        # Put events reach their rules' function and topic targets (moto delivers only some kinds).
        self._undo_rules = deliver_rule_targets(stack.invoke_async)

    def start(self, stack: Stack) -> None:
        options = stack.options
        self._scheduler = Scheduler(
            schedules_of(stack.resources, stack.runtime, options.time_scale), stack.runtime, options.region
        )
        self._scheduler.start()

    def stop(self) -> None:
        if self._undo_rules is not None:
            self._undo_rules()
            self._undo_rules = None
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None
