"""The keys table: one item per API key, keyed by its key id; the key itself is never stored."""

from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from shortener import aws
from shortener.access.model import ApiKey
from shortener.exceptions import KeyNotFoundError


class KeysStore(aws.DynamoDBTable):
    """Data access for the keys table."""

    def get_key(self, key_id: str) -> ApiKey | None:
        """The key's record, or None. A consistent read: a revocation is seen at once."""
        item = self.client.get_item(
            TableName=self.table_name, Key={"key_id": {"S": key_id}}, ConsistentRead=True
        ).get("Item")
        return _record(item) if item else None

    def put_new(self, record: ApiKey) -> None:
        """Write a new key (its id is fresh; the condition guards against a collision)."""
        item: dict[str, Any] = {
            "key_id": {"S": record.key_id},
            "key_hash": {"S": record.key_hash},
            "name": {"S": record.name},
            "owner_id": {"S": record.owner_id},
            "role": {"S": record.role},
            "created_at": {"S": record.created_at.isoformat()},
            "usage_key": {"S": record.usage_key},
            "revoked": {"BOOL": record.revoked},
        }
        if record.domains:
            item["domains"] = {"S": record.domains}
        self.client.put_item(
            TableName=self.table_name, Item=item, ConditionExpression="attribute_not_exists(key_id)"
        )

    def list_keys(self) -> list[ApiKey]:
        """Every key (a deployment has few; one paginated scan)."""
        paginator = self.client.get_paginator("scan")
        return [
            _record(item)
            for page in paginator.paginate(TableName=self.table_name, ConsistentRead=True)
            for item in page.get("Items", [])
        ]

    def mark_revoked(self, key_id: str, at: datetime) -> ApiKey:
        """Set the key revoked (idempotent; the first revocation time is kept)."""
        try:
            answer = self.client.update_item(
                TableName=self.table_name,
                Key={"key_id": {"S": key_id}},
                UpdateExpression="SET revoked = :yes, revoked_at = if_not_exists(revoked_at, :at)",
                ConditionExpression="attribute_exists(key_id)",
                ExpressionAttributeValues={":yes": {"BOOL": True}, ":at": {"S": at.isoformat()}},
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise KeyNotFoundError(f"No key has the id '{key_id[:64]}'.") from exc
            raise
        return _record(answer["Attributes"])


def _record(item: dict[str, Any]) -> ApiKey:
    revoked_at = item.get("revoked_at", {}).get("S")
    return ApiKey(
        key_id=item["key_id"]["S"],
        key_hash=item["key_hash"]["S"],
        name=item["name"]["S"],
        owner_id=item["owner_id"]["S"],
        role=item["role"]["S"],
        created_at=datetime.fromisoformat(item["created_at"]["S"]),
        usage_key=item["usage_key"]["S"],
        revoked=item.get("revoked", {}).get("BOOL", False),
        revoked_at=datetime.fromisoformat(revoked_at) if revoked_at else None,
        domains=item.get("domains", {}).get("S", ""),
    )
