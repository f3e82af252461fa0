"""Each owner's bulk usage per UTC day: one item in the jobs table per owner and day, whose counts
grow with one conditional write per reservation, so two jobs at once can never pass the quota
together. The item expires (TTL) a few days after its day."""

from typing import Any

from botocore.exceptions import ClientError

from shortener import aws

_PREFIX = "#quota#"


class DailyQuotaStore(aws.DynamoDBTable):
    """Daily usage counters of owners in the jobs table."""

    def reserve(
        self, owner: str, day: str, *, rows: int, size: int, max_rows: int, max_bytes: int, expires_at: int
    ) -> bool:
        """Add ``rows`` and ``size`` bytes to ``owner``'s use of ``day`` if both stay within their
        maximum (and the rows already used are below it, for a reservation of bytes alone);
        False, writing nothing, otherwise."""
        values: dict[str, Any] = {
            ":rows": {"N": str(rows)},
            ":bytes": {"N": str(size)},
            ":bytes_left": {"N": str(max_bytes - size)},
            ":expires_at": {"N": str(expires_at)},
        }
        # Rows: a reservation of none still needs some left (an upload whose rows are not known yet).
        if rows:
            rows_condition = "#rows <= :rows_left"
            values[":rows_left"] = {"N": str(max_rows - rows)}
        else:
            rows_condition = "#rows < :max_rows"
            values[":max_rows"] = {"N": str(max_rows)}
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"job_id": {"S": _PREFIX + owner}, "sk": {"S": day}},
                UpdateExpression="ADD #rows :rows, #bytes :bytes SET expires_at = :expires_at",
                ConditionExpression=(
                    f"(attribute_not_exists(#rows) OR {rows_condition}) "
                    "AND (attribute_not_exists(#bytes) OR #bytes <= :bytes_left)"
                ),
                ExpressionAttributeNames={"#rows": "rows", "#bytes": "bytes"},
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True
