"""EventBridge, locally: the template's scheduled rules invoking their target functions
(``schedules``), and put events delivered to their rules' targets (``rules``)."""

from local_stack.events.rules import deliver_rule_targets
from local_stack.events.schedules import Scheduler, schedules_of

__all__ = ["Scheduler", "deliver_rule_targets", "schedules_of"]
