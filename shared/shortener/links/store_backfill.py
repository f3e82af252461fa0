"""The tag index backfill's reads and writes (the rules are shortener.links.backfill): its progress
in the links table's ``#migrations`` item, the Scan of the table for tagged links, the entries
that exist, and the entries written with a check that their link is unchanged."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from shortener import aws
from shortener.links.backfill import BackfillProgress, ScannedPage
from shortener.links.model import Link
from shortener.links.store import LinksStore, TransactionRefusedError
from shortener.links.store_changes import unchanged_condition
from shortener.links.store_items import indexed_tags, link_from_item, tag_items, tag_key

MIGRATIONS_KEY = "#migrations"
_TRANSACTION_LIMIT = 100
_CONDITION_FAILED = "ConditionalCheckFailed"
# What a tagged link's entries are built from (shortener.links.store_items.tag_items), and what
# tells whether it changed since: the rest of the link is not read.
_PROJECTION = {
    "#code": "code",
    "#url": "url",
    "#created": "created_at",
    "#owner": "owner",
    "#tags": "tags",
    "#status": "status",
    "#updated": "updated_at",
}


class TagIndexBackfillStore(LinksStore):
    """``page_size``: items a Scan page evaluates (None: DynamoDB's 1 MB a page)."""

    def __init__(self, table_name: str, *, page_size: int | None = None) -> None:
        super().__init__(table_name)
        self.page_size = page_size

    def progress(self) -> BackfillProgress:
        item = self.client.get_item(
            TableName=self.table_name, Key={"code": {"S": MIGRATIONS_KEY}}, ConsistentRead=True
        ).get("Item", {})
        since = item.get("tag_index_since", {}).get("S")
        return BackfillProgress(
            after=item.get("tag_index_after", {}).get("S"),
            done=item.get("tag_index", {}).get("S") == "done",
            since=datetime.fromisoformat(since) if since else None,
        )

    def begin(self, now: datetime) -> None:
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"code": {"S": MIGRATIONS_KEY}},
                UpdateExpression="SET tag_index_since = :now",
                ConditionExpression="attribute_not_exists(tag_index_since)",
                ExpressionAttributeValues={":now": {"S": now.isoformat()}},
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise

    def scan_tagged(self, after: str | None) -> ScannedPage:
        """One Scan page of the table, eventually consistent (a link written after the upgrade
        has its entries already), filtered to links that are tagged and owned (and not
        deleted, told from its tags): a filter does not lower what the page reads, only what it
        sends."""
        arguments: dict[str, Any] = {
            "TableName": self.table_name,
            "FilterExpression": "attribute_exists(#tags) AND attribute_exists(#owner)",
            "ProjectionExpression": ", ".join(_PROJECTION),
            "ExpressionAttributeNames": _PROJECTION,
        }
        if after is not None:
            arguments["ExclusiveStartKey"] = {"code": {"S": after}}
        if self.page_size is not None:
            arguments["Limit"] = self.page_size
        response = self.client.scan(**arguments)
        links = [link_from_item(item) for item in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        return ScannedPage(
            links=[link for link in links if indexed_tags(link)],
            items_read=int(response.get("ScannedCount", 0)),
            next_after=last["code"]["S"] if last else None,
        )

    def present_entries(self, links: Sequence[Link]) -> set[tuple[str, str]]:
        keys = {tag_key(tag, link.code)["code"]["S"]: (link.code, tag) for link in links for tag in link.tags}
        found = self._batch_get([{"code": {"S": key}} for key in keys])
        return {keys[item["code"]["S"]] for item in found}

    def write_entries(self, links: Sequence[Link]) -> tuple[int, list[str]]:
        """Transactions of up to 100 items: each link's check that it is unchanged, then its
        entries. A cancelled transaction names the links that changed; the others go again."""
        written, changed = 0, []
        for group in _groups(links):
            pending = list(group)
            while pending:
                items = [item for link in pending for item in self._link_items(link)]
                reasons = self._transact(items)
                if reasons is None:
                    written += sum(len(tag_items(link)) for link in pending)
                    break
                failed, at = set(), 0
                for link in pending:
                    if reasons[at].get("Code") == _CONDITION_FAILED:
                        failed.add(link.code)
                    at += 1 + len(tag_items(link))
                if not failed:
                    raise TransactionRefusedError(reasons)
                changed += sorted(failed)
                pending = [link for link in pending if link.code not in failed]
        return written, changed

    def save(self, started_after: str | None, progress: BackfillProgress, read: int, written: int) -> bool:
        if started_after is None:
            condition = "attribute_not_exists(tag_index_after) AND attribute_not_exists(tag_index)"
            values: dict[str, Any] = {}
        else:
            condition = "tag_index_after = :started"
            values = {":started": {"S": started_after}}
        values |= {":read": {"N": str(read)}, ":written": {"N": str(written)}}
        if progress.done:
            update = "SET tag_index = :done REMOVE tag_index_after"
            values[":done"] = {"S": "done"}
        else:
            assert progress.after is not None
            update = "SET tag_index_after = :after"
            values[":after"] = {"S": progress.after}
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"code": {"S": MIGRATIONS_KEY}},
                UpdateExpression=f"{update} ADD tag_index_read :read, tag_index_written :written",
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def _link_items(self, link: Link) -> list[dict[str, Any]]:
        condition, values = unchanged_condition(link)
        check: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": {"code": {"S": link.code}},
            "ConditionExpression": condition,
        }
        if values:
            check["ExpressionAttributeValues"] = values
        return [
            {"ConditionCheck": check},
            *({"Put": {"TableName": self.table_name, "Item": item}} for item in tag_items(link)),
        ]


def _groups(links: Sequence[Link]) -> list[list[Link]]:
    """``links`` in groups whose items (a check and the entries of each) fit one transaction."""
    groups: list[list[Link]] = [[]]
    size = 0
    for link in links:
        items = 1 + len(tag_items(link))
        if groups[-1] and size + items > _TRANSACTION_LIMIT:
            groups.append([])
            size = 0
        groups[-1].append(link)
        size += items
    return [group for group in groups if group]
