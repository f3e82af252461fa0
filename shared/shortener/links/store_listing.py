"""An owner's links, newest first, from the ByOwner index of the links table.

The owner's index partition is split in LIST_SHARDS (see ``link_items``), so a page is a merge of
one Query per shard, each newest first from the same position (sent together, so a page takes about
one Query's time, not LIST_SHARDS'). DynamoDB applies ``Limit`` before a
filter, so a shard may stop early; the page then ends where every shard has been read (the
highest position a shard stopped at), and the next page starts there. A position is a sort key
value (creation time and code), so the cursor needs nothing of the caller but where they were."""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from shortener import aws
from shortener.links.model import Link
from shortener.links.store_items import LIST_INDEX, LIST_SHARDS, link_from_item, list_partition, list_position

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Above every position: ISO times start with a digit.
_NEWEST = "~"


@dataclass(frozen=True, slots=True)
class LinkPage:
    """Links newest first, and the position the next page starts below (None: no more)."""

    links: list[Link]
    next_position: str | None


class LinkIndex(aws.DynamoDBTable):
    """Reads of the ByOwner index."""

    def position(self, link: Link) -> str:
        """Where ``link`` is in its owner's listing (a page that ends with it continues below it)."""
        return list_position(link)

    def list_links(
        self,
        owner: str,
        *,
        before: str | None,
        limit: int,
        tag: str | None = None,
        contains: str | None = None,
        job_id: str | None = None,
    ) -> LinkPage:
        """Up to ``limit`` of ``owner``'s links (deleted ones are not in the index) created before
        the position ``before`` (None: from the newest), with the tag ``tag``, ``contains`` in
        their URL or title, and made by the bulk job ``job_id``, when given."""
        found: list[tuple[str, Link]] = []
        frontier: str | None = None
        client = self.client  # one client for the threads (boto3's clients are thread-safe)
        answers = _shard_queries().map(
            lambda shard: self._query(
                client,
                list_partition(owner, shard),
                before=before or _NEWEST,
                limit=limit,
                tag=tag,
                contains=contains,
                job_id=job_id,
            ),
            range(LIST_SHARDS),
        )
        for items, stopped_at in answers:
            found += [(item["list_sk"]["S"], link_from_item(item)) for item in items]
            if stopped_at is not None and (frontier is None or stopped_at > frontier):
                frontier = stopped_at
        # Only what lies at or above the frontier has been read in every shard.
        complete = sorted(
            (entry for entry in found if frontier is None or entry[0] >= frontier),
            key=lambda entry: entry[0],
            reverse=True,
        )
        if len(complete) > limit:
            return LinkPage([link for _, link in complete[:limit]], complete[limit - 1][0])
        return LinkPage([link for _, link in complete], frontier)

    def _query(
        self,
        client: "DynamoDBClient",
        partition: str,
        *,
        before: str,
        limit: int,
        tag: str | None,
        contains: str | None,
        job_id: str | None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        arguments: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": LIST_INDEX,
            "KeyConditionExpression": "list_pk = :partition AND list_sk < :before",
            "ExpressionAttributeValues": {":partition": {"S": partition}, ":before": {"S": before}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        filters = []
        if tag:
            filters.append("contains(tags, :tag)")
            arguments["ExpressionAttributeValues"][":tag"] = {"S": tag}
        if contains:
            # contains() is false for a missing attribute: a link without a title matches by URL.
            filters.append("(contains(#url, :contains) OR contains(title, :contains))")
            arguments["ExpressionAttributeValues"][":contains"] = {"S": contains}
            arguments["ExpressionAttributeNames"] = {"#url": "url"}
        if job_id:
            filters.append("job_id = :job_id")
            arguments["ExpressionAttributeValues"][":job_id"] = {"S": job_id}
        if filters:
            arguments["FilterExpression"] = " AND ".join(filters)
        response = client.query(**arguments)
        last = response.get("LastEvaluatedKey")
        return list(response.get("Items", [])), (last["list_sk"]["S"] if last else None)


@cache
def _shard_queries() -> ThreadPoolExecutor:
    """The threads that send a page's Queries, one per shard (kept for the container's life)."""
    return ThreadPoolExecutor(max_workers=LIST_SHARDS, thread_name_prefix="list-shard")
