"""S3 in the stack: the buckets' presigned URLs a browser may use, their event notifications
delivered to the functions, and the objects' durable state (with the events not yet handled)."""

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from local_stack.durability import ServiceState
from local_stack.s3.buckets import deliver_notifications
from local_stack.s3.state import S3State
from local_stack.service import Service, Stack

log = logging.getLogger(__name__)

# The type's name, not cloudformation.resources.BUCKET: the embedded AWS imports this package, and
# CloudFormation imports the embedded AWS.
BUCKET = "AWS::S3::Bucket"


class S3Service(Service):
    name = "s3"

    def __init__(self) -> None:
        self._stack: Stack | None = None
        self._state: S3State | None = None
        self._undo_notifications: Callable[[], None] | None = None

    def configure(self, stack: Stack) -> None:
        # A browser may send only the presigned job-file requests of the template's buckets.
        resources = stack.resources
        stack.moto.presigned_exemption.buckets.update(
            resources.physical_id(logical_id) for logical_id in resources.of_type(BUCKET)
        )

    def connect(self, stack: Stack) -> None:
        self._stack = stack
        self._undo_notifications = deliver_notifications(self._invoke)

    def durable_state(self, stack: Stack, data_dir: Path) -> S3State:
        resources = stack.resources
        buckets = {logical_id: resources.physical_id(logical_id) for logical_id in resources.of_type(BUCKET)}
        self._state = S3State(stack.account_id, data_dir, buckets)
        return self._state

    def restored(self, stack: Stack, state: ServiceState | None) -> None:
        if self._state is None:
            return
        # Events S3 sent whose invocation had not finished when the stack stopped: Lambda's queue
        # would still hold them (see s3/state.py).
        redelivered = self._state.redeliver(stack.invoke_async)
        if redelivered:
            log.info(
                "S3: %d event notifications not yet handled before the restart delivered again", redelivered
            )

    def _invoke(self, function_arn: str, event: dict[str, Any]) -> bool:
        """S3 invokes a notified function asynchronously; the durable state keeps the event with its
        object until the invocation is over."""
        assert self._stack is not None
        on_done = self._state.event_sent(event, function_arn) if self._state is not None else None
        return self._stack.invoke_async(function_arn, event, on_done)

    def stop(self) -> None:
        if self._undo_notifications is not None:
            self._undo_notifications()
            self._undo_notifications = None
        self._state = None
