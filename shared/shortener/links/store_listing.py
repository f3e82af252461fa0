"""An owner's links, newest first, from the ByOwner index of the links table, filtered.

The owner's index partition is split in LIST_SHARDS (see ``link_items``), so a page is a merge of
Queries, one per shard, each newest first from the same position (sent together, so a round takes
about one Query's time, not LIST_SHARDS'). A shard's Query may stop before the page is full
(``Limit``, or DynamoDB's 1 MB a response); what lies at or above the highest position a shard
stopped at (the frontier) has been read in every shard. A filtered listing (a search, a tag, a job,
a status: shortener.links.search) goes on reading every shard from where it stopped, round after
round, until its page is full above the frontier or every shard is read: a page is never short
while later links could still match (docs/search.md: what that costs). Only a listing that reaches
SEARCH_SECONDS stops early, with the cursor where it got to. A position is a sort key value
(creation time and code), so the cursor needs nothing of the caller but where they were."""

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from shortener import aws, clock
from shortener.links.model import Link
from shortener.links.search import DEFAULT_DOMAIN, LinkFilter
from shortener.links.store_items import (
    LIST_INDEX,
    LIST_SHARDS,
    link_from_item,
    list_partition,
    list_position,
    tag_partition,
    tag_sort_key,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Above every position: ISO times start with a digit.
_NEWEST = "~"
# Below every position, and every owner id (a key value may not be empty).
_OLDEST = "!"
# A filtered listing answers what it has found (and where it got to) after this long: under API
# Gateway's 29 s integration timeout, with room for the answer.
SEARCH_SECONDS = 20.0
_BATCH_GET_LIMIT = 100
_BATCH_GET_ROUNDS = 10


@dataclass(frozen=True, slots=True)
class LinkPage:
    """Links newest first, and the position the next page starts below (None: no more)."""

    links: list[Link]
    next_position: str | None
    # Items the page's Queries read (what a search costs: docs/search.md).
    items_read: int = 0


@dataclass(slots=True)
class _Shard:
    """Where one shard's reading of a page has got to."""

    partition: str
    # A tag partition's sort keys start with the owner (tag_sort_key): what a position has before
    # it in this shard (None: an owner's own partition, keyed by the position alone).
    prefix: str | None = None
    start: dict[str, Any] | None = None  # ExclusiveStartKey of its next Query
    stopped_at: str | None = None  # the last position read (None: not started, or read to the end)
    done: bool = False
    found: list[tuple[str, Link]] = field(default_factory=list)

    def position(self, item: dict[str, Any]) -> str:
        """The position of an item (or a LastEvaluatedKey) of this shard."""
        return str(item["list_sk"]["S"])[len(self.prefix or "") :]


class LinkIndex(aws.DynamoDBTable):
    """Reads of the ByOwner index."""

    def position(self, link: Link) -> str:
        """Where ``link`` is in its owner's listing (a page that ends with it continues below it)."""
        return list_position(link)

    def list_links(
        self,
        owner: str | None,
        *,
        before: str | None,
        limit: int,
        tag: str | None = None,
        where: LinkFilter | None = None,
        after: str | None = None,
    ) -> LinkPage:
        """Up to ``limit`` of ``owner``'s links (deleted ones are not in the index) created before
        the position ``before`` (None: from the newest), and at or after ``after`` when given (a
        job's window), that pass ``where`` (and have ``tag``). With a tag, ``owner`` None reads
        every owner's links with it (an admin's batch by tag): their positions then start with
        their owner."""
        wanted = where or LinkFilter()
        if tag:
            wanted = replace(wanted, tag=tag)
        now, started = clock.now(), time.monotonic()
        # With a tag, read the tag's own partitions (the tag index: an entry per tagged link, at
        # the link's position), then the links they name; else the owner's links.
        if wanted.tag is not None:
            prefix = tag_sort_key(owner, "") if owner else ""
            shards = [_Shard(tag_partition(wanted.tag, shard), prefix) for shard in range(LIST_SHARDS)]
        else:
            assert owner is not None, "only a tag is read across owners"
            shards = [_Shard(list_partition(owner, shard)) for shard in range(LIST_SHARDS)]
        by_tag = wanted.tag is not None
        # Unfiltered (or only by the tag: every entry but a stale one is a link of the page), read
        # no more than the page. Filtered, read what a Query returns at most (1 MB), in as few
        # round trips as the search needs.
        read_limit = limit if replace(wanted, tag=None).empty else None
        if by_tag and read_limit is not None:
            # The entries spread over the shards: a round reads about twice the page in all.
            read_limit = min(limit, -(-2 * limit // LIST_SHARDS) + 5)
        client = self.client  # one client for the threads (boto3's clients are thread-safe)
        items_read = 0
        while True:
            reading = [shard for shard in shards if not shard.done]
            answers = _shard_queries().map(
                lambda shard: self._query(
                    client, shard, before=before or _NEWEST, after=after, limit=read_limit, where=wanted
                ),
                reading,
            )
            answered = list(answers)
            linked = self._linked(client, owner, answered) if by_tag else {}
            for shard, (items, last) in zip(reading, answered, strict=True):
                items_read += len(items)
                for item in items:
                    found = linked.get(item["target"]["S"]) if by_tag else link_from_item(item)
                    # BETWEEN includes its end: the link at ``before`` ended the previous page.
                    position = shard.position(item)
                    if found is None or position == before:
                        continue
                    link = found
                    # An entry whose link has lost the tag since (or is deleted) is not listed.
                    if wanted.matches(link, now):
                        shard.found.append((position, link))
                shard.start, shard.done = last, last is None
                shard.stopped_at = shard.position(last) if last else None
            frontier = max((shard.stopped_at for shard in shards if shard.stopped_at), default=None)
            # Only what lies at or above the frontier has been read in every shard.
            complete = sorted(
                (
                    entry
                    for shard in shards
                    for entry in shard.found
                    if frontier is None or entry[0] >= frontier
                ),
                key=lambda entry: entry[0],
                reverse=True,
            )
            if len(complete) > limit:
                return LinkPage([link for _, link in complete[:limit]], complete[limit - 1][0], items_read)
            if len(complete) == limit or frontier is None or wanted.empty:
                return LinkPage([link for _, link in complete], frontier, items_read)
            if time.monotonic() - started > SEARCH_SECONDS:
                return LinkPage([link for _, link in complete], frontier, items_read)

    def _linked(
        self, client: "DynamoDBClient", owner: str | None, answered: list[tuple[list[dict[str, Any]], Any]]
    ) -> dict[str, Link]:
        """The links that tag index entries name, by code (BatchGetItem, eventually consistent as
        the index is): those that are still ``owner``'s and not deleted."""
        codes = list(dict.fromkeys(item["target"]["S"] for items, _ in answered for item in items))
        links: dict[str, Link] = {}
        for start in range(0, len(codes), _BATCH_GET_LIMIT):
            keys = [{"code": {"S": code}} for code in codes[start : start + _BATCH_GET_LIMIT]]
            pending: Any = {self.table_name: {"Keys": keys}}
            for attempt in range(_BATCH_GET_ROUNDS):
                response = client.batch_get_item(RequestItems=pending)
                for item in response.get("Responses", {}).get(self.table_name, []):
                    link = link_from_item(item)
                    if (owner is None or link.owner == owner) and link.status != "deleted":
                        links[link.code] = link
                pending = response.get("UnprocessedKeys") or {}
                if not pending:
                    break
                time.sleep(min(0.05 * 2**attempt, 2.0))
            else:
                raise RuntimeError("keys stayed unprocessed after retries")
        return links

    def _query(
        self,
        client: "DynamoDBClient",
        shard: _Shard,
        *,
        before: str,
        after: str | None,
        limit: int | None,
        where: LinkFilter,
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        arguments: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": LIST_INDEX,
            "KeyConditionExpression": "list_pk = :partition AND list_sk < :before",
            "ExpressionAttributeValues": {":partition": {"S": shard.partition}, ":before": {"S": before}},
            "ScanIndexForward": False,
        }
        if shard.prefix is not None:
            # A tag partition: the owner's range (or every owner's), ``before`` included (skipped
            # by the caller as in a job's window).
            before = shard.prefix + before
            after = shard.prefix + (after or _OLDEST)
            arguments["ExpressionAttributeValues"][":before"] = {"S": before}
        if after is not None:
            arguments["KeyConditionExpression"] = (
                "list_pk = :partition AND list_sk BETWEEN :after AND :before"
            )
            arguments["ExpressionAttributeValues"][":after"] = {"S": after}
        if limit is not None:
            arguments["Limit"] = limit
        if shard.start is not None:
            arguments["ExclusiveStartKey"] = shard.start
        # What DynamoDB can filter, it filters (less to send, and to read here; the read costs the
        # same); the status is matched here, and every filter is checked again.
        filters = []
        if shard.prefix is not None:
            # Tag index entries carry only their link's code: the link is matched when read.
            where = LinkFilter()
        if where.tag:
            filters.append("contains(tags, :tag)")
            arguments["ExpressionAttributeValues"][":tag"] = {"S": where.tag}
        if where.job_id:
            filters.append("job_id = :job_id")
            arguments["ExpressionAttributeValues"][":job_id"] = {"S": where.job_id}
        if where.domain == DEFAULT_DOMAIN:
            filters.append("attribute_not_exists(#domain)")
            arguments.setdefault("ExpressionAttributeNames", {})["#domain"] = "domain"
        elif where.domain is not None:
            filters.append("#domain = :domain")
            arguments.setdefault("ExpressionAttributeNames", {})["#domain"] = "domain"
            arguments["ExpressionAttributeValues"][":domain"] = {"S": where.domain}
        if where.q:
            # A word starts after a space in ``words``; a link written before links carried their
            # words has none, and is matched here.
            for n, word in enumerate(where.q):
                arguments["ExpressionAttributeValues"][f":w{n}"] = {"S": " " + word}
            starts = " AND ".join(f"contains(words, :w{n})" for n in range(len(where.q)))
            filters.append(f"(attribute_not_exists(words) OR ({starts}))")
        if filters:
            arguments["FilterExpression"] = " AND ".join(filters)
        response = client.query(**arguments)
        return list(response.get("Items", [])), response.get("LastEvaluatedKey")


@cache
def _shard_queries() -> ThreadPoolExecutor:
    """The threads that send a page's Queries, one per shard (kept for the container's life)."""
    return ThreadPoolExecutor(max_workers=LIST_SHARDS, thread_name_prefix="list-shard")
