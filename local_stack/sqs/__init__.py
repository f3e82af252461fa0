"""SQS, locally: moto's queues (served concurrently by the embedded AWS, whose backlog fixes are in
``local_stack.embedded.server``) and ``state``: SqsState, the queues' part of the durable state."""

from local_stack.sqs.state import SqsState

__all__ = ["SqsState"]
