"""The blocklist table: one item per blocked host."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from shortener import aws
from shortener.access.blocklist_model import BlockedHost

_BATCH_GET_LIMIT = 100
_MAX_UNPROCESSED_ROUNDS = 10


class BlocklistStore(aws.DynamoDBTable):
    """Data access for the blocklist table."""

    def find(self, hosts: Sequence[str]) -> set[str]:
        """Which of ``hosts`` are blocked (consistent reads: a block applies at once)."""
        keys = [{"host": {"S": host}} for host in dict.fromkeys(hosts)]
        found: set[str] = set()
        for start in range(0, len(keys), _BATCH_GET_LIMIT):
            pending: Any = {
                self.table_name: {
                    "Keys": keys[start : start + _BATCH_GET_LIMIT],
                    "ConsistentRead": True,
                    "ProjectionExpression": "host",
                }
            }
            for _ in range(_MAX_UNPROCESSED_ROUNDS):
                response = self.client.batch_get_item(RequestItems=pending)
                found.update(
                    item["host"]["S"] for item in response.get("Responses", {}).get(self.table_name, [])
                )
                pending = response.get("UnprocessedKeys") or {}
                if not pending:
                    break
            else:
                raise RuntimeError("blocklist keys stayed unprocessed after retries")
        return found

    def add(self, entry: BlockedHost) -> BlockedHost:
        """Block a host: the entry stored, which is the one already there when the host was
        blocked before (its reason is never overwritten by a second block)."""
        item: dict[str, Any] = {
            "host": {"S": entry.host},
            "created_at": {"S": entry.created_at.isoformat()},
            "added_by": {"S": entry.added_by},
        }
        if entry.reason:
            item["reason"] = {"S": entry.reason}
        try:
            self.client.put_item(
                TableName=self.table_name, Item=item, ConditionExpression="attribute_not_exists(host)"
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            existing = self.client.get_item(
                TableName=self.table_name, Key={"host": {"S": entry.host}}, ConsistentRead=True
            ).get("Item")
            # Unblocked in between: the new entry stands (it was not written, so write it).
            if existing is None:
                self.client.put_item(TableName=self.table_name, Item=item)
                return entry
            return _entry(existing)
        return entry

    def remove(self, host: str) -> bool:
        """Unblock a host; False when it was not blocked."""
        response = self.client.delete_item(
            TableName=self.table_name, Key={"host": {"S": host}}, ReturnValues="ALL_OLD"
        )
        return bool(response.get("Attributes"))

    def list_hosts(self) -> set[str]:
        """Every blocked host (a consistent scan of the hosts only; the list is short)."""
        hosts: set[str] = set()
        for page in self.client.get_paginator("scan").paginate(
            TableName=self.table_name, ConsistentRead=True, ProjectionExpression="host"
        ):
            hosts.update(item["host"]["S"] for item in page.get("Items", []))
        return hosts

    def list_all(self) -> list[BlockedHost]:
        """Every entry, by host (the list is short: it is written by hand)."""
        entries: list[BlockedHost] = []
        for page in self.client.get_paginator("scan").paginate(
            TableName=self.table_name, ConsistentRead=True
        ):
            entries.extend(_entry(item) for item in page.get("Items", []))
        return sorted(entries, key=lambda entry: entry.host)


def _entry(item: dict[str, Any]) -> BlockedHost:
    return BlockedHost(
        host=item["host"]["S"],
        created_at=datetime.fromisoformat(item["created_at"]["S"]),
        added_by=item.get("added_by", {}).get("S", ""),
        reason=item.get("reason", {}).get("S", ""),
    )
