"""Exports of click events in the clicks table (data access): per owner and asked query, the
Athena query that builds it, until when it is the answer to that query (``expires_at``, also the
table's TTL), when its file was asked of the jobs worker and, once written, where the file is.
Written with UpdateItem, which the API and worker functions may use on the table."""

from dataclasses import dataclass

from botocore.exceptions import ClientError

from shortener import aws

EXPORT_PK = "#export#"


@dataclass(frozen=True)
class ExportRecord:
    execution_id: str
    expires_at: int
    file: str | None = None  # s3://bucket/key, once written


class ExportRecords(aws.DynamoDBTable):
    """Which query builds each export, and its file."""

    def get(self, owner: str, key: str) -> ExportRecord | None:
        """The export's record, if it was asked."""
        item = self.client.get_item(
            TableName=self.table_name,
            Key=self._key(owner, key),
            ConsistentRead=True,
        ).get("Item")
        if not item or "execution_id" not in item:
            return None
        file = item.get("file", {}).get("S")
        return ExportRecord(item["execution_id"]["S"], int(item["expires_at"]["N"]), file)

    def put(self, owner: str, key: str, execution_id: str, *, expires_at: int) -> None:
        """A new build of the export: its query, and no file yet."""
        self.client.update_item(
            TableName=self.table_name,
            Key=self._key(owner, key),
            UpdateExpression="SET execution_id = :id, expires_at = :expires REMOVE #file, asked_at",
            ExpressionAttributeNames={"#file": "file"},
            ExpressionAttributeValues={":id": {"S": execution_id}, ":expires": {"N": str(expires_at)}},
        )

    def ask_file(self, owner: str, key: str, execution_id: str, *, now: int, stale_after: int) -> bool:
        """Record that the file of this build is asked for, unless it was asked for less than
        ``stale_after`` seconds ago (then False: two callers never ask twice)."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=self._key(owner, key),
                UpdateExpression="SET asked_at = :now",
                ConditionExpression=(
                    "execution_id = :id AND (attribute_not_exists(asked_at) OR asked_at < :stale)"
                ),
                ExpressionAttributeValues={
                    ":id": {"S": execution_id},
                    ":now": {"N": str(now)},
                    ":stale": {"N": str(now - stale_after)},
                },
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def written(self, owner: str, key: str, execution_id: str, file: str) -> None:
        """The file of the build by ``execution_id`` is written at ``file``."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=self._key(owner, key),
                UpdateExpression="SET #file = :file",
                ConditionExpression="execution_id = :id",
                ExpressionAttributeNames={"#file": "file"},
                ExpressionAttributeValues={":id": {"S": execution_id}, ":file": {"S": file}},
            )
        except ClientError as exc:
            # A newer build replaced this one meanwhile: this file is never pointed to.
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise

    @staticmethod
    def _key(owner: str, key: str) -> dict[str, dict[str, str]]:
        return {"pk": {"S": EXPORT_PK + owner}, "sk": {"S": key}}
