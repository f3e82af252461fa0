"""The expiries still to enforce on the stage cache: the links table's sparse ByExpiry index
(shortener.links.store_items writes its keys on every active link with an ``expires_at``)."""

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from shortener import aws
from shortener.links.store_items import EXPIRY_INDEX, EXPIRY_SHARDS, expiry_position

# One page of the index: keys only, so a page of 1 MB holds thousands of codes.
_PAGE_LIMIT = 1000


class ExpiryIndex(aws.DynamoDBTable):
    """The ByExpiry index of the links table."""

    def due(self, now: datetime) -> Iterator[tuple[str, str]]:
        """(code, expiry position) of every indexed link whose expiry is at or before ``now``,
        shard after shard, oldest first within a shard. Eventually consistent (a GSI is): a link
        written a moment ago may show in the next read."""
        until = expiry_position(now)
        for shard in range(EXPIRY_SHARDS):
            arguments: dict[str, Any] = {
                "TableName": self.table_name,
                "IndexName": EXPIRY_INDEX,
                "KeyConditionExpression": "expiry_pk = :shard AND expiry_sk <= :until",
                "ExpressionAttributeValues": {":shard": {"S": str(shard)}, ":until": {"S": until}},
                "Limit": _PAGE_LIMIT,
            }
            while True:
                page = self.client.query(**arguments)
                for item in page.get("Items", []):
                    yield item["code"]["S"], item["expiry_sk"]["S"]
                last = page.get("LastEvaluatedKey")
                if not last:
                    break
                arguments["ExclusiveStartKey"] = last

    def settle(self, code: str, position: str) -> bool:
        """Take ``code`` out of the index, unless its expiry changed since it was read as
        ``position`` (a PATCH meanwhile: the new expiry stays to enforce). True when taken out."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"code": {"S": code}},
                UpdateExpression="REMOVE expiry_pk, expiry_sk",
                ConditionExpression="expiry_sk = :seen",
                ExpressionAttributeValues={":seen": {"S": position}},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True
