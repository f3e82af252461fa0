"""The local stack keeps what it acknowledged: the embedded AWS's tables, queues, API keys and S3
objects survive a stop, `kill -9` and (all but the last second or so) a power loss. See state.py
for the mechanism and the guarantees, service.py for adding a service, s3.py for objects' bodies."""

from local_stack.durability.apigateway import ApiKeysState
from local_stack.durability.dynamodb import DynamoDbState
from local_stack.durability.journal import CorruptStateError
from local_stack.durability.s3 import S3State
from local_stack.durability.service import ServiceState
from local_stack.durability.sqs import SqsState
from local_stack.durability.state import DataDirInUseError, DurableState, StateSummary

__all__ = [
    "ApiKeysState",
    "CorruptStateError",
    "DataDirInUseError",
    "DurableState",
    "DynamoDbState",
    "S3State",
    "ServiceState",
    "SqsState",
    "StateSummary",
]
