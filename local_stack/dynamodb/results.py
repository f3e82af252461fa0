"""DynamoDB's read answers (Query, Scan, GetItem, BatchGetItem, TransactGetItems) written as JSON
straight away.

moto writes every answer through its generic serializer, which walks the operation's output shape
value by value: about 2 ms an item on this machine, so a search that reads an owner's 100,000 links
(docs/search.md) took minutes where DynamoDB takes well under a second, and a batch change's page
of 250 links spent most of its time in its BatchGetItem answers. A read's answer is already DynamoDB
JSON (``dynamo_to_dict``: attribute values as ``{"S": ...}``): it is written
with ``json.dumps``; binary values in base64 and times as epoch seconds, as the serializer writes
them for the JSON protocol (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.LowLevelAPI.html).
Anything else (an error, another operation) takes moto's path unchanged."""

import base64
import json
from datetime import datetime
from typing import Any

from moto.core.responses import ActionContext, ActionResult
from moto.dynamodb.responses import DynamoResult

_FAST_OPERATIONS = frozenset({"Query", "Scan", "GetItem", "BatchGetItem", "TransactGetItems"})


def _encode(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime):
        return value.timestamp()
    raise TypeError(f"not JSON: {type(value).__name__}")


def install() -> None:
    """Write the read operations' answers with json.dumps; idempotent."""
    if getattr(ActionResult.execute_result, "_fast_dynamodb", False):
        return
    generic = ActionResult.execute_result

    def execute_result(self: ActionResult, context: ActionContext) -> Any:
        result = self.result
        if (
            isinstance(self, DynamoResult)
            and context.operation_model.name in _FAST_OPERATIONS
            and isinstance(result, dict)
        ):
            body = json.dumps(
                {key: value for key, value in result.items() if value is not None}, default=_encode
            )
            return 200, {"Content-Type": "application/x-amz-json-1.0"}, body
        return generic(self, context)

    execute_result._fast_dynamodb = True  # type: ignore[attr-defined]
    execute_result.__wrapped__ = generic  # type: ignore[attr-defined]
    ActionResult.execute_result = execute_result  # type: ignore[method-assign]
