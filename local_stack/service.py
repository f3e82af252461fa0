"""The shape of one emulated AWS service, as the stack (stack.py) starts and stops it.

Each service package exports one class of this shape; ``local_stack.registry.SERVICES`` lists them,
and the stack makes one of each per start and calls every hook, in the registry's order, at its
moment (stop in reverse). A hook a service does not need is the no-op inherited here.

This module imports no service package (each of them imports it), so the parts of the stack a hook
reads are given by the :class:`Stack` protocol, typed loosely."""

from pathlib import Path
from typing import Any, Protocol

from local_stack.durability import ServiceState


class Stack(Protocol):
    """What a service's hooks read of the running stack (local_stack.stack.LocalStack)."""

    @property
    def options(self) -> Any: ...  # StackOptions: the command line

    @property
    def account_id(self) -> str: ...

    @property
    def resources(self) -> Any: ...  # the template's Resources, named (None before `configure`)

    @property
    def moto(self) -> Any: ...  # the EmbeddedAws

    @property
    def runtime(self) -> Any: ...  # the LambdaRuntime (from `connect` on)

    @property
    def access(self) -> Any: ...  # the IAM AccessControl in front of the embedded AWS

    @property
    def function_secret(self) -> str: ...  # the secret of the functions' keys (iam/signing_secret.py)

    @property
    def access_log(self) -> Any: ...  # the stage's access log, a LogGroup or None (from `start` on)

    @property
    def function_logs(self) -> Any: ...  # the functions' subscribed log groups, LogGroups (from `start` on)

    def warn(self, message: str) -> None:
        """A warning for the banner (and the log)."""

    def invoke_async(self, function_arn: str, event: dict[str, Any], on_done: Any = None) -> bool:
        """Invoke a function asynchronously, as AWS's services do; False if it is not running."""


class Service:
    """One emulated service: override the hooks it needs."""

    name = ""

    def attach(self, stack: Stack) -> None:
        """Before the embedded AWS serves: middleware inside it."""

    def configure(self, stack: Stack) -> None:
        """The embedded AWS serves and the template's resources are named, not yet created."""

    def connect(self, stack: Stack) -> None:
        """The Lambda runtime runs: what delivers this service's events to functions (before the
        template's resources are created, so none is missed)."""

    def durable_state(self, stack: Stack, data_dir: Path) -> ServiceState | None:
        """This service's part of the durable state (durability/service.py), if it keeps any."""
        return None

    def restored(self, stack: Stack, state: ServiceState | None) -> None:
        """The data dir's state is back (called only when the stack persists)."""

    def start(self, stack: Stack) -> None:
        """Everything serves: start this service's own timers."""

    def stop(self) -> None:
        """Stop what ``connect`` and ``start`` started (in the registry's reverse order)."""
