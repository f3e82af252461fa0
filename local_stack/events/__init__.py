"""EventBridge, locally: the template's scheduled rules invoking their target functions."""

from local_stack.events.schedules import Scheduler, schedules_of

__all__ = ["Scheduler", "schedules_of"]
