"""The jobs table: one "job" item per bulk upload (totals, progress counters and the set of chunks
already counted) and one "chunk#<n>" item per SQS message (its id block, then the outcome of each
of its rows).

Bulk processing is idempotent through them: the first delivery of a message fixes its ids with a
conditional put, so a redelivery reuses the same ids (same codes); a chunk's counts are added to
the job by one conditional update that also records the chunk as counted, so it is counted once.

Why not one TransactWriteItems for "chunk done + job counters": a transaction costs twice the
write units of its items, and moto (the local stack) deep-copies a whole table for every
transaction and races with concurrent writers, which fails under parallel loops.
"""

import json
import zlib
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from shortener.dal import aws
from shortener.models.jobs import ChunkIds, Job, RecordedChunk, RowOutcome

JOB_SK = "job"
CHUNK_PREFIX = "chunk#"
# Job items only (chunk items have no owner): an owner's jobs by creation time.
OWNER_INDEX = "ByOwner"
# Zero-padded so that the chunks of a job sort in input order (an upload has far fewer chunks).
_CHUNK_DIGITS = 7


class JobsStore(aws.DynamoDBTable):
    """Data access for the jobs table."""

    # ---- jobs -------------------------------------------------------------------------------

    @aws.throttling_is_busy
    def create_job(self, job: Job, expires_at: int) -> None:
        """Write a new job record (its id is fresh, so the condition only guards against a bug)."""
        item: dict[str, Any] = {
            "job_id": {"S": job.job_id},
            "sk": {"S": JOB_SK},
            "total": {"N": str(job.total)},
            "chunks": {"N": str(job.chunks)},
            "succeeded": {"N": "0"},
            "failed": {"N": "0"},
            "created_at": {"S": job.created_at.isoformat()},
            "expires_at": {"N": str(expires_at)},
        }
        if job.owner:
            item["owner"] = {"S": job.owner}
        self.client.put_item(
            TableName=self.table_name, Item=item, ConditionExpression="attribute_not_exists(job_id)"
        )

    def delete_job(self, job_id: str) -> None:
        """Withdraw a job record (its rows could not be queued)."""
        self.client.delete_item(TableName=self.table_name, Key={"job_id": {"S": job_id}, "sk": {"S": JOB_SK}})

    @aws.throttling_is_busy
    def get_job(self, job_id: str) -> Job | None:
        """The job record, or None. One consistent GetItem."""
        response = self.client.get_item(
            TableName=self.table_name,
            Key={"job_id": {"S": job_id}, "sk": {"S": JOB_SK}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return _job_from_item(item) if item else None

    def list_jobs(self, owner: str, *, before: str | None, limit: int) -> tuple[list[Job], str | None]:
        """Up to ``limit`` of ``owner``'s jobs, newest first, created before the position ``before``
        ("<created_at>#<job_id>"), and the position after the last one (None: no more)."""
        arguments: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": OWNER_INDEX,
            "KeyConditionExpression": "#owner = :owner",
            "ExpressionAttributeNames": {"#owner": "owner"},
            "ExpressionAttributeValues": {":owner": {"S": owner}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if before is not None:
            created_at, job_id = before.rsplit("#", 1)
            arguments["ExclusiveStartKey"] = {
                "job_id": {"S": job_id},
                "sk": {"S": JOB_SK},
                "owner": {"S": owner},
                "created_at": {"S": created_at},
            }
        response = self.client.query(**arguments)
        jobs = [_job_from_item(item) for item in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        return jobs, (f"{last['created_at']['S']}#{last['job_id']['S']}" if last else None)

    # ---- chunks -----------------------------------------------------------------------------

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

    def count_chunk(self, job_id: str, chunk: int, *, succeeded: int, failed: int, now: datetime) -> bool:
        """Add a chunk's counts to its job unless they were added before: one conditional
        UpdateItem that also puts the chunk into the job's set of counted chunks and records
        ``now`` as the job's last progress. False when the chunk was already counted (a
        redelivery) or the job no longer exists."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"job_id": {"S": job_id}, "sk": {"S": JOB_SK}},
                UpdateExpression=(
                    "SET updated_at = :now ADD succeeded :succeeded, failed :failed, counted :chunk"
                ),
                ConditionExpression="attribute_exists(job_id) AND NOT contains(counted, :number)",
                ExpressionAttributeValues={
                    ":now": {"S": now.isoformat()},
                    ":succeeded": {"N": str(succeeded)},
                    ":failed": {"N": str(failed)},
                    ":chunk": {"NS": [str(chunk)]},
                    ":number": {"N": str(chunk)},
                },
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            return False
        return True

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
    """Row outcomes as compressed JSON (``[url, code]`` or ``[url, "", error]`` per row): URLs
    compress well, and the chunk item's size is what its transactional write costs."""
    rows = [[o.url, o.code, o.error] if o.error else [o.url, o.code] for o in outcomes]
    return zlib.compress(json.dumps(rows, separators=(",", ":")).encode(), 6)


def decode_outcomes(first_row: int, blob: bytes) -> list[RowOutcome]:
    rows = json.loads(zlib.decompress(blob))
    return [
        RowOutcome(row=first_row + index, url=row[0], code=row[1], error=row[2] if len(row) > 2 else "")
        for index, row in enumerate(rows)
    ]


def _job_from_item(item: dict[str, Any]) -> Job:
    return Job(
        job_id=item["job_id"]["S"],
        total=int(item["total"]["N"]),
        chunks=int(item.get("chunks", {}).get("N", "0")),
        succeeded=int(item.get("succeeded", {}).get("N", "0")),
        failed=int(item.get("failed", {}).get("N", "0")),
        created_at=datetime.fromisoformat(item["created_at"]["S"]),
        updated_at=datetime.fromisoformat(item["updated_at"]["S"]) if "updated_at" in item else None,
        owner=item.get("owner", {}).get("S"),
    )


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
