"""Wrong passwords per link and client (shortener.links.protection's ``PasswordTries``), kept in
the clicks table so that every function instance agrees: one item per link and client digest,
``{pk: "#tries#<code>", sk: <client digest>, tries, expires_at}``, removed by the table's TTL after
its window. DynamoDB deletes expired items only eventually ("Using time to live (TTL) in
DynamoDB", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html), so an item
past its ``expires_at`` counts as absent. No address is stored, only a digest of it keyed by the
link's password hash (shortener.links.protection.client_key).

A stack without a clicks table counts in the container's memory (``MemoryPasswordTries``)."""

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from shortener import aws

TRIES_PK_PREFIX = "#tries#"


class PasswordTriesStore(aws.DynamoDBTable):
    """Wrong passwords counted in the clicks table."""

    def __init__(self, table_name: str, client: Any = None) -> None:
        super().__init__(table_name, client)

    @aws.throttling_is_busy
    def wrong_tries(self, code: str, client: str, now: datetime) -> tuple[int, datetime | None]:
        item = self.client.get_item(
            TableName=self.table_name, Key=_key(code, client), ConsistentRead=True
        ).get("Item")
        if not item:
            return 0, None
        ends = datetime.fromtimestamp(int(item["expires_at"]["N"]), UTC)
        if ends <= now:
            return 0, None
        return int(item["tries"]["N"]), ends

    @aws.throttling_is_busy
    def add_wrong_try(self, code: str, client: str, now: datetime, window: timedelta) -> None:
        key = _key(code, client)
        stamp = {":now": {"N": str(int(now.timestamp()))}}
        try:
            # Within the running window: one more.
            self.client.update_item(
                TableName=self.table_name,
                Key=key,
                UpdateExpression="ADD tries :one",
                ConditionExpression="expires_at > :now",
                ExpressionAttributeValues={":one": {"N": "1"}, **stamp},
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            # None running (or an expired item the TTL has not removed yet): a new window. An
            # UpdateItem, not a PutItem: the API function's role has no PutItem on this table.
            self.client.update_item(
                TableName=self.table_name,
                Key=key,
                UpdateExpression="SET tries = :one, expires_at = :ends",
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":ends": {"N": str(int((now + window).timestamp()))},
                },
            )


class MemoryPasswordTries:
    """Wrong passwords counted in this container only (a stack without a clicks table)."""

    def __init__(self) -> None:
        self._tries: dict[tuple[str, str], tuple[int, datetime]] = {}
        self._lock = threading.Lock()

    def wrong_tries(self, code: str, client: str, now: datetime) -> tuple[int, datetime | None]:
        with self._lock:
            count, ends = self._tries.get((code, client), (0, now))
        return (count, ends) if ends > now else (0, None)

    def add_wrong_try(self, code: str, client: str, now: datetime, window: timedelta) -> None:
        with self._lock:
            count, ends = self._tries.get((code, client), (0, now))
            self._tries[(code, client)] = (count + 1, ends) if ends > now else (1, now + window)


def _key(code: str, client: str) -> dict[str, Any]:
    return {"pk": {"S": TRIES_PK_PREFIX + code}, "sk": {"S": client}}
