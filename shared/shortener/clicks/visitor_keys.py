"""The daily visitor keys (data access): one random key per UTC day in the clicks table, created
once by a conditional put so every collector agrees on it, read once per container per day, and
removed by the table's TTL soon after its day ends, after which no visitor id of that day can be
recomputed from an address."""

import secrets
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from botocore.exceptions import ClientError

from shortener import aws
from shortener.clicks.events import VISITOR_KEY_BYTES

VISITOR_KEY_PK = "#visitor-key#"
# The key is kept this long past its day's end: late log records of the day (CloudWatch Logs
# delivers within hours) still hash with it. DynamoDB's TTL deletes it within days after that
# (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html).
KEY_GRACE = timedelta(hours=2)


class VisitorKeys(aws.DynamoDBTable):
    """The day's visitor key, cached for the container's life of that day."""

    def __init__(self, table_name: str, client: Any = None) -> None:
        super().__init__(table_name, client)
        self._cached: tuple[date, bytes] | None = None

    def key(self, day: date) -> bytes:
        """The key of ``day``: created if absent (the first collector of the day wins), else read."""
        if self._cached and self._cached[0] == day:
            return self._cached[1]
        item_key = {"pk": {"S": VISITOR_KEY_PK}, "sk": {"S": day.isoformat()}}
        candidate = secrets.token_bytes(VISITOR_KEY_BYTES)
        expires = datetime.combine(day + timedelta(days=1), time(), tzinfo=UTC) + KEY_GRACE
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item={
                    **item_key,
                    "key": {"B": candidate},
                    "expires_at": {"N": str(int(expires.timestamp()))},
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
            value = candidate
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            item = self.client.get_item(TableName=self.table_name, Key=item_key, ConsistentRead=True)
            value = bytes(item["Item"]["key"]["B"])
        self._cached = (day, value)
        return value
