"""The jobs table's chunk records and their counting: one "chunk#<n>" item per SQS message (its id
block, then the outcome of each of its rows), counted on its "job" item (``items``).

Bulk processing is idempotent through them: the first delivery of a message fixes its ids with a
conditional put, so a redelivery reuses the same ids (same codes); a chunk's counts are added to
the job by one conditional update that also records the chunk as counted, so it is counted once.
The job item keeps its counted chunks as a floor (``counted_below``: every chunk under it is
counted) and a set of those counted above it; the floor passes the chunks counted just above it
now and then, so the item stays small however many chunks the job has. A set of every chunk would
grow by about 4 bytes a chunk: each count would cost write units for the whole item (about 31 for
a 2,000,000-row job's last counts), and a job of about 21,000,000 rows would pass DynamoDB's
400 KB item limit, after which no count could be written.

Why not one TransactWriteItems for "chunk done + job counters": a transaction costs twice the
write units of its items, and moto (the local stack) deep-copies a whole table for every
transaction and races with concurrent writers, which fails under parallel loops.
"""

import json
import zlib
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import orjson
from botocore.exceptions import ClientError

from shortener import aws
from shortener.jobs.model import ChunkIds, Job, JobUsage, RecordedChunk, RowOutcome
from shortener.jobs.store.items import JobItems, job_from_item, usage_update

CHUNK_PREFIX = "chunk#"
# How many chunks counted above a job's floor are kept before the floor is raised past them.
COUNTED_SET_COMPACT_AT = 64
# Zero-padded so that the chunks of a job sort in input order (an upload has far fewer chunks).
_CHUNK_DIGITS = 7


class ChunkRecords(JobItems):
    """The chunk items of the jobs table, and the counting of chunks on their job item."""

    def fix_chunk_ids(self, job_id: str, chunk: int, proposed: ChunkIds, expires_at: int) -> ChunkIds:
        """Store ``proposed`` as the chunk's ids unless an earlier delivery already stored some: one
        conditional put. The ids the chunk must use (the earlier ones, when there were)."""
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item={
                    "job_id": {"S": job_id},
                    "sk": {"S": chunk_sk(chunk)},
                    "ids": {"S": encode_id_ranges(proposed.ids)},
                    "created_at": {"S": proposed.created_at.isoformat()},
                    "expires_at": {"N": str(expires_at)},
                },
                ConditionExpression="attribute_not_exists(job_id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            old: Any = exc.response.get("Item") or self._get_chunk(job_id, chunk)
            return _chunk_ids_from_item(old, proposed) if old else proposed
        return proposed

    def record_outcomes(
        self,
        job_id: str,
        chunk: int,
        *,
        first_row: int,
        outcomes: Sequence[RowOutcome],
        now: int,
        expires_at: int,
        dead_letter: bool = False,
    ) -> RecordedChunk:
        """Store the chunk's row outcomes and mark it done; the counts that stand.

        A delivery's outcomes (``dead_letter`` False) are written unless the chunk was settled as
        a dead letter first (a late success of a message SQS had moved to the dead-letter queue):
        a redelivery writes the same outcomes again, so that is the only condition. The row
        errors of a dead-lettered message (``dead_letter`` True) are written only if no delivery
        recorded the chunk. Either way one conditional update, so whichever comes first stands
        and the loser is told its counts. Counting is ``count_chunk``'s job."""
        succeeded = sum(1 for outcome in outcomes if outcome.succeeded)
        failed = len(outcomes) - succeeded
        values: dict[str, Any] = {
            ":now": {"N": str(now)},
            ":first_row": {"N": str(first_row)},
            ":outcomes": {"B": encode_outcomes(outcomes)},
            ":succeeded": {"N": str(succeeded)},
            ":failed": {"N": str(failed)},
            ":expires_at": {"N": str(expires_at)},
        }
        update = (
            "SET done_at = :now, first_row = :first_row, outcomes = :outcomes, "
            "succeeded = :succeeded, failed = :failed, expires_at = :expires_at"
        )
        if dead_letter:
            update += ", dead_letter = :dead_letter"
            values[":dead_letter"] = {"BOOL": True}
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"job_id": {"S": job_id}, "sk": {"S": chunk_sk(chunk)}},
                UpdateExpression=update,
                ConditionExpression=(
                    "attribute_not_exists(done_at)" if dead_letter else "attribute_not_exists(dead_letter)"
                ),
                ExpressionAttributeValues=values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            old: Any = exc.response.get("Item") or self._get_chunk(job_id, chunk) or {}
            return RecordedChunk(
                succeeded=int(old.get("succeeded", {}).get("N", "0")),
                failed=int(old.get("failed", {}).get("N", "0")),
                dead_letter=old.get("dead_letter", {}).get("BOOL", False),
            )
        return RecordedChunk(succeeded=succeeded, failed=failed, dead_letter=dead_letter)

    def count_chunk(
        self,
        job_id: str,
        chunk: int,
        *,
        succeeded: int,
        failed: int,
        now: datetime,
        usage: JobUsage | None = None,
    ) -> Job | None:
        """Add a chunk's counts (and the usage of its work) to its job unless they were added
        before: one conditional UpdateItem that also puts the chunk into the job's set of counted
        chunks and records ``now`` as the job's last progress. The job as it stands after the
        count (so the one count that completes it knows), or None when the chunk was already
        counted (a redelivery) or the job no longer exists."""
        usage_expression, usage_values = usage_update(usage or JobUsage())
        response = self._update_if(
            job_id,
            UpdateExpression=(
                "SET updated_at = :now ADD succeeded :succeeded, failed :failed, counted :chunk"
                + (", " + usage_expression if usage_expression else "")
            ),
            ConditionExpression=(
                "attribute_exists(job_id) AND NOT contains(counted, :number)"
                " AND (attribute_not_exists(counted_below) OR counted_below <= :number)"
            ),
            ExpressionAttributeValues={
                ":now": {"S": now.isoformat()},
                ":succeeded": {"N": str(succeeded)},
                ":failed": {"N": str(failed)},
                ":chunk": {"NS": [str(chunk)]},
                ":number": {"N": str(chunk)},
                **usage_values,
            },
            # No read units: the item comes back with the write's answer.
            ReturnValues="ALL_NEW",
        )
        if response is None:
            return None
        self._raise_counted_floor(job_id, response["Attributes"])
        return job_from_item(response["Attributes"])

    def _raise_counted_floor(self, job_id: str, item: dict[str, Any]) -> None:
        """Once the set of chunks counted above the floor holds COUNTED_SET_COMPACT_AT, move the
        floor past the run of them that starts at it, and drop that run from the set: one
        UpdateItem, conditional on the floor it read (a concurrent raise wins, and this one is
        left out). Chunks are queued in order and counted nearly so; a chunk that is late (its
        message failed, or waits for the dead-letter settlement) holds the floor until it is
        counted, and only the chunks counted meanwhile stay in the set."""
        counted = {int(number) for number in item.get("counted", {}).get("NS", [])}
        if len(counted) < COUNTED_SET_COMPACT_AT:
            return
        floor = int(item.get("counted_below", {}).get("N", "0"))
        raised = floor
        while raised in counted:
            raised += 1
        if raised == floor:
            return
        values: dict[str, Any] = {
            ":raised": {"N": str(raised)},
            ":passed": {"NS": [str(chunk) for chunk in range(floor, raised)]},
        }
        if "counted_below" in item:
            values[":floor"] = {"N": str(floor)}
        self._update_if(
            job_id,
            UpdateExpression="SET counted_below = :raised DELETE counted :passed",
            ConditionExpression=(
                "counted_below = :floor" if "counted_below" in item else "attribute_not_exists(counted_below)"
            ),
            ExpressionAttributeValues=values,
        )

    def iter_chunk_outcomes(self, job_id: str, from_chunk: int = 0) -> Iterator[tuple[int, list[RowOutcome]]]:
        """(chunk, its row outcomes) for every completed chunk of a job from ``from_chunk`` on, in
        input order (a paginated Query that reads pages only as they are consumed)."""
        paginator = self.client.get_paginator("query")
        pages = paginator.paginate(
            TableName=self.table_name,
            KeyConditionExpression="job_id = :job_id AND sk BETWEEN :first AND :last",
            FilterExpression="attribute_exists(done_at)",
            ProjectionExpression="sk, first_row, outcomes",
            ExpressionAttributeValues={
                ":job_id": {"S": job_id},
                ":first": {"S": chunk_sk(from_chunk)},
                ":last": {"S": CHUNK_PREFIX + "9" * _CHUNK_DIGITS},
            },
            ConsistentRead=True,
        )
        for page in pages:
            for item in page.get("Items", []):
                chunk = int(item["sk"]["S"].removeprefix(CHUNK_PREFIX))
                yield chunk, decode_outcomes(int(item["first_row"]["N"]), item["outcomes"]["B"])

    def _get_chunk(self, job_id: str, chunk: int) -> dict[str, Any] | None:
        response = self.client.get_item(
            TableName=self.table_name,
            Key={"job_id": {"S": job_id}, "sk": {"S": chunk_sk(chunk)}},
            ConsistentRead=True,
        )
        item: Any = response.get("Item")
        return item


def chunk_sk(chunk: int) -> str:
    return f"{CHUNK_PREFIX}{chunk:0{_CHUNK_DIGITS}d}"


def encode_id_ranges(ids: Sequence[int]) -> str:
    """Ids as compact ranges ("101-350,352-360"): a counter block is almost always one range."""
    ranges: list[str] = []
    start = previous = None
    for link_id in ids:
        if previous is not None and link_id == previous + 1:
            previous = link_id
            continue
        if start is not None:
            ranges.append(f"{start}-{previous}")
        start = previous = link_id
    if start is not None:
        ranges.append(f"{start}-{previous}")
    return ",".join(ranges)


def decode_id_ranges(text: str) -> list[int]:
    ids: list[int] = []
    for part in filter(None, text.split(",")):
        first, last = part.split("-")
        ids.extend(range(int(first), int(last) + 1))
    return ids


def encode_outcomes(outcomes: Sequence[RowOutcome]) -> bytes:
    """Row outcomes as compressed JSON (``[url, code]`` or ``[url, "", error]`` per row, then the
    row's number and its domain where needed): URLs compress well, and the chunk item's size is
    what its transactional write costs."""
    first_row = outcomes[0].row if outcomes else 0
    # A row's number is kept only where it does not follow from the chunk's first (blank lines),
    # or where its domain (not the default one) follows it.
    rows = [
        [o.url, o.code, o.error, o.row, o.domain]
        if o.domain
        else [o.url, o.code, o.error, o.row]
        if o.row != first_row + index
        else [o.url, o.code, o.error]
        if o.error
        else [o.url, o.code]
        for index, o in enumerate(outcomes)
    ]
    # orjson: 5 µs for a chunk of 250 rows where json.dumps took 170 (make bench ARGS=cpu). It
    # refuses str that is not UTF-8 (lone surrogates); row text never is: uploads are decoded
    # strictly and messages are parsed by pydantic, which refuses them.
    return zlib.compress(orjson.dumps(rows), 6)


def decode_outcomes(first_row: int, blob: bytes) -> list[RowOutcome]:
    rows = json.loads(zlib.decompress(blob))
    return [
        RowOutcome(
            row=row[3] if len(row) > 3 else first_row + index,
            url=row[0],
            code=row[1],
            error=row[2] if len(row) > 2 else "",
            domain=row[4] if len(row) > 4 else None,
        )
        for index, row in enumerate(rows)
    ]


def _chunk_ids_from_item(item: dict[str, Any], proposed: ChunkIds) -> ChunkIds:
    # A chunk completed without generated rows has no ids or time of its own.
    created_at = item.get("created_at", {}).get("S")
    return ChunkIds(
        ids=decode_id_ranges(item.get("ids", {}).get("S", "")),
        created_at=datetime.fromisoformat(created_at) if created_at else proposed.created_at,
        done="done_at" in item,
        succeeded=int(item.get("succeeded", {}).get("N", "0")),
        failed=int(item.get("failed", {}).get("N", "0")),
    )
