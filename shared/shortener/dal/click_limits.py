"""Click limits on a cached stage: the collector's count of every redirect of a click-limited link
(``served`` on its item, cache hits included), and the write that ends the link once it reached its
limit (shortener.logic.click_limits)."""

from botocore.exceptions import ClientError

from shortener.dal import aws
from shortener.dal.link_items import is_link_item, link_from_item
from shortener.models.links import Link


class ClickLimitStore(aws.DynamoDBTable):
    """The click-limit counts on the links table."""

    def add_served(self, code: str, count: int) -> Link | None:
        """Add ``count`` redirects to an active click-limited link's ``served``: the link as the
        write left it, or None when it has no limit (any more) or is taken down."""
        try:
            response = self.client.update_item(
                TableName=self.table_name,
                Key={"code": {"S": code}},
                UpdateExpression="ADD served :count",
                ConditionExpression="attribute_exists(max_clicks) AND attribute_not_exists(#status)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":count": {"N": str(count)}},
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return None
            raise
        item = response["Attributes"]
        return link_from_item(item) if is_link_item(item) else None

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
