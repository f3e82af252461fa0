"""Lambda in the stack's start and stop: its queue of asynchronous events as part of the durable
state (awslambda/event_queue.py), and the pollers of its SQS event source mappings
(awslambda/sqs_sources.py). The runtime and its Invoke endpoint are the stack's own servers
(stack.py)."""

import logging
from pathlib import Path

from local_stack.awslambda.event_queue import AsyncEventQueue
from local_stack.awslambda.sqs_sources import SqsPollers, SqsSource, sqs_sources
from local_stack.durability import ServiceState
from local_stack.service import Service, Stack

log = logging.getLogger(__name__)


class LambdaService(Service):
    name = "lambda"

    def __init__(self) -> None:
        self._queue: AsyncEventQueue | None = None
        self._sources: list[SqsSource] = []
        self._pollers: SqsPollers | None = None

    def configure(self, stack: Stack) -> None:
        # Before anything serves: a mapping Lambda would refuse stops the start (MappingRefused).
        self._sources = sqs_sources(stack.resources, stack.warn)

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

    def start(self, stack: Stack) -> None:
        # Once everything serves (and the queues' messages are restored): the mappings poll.
        self._pollers = SqsPollers(
            self._sources, stack.runtime, stack.resources.aws_endpoint, stack.options.region
        )
        self._pollers.start()

    def stop(self) -> None:
        # Before the runtime stops (stack.py): no new batch is received while its workers end.
        if self._pollers is not None:
            self._pollers.stop()
            self._pollers = None
        self._queue = None
