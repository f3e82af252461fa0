"""Changing an existing link: a new target, title or tags, disabling, enabling, deleting (which
leaves a tombstone). One transaction per change: the link itself (only if nobody changed it since
it was read), the find-if-exists claim it may no longer hold, and the takedown generation that
tells every container's redirect cache to forget what it knew, and the link's tag index entries
(shortener.links.store_items.tag_items)."""

from typing import Any

from botocore.exceptions import ClientError

from shortener import aws
from shortener.links.model import Link
from shortener.links.store_items import (
    CLAIM_PREFIX,
    TAKEDOWNS_KEY,
    indexed_tags,
    link_to_item,
    tag_items,
    tag_key,
)

# Tries of a change whose transaction conflicted with another (AWS cancels a transaction that
# meets one in progress on the same item: developerguide/transaction-apis.html, "Transaction
# conflict handling"), with exponential backoff and full jitter between them.
_CONFLICT_RETRIES = 5
# Moves the takedown generation: in a change's transaction, or on its own for many changes.
_ANNOUNCE_TAKEDOWN: dict[str, Any] = {
    "Key": {"code": {"S": TAKEDOWNS_KEY}},
    "UpdateExpression": "ADD generation :one",
    "ExpressionAttributeValues": {":one": {"N": "1"}},
}


class LinkChangedError(Exception):
    """The link was changed (or deleted) by someone else after it was read."""


class LinkChangesStore(aws.DynamoDBTable):
    """Data access for changes of links that exist."""

    def replace(self, seen: Link, changed: Link, *, drop_claim: str | None, takedown: bool) -> None:
        """Write ``changed`` over ``seen`` unless the stored link is no longer ``seen`` (compared by
        its last change time): LinkChangedError. ``drop_claim`` is the URL key of a find-if-exists
        claim to remove if it still names this link; ``takedown`` bumps the takedown generation."""
        include_claim = drop_claim is not None
        pauses = aws.backoff_delays(_CONFLICT_RETRIES, base=0.02, cap=1.0)
        for _ in range(_CONFLICT_RETRIES):
            items = self._items(seen, changed, drop_claim if include_claim else None, takedown)
            try:
                self.client.transact_write_items(TransactItems=items)
                return
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                    raise
                reasons = [reason.get("Code") for reason in exc.response.get("CancellationReasons", [])]
                if "TransactionConflict" in reasons:
                    # Another transaction holds one of the items (the takedown generation, say):
                    # apart, with jitter, rather than all again at once.
                    self.sleep(next(pauses, 0.0))
                    continue
                if reasons and reasons[0] == "ConditionalCheckFailed":
                    raise LinkChangedError(seen.code) from exc
                if include_claim and len(reasons) > 1 and reasons[1] == "ConditionalCheckFailed":
                    # The URL's claim names another link: it is not ours to remove.
                    include_claim = False
                    continue
                raise
        raise LinkChangedError(seen.code)

    def announce_takedowns(self) -> None:
        """Move the takedown generation once, for links changed without moving it."""
        self.client.update_item(TableName=self.table_name, **_ANNOUNCE_TAKEDOWN)

    def _items(self, seen: Link, changed: Link, drop_claim: str | None, takedown: bool) -> list[Any]:
        unchanged, values = unchanged_condition(seen)
        if seen.max_clicks is not None:
            # Clicks are counted without touching updated_at: a click counted since the read makes
            # the change a conflict rather than be lost by writing the count read.
            unchanged += " AND clicks = :clicks"
            values[":clicks"] = {"N": str(seen.clicks)}
        put: dict[str, Any] = {
            "TableName": self.table_name,
            "Item": link_to_item(changed),
            "ConditionExpression": unchanged,
        }
        if values:
            put["ExpressionAttributeValues"] = values
        items: list[Any] = [{"Put": put}]
        if drop_claim is not None:
            items.append(
                {
                    "Delete": {
                        "TableName": self.table_name,
                        "Key": {"code": {"S": CLAIM_PREFIX + drop_claim}},
                        "ConditionExpression": "attribute_not_exists(code) OR target = :code",
                        "ExpressionAttributeValues": {":code": {"S": seen.code}},
                    }
                }
            )
        if takedown:
            items.append({"Update": {"TableName": self.table_name, **_ANNOUNCE_TAKEDOWN}})
        # Last (the reasons above are read by position): the tag index follows the change, entries
        # for the tags it has now (its position never changes: writing one again is harmless, and
        # gives a link from before the index its entries), none for those it no longer has.
        items += [{"Put": {"TableName": self.table_name, "Item": item}} for item in tag_items(changed)]
        kept = set(indexed_tags(changed))
        items += [
            {"Delete": {"TableName": self.table_name, "Key": tag_key(tag, seen.code)}}
            for tag in indexed_tags(seen)
            if tag not in kept
        ]
        return items


def unchanged_condition(seen: Link) -> tuple[str, dict[str, Any]]:
    """A condition that the stored link is still ``seen`` (every change sets ``updated_at``; a
    click does not), and its values."""
    if seen.updated_at is None:
        return "attribute_exists(code) AND attribute_not_exists(updated_at)", {}
    return "attribute_exists(code) AND updated_at = :seen", {":seen": {"S": seen.updated_at.isoformat()}}
