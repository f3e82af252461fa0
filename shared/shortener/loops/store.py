"""The tokens table (one row per loop) and starting loops with an asynchronous invoke."""

import json
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shortener import aws, clock
from shortener.loops.model import LoopInvocation, LoopToken

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
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return None
            raise
        return claimed

    def heartbeat(self, loop: LoopInvocation, holder: str, *, throttled_at: int | None = None) -> bool:
        """Record that invocation ``loop.seq`` of ``loop`` is alive; False means it must stop.

        One conditional write that is also the fence: it claims the token when the row still
        names this loop id and the previous sequence number (the invocation's first heartbeat),
        or refreshes it when the row already names this sequence number *and* this holder (every
        later heartbeat, and a first one whose answer was lost and is tried again). A duplicated
        or retried delivery of an event that already ran has another holder nonce, so it fails
        here; so does an invocation of a loop id the restarter replaced, or of a deleted token.
        ``throttled_at``: when the table last throttled the loop's writes (the scaler reads it)."""
        throttled: dict[str, Any] = (
            {":throttled": {"N": str(throttled_at)}} if throttled_at is not None else {}
        )
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"queue_url": {"S": loop.queue_url}, "token": {"S": loop.token}},
                UpdateExpression="SET last_used = :now, seq = :seq, holder = :holder"
                + (", throttled_at = :throttled" if throttled else ""),
                ConditionExpression=(
                    "loop_id = :loop_id AND (seq = :previous OR (seq = :seq AND holder = :holder))"
                ),
                ExpressionAttributeValues={
                    ":now": {"N": str(clock.epoch_seconds())},
                    ":loop_id": {"S": loop.loop_id},
                    ":seq": {"N": str(loop.seq)},
                    ":previous": {"N": str(loop.seq - 1)},
                    ":holder": {"S": holder},
                    **throttled,
                },
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def take_over(self, token: LoopToken, stale_before: int) -> LoopToken | None:
        """Give ``token`` a new loop id if it still has the loop id and the stale heartbeat that
        were read: one conditional write, so of two racing restarters only one wins. The sequence
        starts again at 0, so the new loop's first invocation claims it and the old loop, if it
        was only slow, fails its next heartbeat on the loop id. The new row, or None when another
        writer got there first or the loop came back to life."""
        now = clock.epoch_seconds()
        revived = token.model_copy(
            update={
                "loop_id": uuid.uuid4().hex,
                "last_used": now,
                "started_at": now,
                "seq": 0,
                "holder": None,
            }
        )
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"queue_url": {"S": token.queue_url}, "token": {"S": token.token}},
                UpdateExpression=(
                    "SET loop_id = :new_id, last_used = :now, started_at = :now, seq = :zero REMOVE holder"
                ),
                ConditionExpression=(
                    "loop_id = :old_id AND (attribute_not_exists(last_used) OR last_used < :stale_before)"
                ),
                ExpressionAttributeValues={
                    ":new_id": {"S": revived.loop_id},
                    ":old_id": {"S": token.loop_id},
                    ":now": {"N": str(now)},
                    ":stale_before": {"N": str(stale_before)},
                    ":zero": {"N": "0"},
                },
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return None
            raise
        return revived

    def take_over_failed(self, failed: LoopInvocation) -> LoopToken | None:
        """Give the token a new loop id if its loop is still the one whose invocation ``failed``
        (Lambda reported it to the on-failure destination) and no later invocation of it claimed
        the token: one conditional write, whatever the heartbeat's age, so of two racing revivals
        only one wins, and a successor started just before the failure stops at its first
        heartbeat. The new row, or None when the loop went on or was revived already."""
        now = clock.epoch_seconds()
        loop_id = uuid.uuid4().hex
        try:
            response = self.client.update_item(
                TableName=self.table_name,
                Key={"queue_url": {"S": failed.queue_url}, "token": {"S": failed.token}},
                UpdateExpression=(
                    "SET loop_id = :new_id, last_used = :now, started_at = :now, seq = :zero REMOVE holder"
                ),
                ConditionExpression="loop_id = :old_id AND seq <= :seq",
                ExpressionAttributeValues={
                    ":new_id": {"S": loop_id},
                    ":old_id": {"S": failed.loop_id},
                    ":now": {"N": str(now)},
                    ":seq": {"N": str(failed.seq)},
                    ":zero": {"N": "0"},
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return None
            raise
        item = response["Attributes"]
        return LoopToken(
            queue_url=failed.queue_url,
            token=failed.token,
            loop_id=loop_id,
            started_at=int(item["started_at"]["N"]),
            last_used=now,
            seq=0,
        )

    def mark_unstarted(self, token: LoopToken) -> bool:
        """Make ``token`` look dead at once, after starting its loop failed: its heartbeat is
        removed, so the restarter's next run revives it instead of waiting for the heartbeat that
        the claim or take-over wrote to go stale. Only while no invocation has claimed it yet (the
        invoke may have got through after all). Whether the row was changed."""
        return self._forget_heartbeat(
            token.queue_url,
            token.token,
            "loop_id = :loop_id AND seq = :seq AND attribute_not_exists(holder)",
            {":loop_id": {"S": token.loop_id}, ":seq": {"N": "0"}},
        )

    def release(self, loop: LoopInvocation, holder: str) -> bool:
        """Make ``loop``'s token look dead at once, after this invocation (which holds it) could
        not start its successor: the restarter's next run revives it. Whether the row changed."""
        return self._forget_heartbeat(
            loop.queue_url,
            loop.token,
            "loop_id = :loop_id AND seq = :seq AND holder = :holder",
            {":loop_id": {"S": loop.loop_id}, ":seq": {"N": str(loop.seq)}, ":holder": {"S": holder}},
        )

    def _forget_heartbeat(self, queue_url: str, token: str, condition: str, values: dict[str, Any]) -> bool:
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"queue_url": {"S": queue_url}, "token": {"S": token}},
                UpdateExpression="REMOVE last_used",
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

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
        "seq": {"N": str(token.seq)},
    }
    if token.last_used is not None:
        item["last_used"] = {"N": str(token.last_used)}
    if token.holder is not None:
        item["holder"] = {"S": token.holder}
    return item


def _from_item(item: dict[str, Any]) -> LoopToken:
    return LoopToken(
        queue_url=item["queue_url"]["S"],
        token=item["token"]["S"],
        loop_id=item["loop_id"]["S"],
        started_at=int(item.get("started_at", {}).get("N", "0")),
        last_used=int(item["last_used"]["N"]) if "last_used" in item else None,
        seq=int(item.get("seq", {}).get("N", "0")),
        holder=item.get("holder", {}).get("S"),
        throttled_at=int(item["throttled_at"]["N"]) if "throttled_at" in item else None,
    )
