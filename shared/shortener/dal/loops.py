"""The tokens table (one row per loop) and starting loops with an asynchronous invoke."""

import json
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shortener import clock
from shortener.dal import aws
from shortener.models.loops import LoopInvocation, LoopToken

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient


class LoopsStore(aws.DynamoDBTable):
    """Data access for the tokens table."""

    def create(self, queue_url: str) -> LoopToken:
        """A new token row for a loop that is about to be started."""
        now = clock.epoch_seconds()
        token = LoopToken(
            queue_url=queue_url,
            token=uuid.uuid4().hex,
            loop_id=uuid.uuid4().hex,
            started_at=now,
            last_used=now,
        )
        self.client.put_item(
            TableName=self.table_name,
            Item=_to_item(token),
            ConditionExpression="attribute_not_exists(#token)",
            ExpressionAttributeNames={"#token": "token"},
        )
        return token

    def claim(self, queue_url: str, token: str) -> LoopToken | None:
        """A new row for ``token`` (a loop slot chosen by the caller), written only if no row holds
        that token yet: of two writers claiming one slot, one gets the row and the other None."""
        now = clock.epoch_seconds()
        claimed = LoopToken(
            queue_url=queue_url, token=token, loop_id=uuid.uuid4().hex, started_at=now, last_used=now
        )
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=_to_item(claimed),
                ConditionExpression="attribute_not_exists(#token)",
                ExpressionAttributeNames={"#token": "token"},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return None
            raise
        return claimed

    def heartbeat(self, loop: LoopInvocation) -> bool:
        """Record that ``loop`` is alive: one conditional write that succeeds only while its token
        exists and still names this loop id. False means the loop must stop."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"queue_url": {"S": loop.queue_url}, "token": {"S": loop.token}},
                UpdateExpression="SET last_used = :now",
                ConditionExpression="attribute_exists(#token) AND loop_id = :loop_id",
                ExpressionAttributeNames={"#token": "token"},
                ExpressionAttributeValues={
                    ":now": {"N": str(clock.epoch_seconds())},
                    ":loop_id": {"S": loop.loop_id},
                },
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def take_over(self, token: LoopToken, stale_before: int) -> LoopToken | None:
        """Give ``token`` a new loop id if it still has the loop id and the stale heartbeat that
        were read: one conditional write, so of two racing restarters only one wins. The new row,
        or None when another writer got there first or the loop came back to life."""
        now = clock.epoch_seconds()
        revived = token.model_copy(update={"loop_id": uuid.uuid4().hex, "last_used": now, "started_at": now})
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"queue_url": {"S": token.queue_url}, "token": {"S": token.token}},
                UpdateExpression="SET loop_id = :new_id, last_used = :now, started_at = :now",
                ConditionExpression=(
                    "loop_id = :old_id AND (attribute_not_exists(last_used) OR last_used < :stale_before)"
                ),
                ExpressionAttributeValues={
                    ":new_id": {"S": revived.loop_id},
                    ":old_id": {"S": token.loop_id},
                    ":now": {"N": str(now)},
                    ":stale_before": {"N": str(stale_before)},
                },
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return None
            raise
        return revived

    def delete(self, queue_url: str, token: str) -> None:
        """Remove a token row; its loop stops at its next heartbeat."""
        self.client.delete_item(
            TableName=self.table_name, Key={"queue_url": {"S": queue_url}, "token": {"S": token}}
        )

    def list_for_queue(self, queue_url: str) -> list[LoopToken]:
        """Every token of one queue (consistent, all pages)."""
        paginator = self.client.get_paginator("query")
        pages = paginator.paginate(
            TableName=self.table_name,
            KeyConditionExpression="queue_url = :queue_url",
            ExpressionAttributeValues={":queue_url": {"S": queue_url}},
            ConsistentRead=True,
        )
        return [_from_item(item) for page in pages for item in page.get("Items", [])]

    def scan(self, page_size: int | None = None) -> Iterator[LoopToken]:
        """Every token of every queue: a consistent, paginated scan."""
        paginator = self.client.get_paginator("scan")
        options: dict[str, Any] = {"TableName": self.table_name, "ConsistentRead": True}
        if page_size:
            options["PaginationConfig"] = {"PageSize": page_size}
        for page in paginator.paginate(**options):
            for item in page.get("Items", []):
                yield _from_item(item)


class LoopStarter:
    """Starts a loop: an asynchronous invoke of the function that drains its queue."""

    def __init__(self, client: "LambdaClient | None" = None) -> None:
        self._client = client

    @property
    def client(self) -> "LambdaClient":
        return self._client or aws.lambda_()

    def start(self, function_name: str, loop: LoopInvocation) -> None:
        self.client.invoke(
            FunctionName=function_name,
            InvocationType="Event",
            Payload=json.dumps(loop.model_dump()).encode(),
        )


def _to_item(token: LoopToken) -> dict[str, Any]:
    item: dict[str, Any] = {
        "queue_url": {"S": token.queue_url},
        "token": {"S": token.token},
        "loop_id": {"S": token.loop_id},
        "started_at": {"N": str(token.started_at)},
    }
    if token.last_used is not None:
        item["last_used"] = {"N": str(token.last_used)}
    return item


def _from_item(item: dict[str, Any]) -> LoopToken:
    return LoopToken(
        queue_url=item["queue_url"]["S"],
        token=item["token"]["S"],
        loop_id=item["loop_id"]["S"],
        started_at=int(item.get("started_at", {}).get("N", "0")),
        last_used=int(item["last_used"]["N"]) if "last_used" in item else None,
    )
