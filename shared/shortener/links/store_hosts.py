"""Finding the links to a host: one scan of the links table, filtered on the URL's text. The links
table has no index by host (a redirect needs none, and every link write would pay for one); a
block is a rare admin action, so it pays the scan instead (about one read unit per 8 KB of table,
eventually consistent)."""

import time
from collections.abc import Callable
from typing import Any

from shortener import aws
from shortener.links.store_items import CLAIM_PREFIX, COUNTER_KEY, TAKEDOWNS_KEY

# Every item that is not a link (the counter, the takedown generation, URL claims) starts with "#".
_NOT_A_LINK = "#"
assert all(key.startswith(_NOT_A_LINK) for key in (CLAIM_PREFIX, COUNTER_KEY, TAKEDOWNS_KEY))


class LinkHostScan(aws.DynamoDBTable):
    """Scans the links table for links whose URL contains a text."""

    def links_containing(
        self, text: str, *, seconds: float, monotonic: Callable[[], float] = time.monotonic
    ) -> tuple[list[tuple[str, str]], bool]:
        """(code, url) of every link whose URL contains ``text``, and whether the scan finished
        within ``seconds`` (it stops after the page that passes them)."""
        deadline = monotonic() + seconds
        found: list[tuple[str, str]] = []
        arguments: dict[str, Any] = {
            "TableName": self.table_name,
            "FilterExpression": "contains(#url, :text) AND NOT begins_with(code, :not_a_link)",
            "ProjectionExpression": "code, #url",
            "ExpressionAttributeNames": {"#url": "url"},
            "ExpressionAttributeValues": {":text": {"S": text}, ":not_a_link": {"S": _NOT_A_LINK}},
        }
        while True:
            page = self.client.scan(**arguments)
            found.extend((item["code"]["S"], item["url"]["S"]) for item in page.get("Items", []))
            last = page.get("LastEvaluatedKey")
            if not last:
                return found, True
            if monotonic() > deadline:
                return found, False
            arguments["ExclusiveStartKey"] = last
