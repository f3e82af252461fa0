"""Click limits on a cached stage: the collector's count of every redirect of a click-limited link
(``served`` on its item, cache hits included), and the write that ends the link once it reached its
limit (shortener.clicks.limits)."""

from botocore.exceptions import ClientError

from shortener import aws


class ClickLimitStore(aws.DynamoDBTable):
    """The click-limit counts on the links table."""

    def add_served(self, code: str, count: int, max_clicks: int) -> int | None:
        """Add ``count`` redirects to an active link's ``served`` while its limit is ``max_clicks``
        (as read with the batch): its new count, or None when it has no such limit (any more) or
        is taken down. Only the updated count comes back (ReturnValues UPDATED_NEW): the role may
        read no other attribute (dynamodb:Attributes in the template)."""
        try:
            response = self.client.update_item(
                TableName=self.table_name,
                Key={"code": {"S": code}},
                UpdateExpression="ADD served :count",
                ConditionExpression="max_clicks = :max AND attribute_not_exists(#status)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":count": {"N": str(count)}, ":max": {"N": str(max_clicks)}},
                ReturnValues="UPDATED_NEW",
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return None
            raise
        return int(response["Attributes"]["served"]["N"])

    def exhaust(self, code: str, max_clicks: int) -> bool:
        """Use up the link's remaining clicks (``clicks`` = ``max_clicks``), so the function answers
        410 from then on; only while its limit is still ``max_clicks`` (a PATCH that changed it
        meanwhile wins). True when the link is (now) used up."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"code": {"S": code}},
                UpdateExpression="SET clicks = max_clicks",
                ConditionExpression="max_clicks = :max AND attribute_not_exists(#status)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":max": {"N": str(max_clicks)}},
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True
