"""SQS in the stack: the queues' durable state (moto serves the queues themselves)."""

from pathlib import Path

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.service import Service, Stack
from local_stack.sqs.state import SqsState


class SqsService(Service):
    name = "sqs"

    def durable_state(self, stack: Stack, data_dir: Path) -> SqsState:
        return SqsState(ACCOUNT_ID, stack.resources.region)
