"""The local stack keeps what it acknowledged: the embedded AWS's tables, queues, API keys and S3
objects survive a stop, `kill -9` and (all but the last second or so) a power loss. This package is
the journal engine: see state.py for the mechanism and the guarantees, service.py for what a
service's part implements. Each service's part lives in its package (``local_stack.dynamodb.state``,
``sqs.state``, ``s3.state``, ``apigateway.state``)."""

from local_stack.durability.journal import CorruptStateError
from local_stack.durability.service import ServiceState
from local_stack.durability.state import DataDirInUseError, DurableState, StateSummary

__all__ = [
    "CorruptStateError",
    "DataDirInUseError",
    "DurableState",
    "ServiceState",
    "StateSummary",
]
