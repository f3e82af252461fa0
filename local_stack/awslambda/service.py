"""Lambda in the stack's start and stop: its queue of asynchronous events as part of the durable
state (awslambda/event_queue.py). The runtime and its Invoke endpoint are the stack's own servers
(stack.py)."""

import logging
from pathlib import Path

from local_stack.awslambda.event_queue import AsyncEventQueue
from local_stack.durability import ServiceState
from local_stack.service import Service, Stack

log = logging.getLogger(__name__)


class LambdaService(Service):
    name = "lambda"

    def __init__(self) -> None:
        self._queue: AsyncEventQueue | None = None

    def durable_state(self, stack: Stack, data_dir: Path) -> AsyncEventQueue:
        self._queue = AsyncEventQueue()
        if stack.runtime is not None:
            stack.runtime.keep_events(self._queue)
        return self._queue

    def restored(self, stack: Stack, state: ServiceState | None) -> None:
        if self._queue is None:
            return
        # Invocations the previous run had not finished: Lambda would retry them.
        redelivered = self._queue.redeliver(stack.invoke_async)
        if redelivered:
            log.info(
                "Lambda: %d asynchronous events not yet handled before the restart delivered again",
                redelivered,
            )

    def stop(self) -> None:
        self._queue = None
