"""Exports of click events in the clicks table (data access): per owner and asked query, the
Athena query that builds it and until when it is the answer to that query (``expires_at``, also
the table's TTL). Written with UpdateItem, which the API function may use on the table."""

from shortener import aws

EXPORT_PK = "#export#"


class ExportRecords(aws.DynamoDBTable):
    """Which query builds each export."""

    def get(self, owner: str, key: str) -> tuple[str, int] | None:
        """The export's query execution id and expiry (epoch seconds), if it was asked."""
        item = self.client.get_item(
            TableName=self.table_name,
            Key={"pk": {"S": EXPORT_PK + owner}, "sk": {"S": key}},
            ConsistentRead=True,
        ).get("Item")
        if not item or "execution_id" not in item:
            return None
        return item["execution_id"]["S"], int(item["expires_at"]["N"])

    def put(self, owner: str, key: str, execution_id: str, *, expires_at: int) -> None:
        self.client.update_item(
            TableName=self.table_name,
            Key={"pk": {"S": EXPORT_PK + owner}, "sk": {"S": key}},
            UpdateExpression="SET execution_id = :id, expires_at = :expires",
            ExpressionAttributeValues={":id": {"S": execution_id}, ":expires": {"N": str(expires_at)}},
        )
