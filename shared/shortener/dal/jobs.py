"""The jobs table: one "job" item per bulk upload (totals, progress counters and the set of chunks
already counted) and one "chunk#<n>" item per SQS message (its id block, then the outcome of each
of its rows).

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

from shortener.dal import aws
from shortener.models.jobs import (
    ChunkIds,
    CsvFormat,
    Job,
    JobError,
    JobUsage,
    ReadPosition,
    RecordedChunk,
    ResultsFile,
    RowOutcome,
    SplitState,
    UploadSource,
)

JOB_SK = "job"
CHUNK_PREFIX = "chunk#"
# Job items only (chunk items have no owner): an owner's jobs by creation time.
OWNER_INDEX = "ByOwner"
# How many chunks counted above a job's floor are kept before the floor is raised past them.
COUNTED_SET_COMPACT_AT = 64
# Zero-padded so that the chunks of a job sort in input order (an upload has far fewer chunks).
_CHUNK_DIGITS = 7
# JobUsage field -> the job item's attribute that adds it up.
_USAGE_ATTRIBUTES = {
    "dynamodb_requests": "use_dynamodb",
    "sqs_requests": "use_sqs",
    "lambda_requests": "use_lambda",
    "s3_write_requests": "use_s3_write",
    "s3_read_requests": "use_s3_read",
    "write_units": "use_write_units",
    "read_units": "use_read_units",
    "lambda_gb_seconds": "use_gb_seconds",
}


class JobsStore(aws.DynamoDBTable):
    """Data access for the jobs table."""

    # ---- jobs -------------------------------------------------------------------------------

    @aws.throttling_is_busy
    def create_job(self, job: Job, expires_at: int) -> None:
        """Write a new job record (its id is fresh, so the condition only guards against a bug)."""
        self.client.put_item(
            TableName=self.table_name,
            Item=_job_to_item(job, expires_at),
            ConditionExpression="attribute_not_exists(job_id)",
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

    def add_usage(self, job_id: str, usage: JobUsage) -> None:
        """Add work done for a job to its counted usage (one UpdateItem, while the job exists)."""
        expression, values = _usage_update(usage)
        if not expression:
            return
        self._update_if(
            job_id,
            UpdateExpression="ADD " + expression,
            ConditionExpression="attribute_exists(job_id)",
            ExpressionAttributeValues=values,
        )

    # ---- splitting an uploaded file -----------------------------------------------------------

    def claim_split(
        self, job_id: str, owner: str, *, etag: str, expected: ReadPosition, now: int, lease_until: int
    ) -> bool:
        """Take (or keep) the right to read an upload's file from ``expected`` on: one conditional
        write that succeeds only if the split is not done, is still at that position, is held by
        nobody (or ``owner``, or a lease that ran out), and the file is the one first read (its
        ETag is pinned by the first claim). A duplicated S3 event or invocation gets False."""
        return (
            self._update_if(
                job_id,
                UpdateExpression="SET split_owner = :owner, split_lease = :lease, #upload.etag = :etag",
                ConditionExpression=(
                    "split_done = :false AND split_offset = :offset "
                    "AND (attribute_not_exists(split_owner) OR split_owner = :owner OR split_lease < :now) "
                    "AND (attribute_not_exists(#upload.etag) OR #upload.etag = :etag)"
                ),
                ExpressionAttributeNames={"#upload": "upload"},
                ExpressionAttributeValues={
                    ":owner": {"S": owner},
                    ":lease": {"N": str(lease_until)},
                    ":etag": {"S": etag},
                    ":false": {"BOOL": False},
                    ":offset": {"N": str(expected.offset)},
                    ":now": {"N": str(now)},
                },
            )
            is not None
        )

    def checkpoint_split(
        self,
        job_id: str,
        owner: str,
        *,
        previous: ReadPosition,
        position: ReadPosition,
        chunks: int,
        file_format: CsvFormat,
        lease_until: int,
        usage: JobUsage,
    ) -> bool:
        """Record that the rows up to ``position`` are queued in ``chunks`` messages (``total``
        counts them), while ``owner`` still holds the split at ``previous``: False when another
        invocation took it over (this one must stop; what it queued beyond is queued again, and
        processed once, by the next)."""
        usage_expression, usage_values = _usage_update(usage)
        return (
            self._update_if(
                job_id,
                UpdateExpression=(
                    "SET split_offset = :offset, split_lines = :lines, #total = :rows, chunks = :chunks, "
                    "split_format = :format, split_lease = :lease"
                    + (" ADD " + usage_expression if usage_expression else "")
                ),
                ConditionExpression="split_owner = :owner AND split_offset = :previous",
                ExpressionAttributeNames={"#total": "total"},
                ExpressionAttributeValues={
                    ":offset": {"N": str(position.offset)},
                    ":lines": {"N": str(position.lines)},
                    ":rows": {"N": str(position.rows)},
                    ":chunks": {"N": str(chunks)},
                    ":format": {"S": file_format.model_dump_json()},
                    ":lease": {"N": str(lease_until)},
                    ":owner": {"S": owner},
                    ":previous": {"N": str(previous.offset)},
                    **usage_values,
                },
            )
            is not None
        )

    def finish_split(
        self,
        job_id: str,
        owner: str,
        *,
        position: ReadPosition,
        chunks: int,
        file_format: CsvFormat | None,
        error: JobError | None,
        usage: JobUsage,
    ) -> Job | None:
        """Mark the split done with its final row and message counts (and the error that ended it
        early, if one did), while ``owner`` holds it. The job as it now stands, or None when the
        split was taken over."""
        usage_expression, usage_values = _usage_update(usage)
        sets = (
            "split_done = :true, split_offset = :offset, split_lines = :lines, "
            "#total = :rows, chunks = :chunks"
        )
        values: dict[str, Any] = {
            ":true": {"BOOL": True},
            ":false": {"BOOL": False},
            ":offset": {"N": str(position.offset)},
            ":lines": {"N": str(position.lines)},
            ":rows": {"N": str(position.rows)},
            ":chunks": {"N": str(chunks)},
            ":owner": {"S": owner},
            **usage_values,
        }
        if file_format is not None:
            sets += ", split_format = :format"
            values[":format"] = {"S": file_format.model_dump_json()}
        names = {"#total": "total"}
        if error is not None:
            sets += ", #error = :error"
            names["#error"] = "error"
            values[":error"] = {"M": {"error": {"S": error.error}, "message": {"S": error.message}}}
        response = self._update_if(
            job_id,
            UpdateExpression=(
                f"SET {sets} REMOVE split_owner, split_lease"
                + (" ADD " + usage_expression if usage_expression else "")
            ),
            ConditionExpression="split_owner = :owner AND split_done = :false",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
        return _job_from_item(response["Attributes"]) if response is not None else None

    def release_split(self, job_id: str, owner: str) -> None:
        """Give up ``owner``'s lease on a split (it failed), so a retry may take it over at once."""
        self._update_if(
            job_id,
            UpdateExpression="REMOVE split_owner, split_lease",
            ConditionExpression="split_owner = :owner",
            ExpressionAttributeValues={":owner": {"S": owner}},
        )

    # ---- the results file ---------------------------------------------------------------------

    def claim_results(self, job_id: str, owner: str, *, now: int, lease_until: int) -> bool:
        """Take the right to write a job's results file: False when it is written, or another
        writer holds a lease that has not run out."""
        return (
            self._update_if(
                job_id,
                UpdateExpression="SET results_owner = :owner, results_lease = :lease",
                ConditionExpression=(
                    "attribute_exists(job_id) AND attribute_not_exists(results) AND "
                    "(attribute_not_exists(results_lease) OR results_lease < :now "
                    "OR results_owner = :owner)"
                ),
                ExpressionAttributeValues={
                    ":owner": {"S": owner},
                    ":lease": {"N": str(lease_until)},
                    ":now": {"N": str(now)},
                },
            )
            is not None
        )

    def record_results(self, job_id: str, results: ResultsFile, usage: JobUsage) -> bool:
        """Record the job's written results file, once (False if it was recorded before)."""
        usage_expression, usage_values = _usage_update(usage)
        return (
            self._update_if(
                job_id,
                UpdateExpression=(
                    "SET results = :results REMOVE results_owner, results_lease"
                    + (" ADD " + usage_expression if usage_expression else "")
                ),
                ConditionExpression="attribute_exists(job_id) AND attribute_not_exists(results)",
                ExpressionAttributeValues={
                    ":results": {
                        "M": {
                            "key": {"S": results.key},
                            "size": {"N": str(results.size)},
                            "rows": {"N": str(results.rows)},
                            "written_at": {"S": results.written_at.isoformat()},
                        }
                    },
                    **usage_values,
                },
            )
            is not None
        )

    def _update_if(self, job_id: str, **arguments: Any) -> dict[str, Any] | None:
        """One conditional UpdateItem of a job's record: its answer, or None when its condition
        did not hold (another writer got there first, or the job is gone)."""
        try:
            return dict(self.client.update_item(TableName=self.table_name, Key=_job_key(job_id), **arguments))
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            return None

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
        usage_expression, usage_values = _usage_update(usage or JobUsage())
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
        return _job_from_item(response["Attributes"])

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


def _job_key(job_id: str) -> dict[str, Any]:
    return {"job_id": {"S": job_id}, "sk": {"S": JOB_SK}}


def _job_to_item(job: Job, expires_at: int) -> dict[str, Any]:
    item: dict[str, Any] = {
        "job_id": {"S": job.job_id},
        "sk": {"S": JOB_SK},
        "total": {"N": str(job.total)},
        "chunks": {"N": str(job.chunks)},
        "succeeded": {"N": "0"},
        "failed": {"N": "0"},
        "created_at": {"S": job.created_at.isoformat()},
        "expires_at": {"N": str(expires_at)},
        "kind": {"S": job.kind},
        "split_done": {"BOOL": job.split_done},
    }
    for name in ("bucket", "base_url", "own_host", "owner"):
        if value := getattr(job, name):
            item[name] = {"S": value}
    if job.upload is not None:
        item["upload"] = {
            "M": {
                "key": {"S": job.upload.key},
                "file_name": {"S": job.upload.file_name},
                "size": {"N": str(job.upload.size)},
                **({"defaults": {"S": json.dumps(job.upload.defaults)}} if job.upload.defaults else {}),
            }
        }
    if not job.split_done:
        item["split_offset"] = {"N": "0"}
        item["split_lines"] = {"N": "0"}
    for field, attribute in _USAGE_ATTRIBUTES.items():
        if amount := getattr(job.usage, field):
            item[attribute] = {"N": _number_text(amount)}
    return item


def _job_from_item(item: dict[str, Any]) -> Job:
    def text(name: str) -> str | None:
        value = item.get(name, {}).get("S")
        return str(value) if value is not None else None

    def number(name: str, default: str = "0") -> str:
        return str(item.get(name, {}).get("N", default))

    upload = item.get("upload", {}).get("M")
    results = item.get("results", {}).get("M")
    error = item.get("error", {}).get("M")
    split_done = item.get("split_done", {}).get("BOOL", True)
    split_format = text("split_format")
    return Job(
        job_id=item["job_id"]["S"],
        total=int(item["total"]["N"]),
        chunks=int(number("chunks")),
        succeeded=int(number("succeeded")),
        failed=int(number("failed")),
        created_at=datetime.fromisoformat(item["created_at"]["S"]),
        kind="upload" if text("kind") == "upload" else "body",
        split_done=bool(split_done),
        bucket=text("bucket") or "",
        base_url=text("base_url") or "",
        own_host=text("own_host"),
        owner=text("owner"),
        upload=UploadSource(
            key=upload["key"]["S"],
            file_name=upload["file_name"]["S"],
            size=int(upload["size"]["N"]),
            etag=upload.get("etag", {}).get("S"),
            defaults=json.loads(upload.get("defaults", {}).get("S", "{}")),
        )
        if upload
        else None,
        split=SplitState(
            position=ReadPosition(
                offset=int(number("split_offset")),
                rows=int(item["total"]["N"]),
                lines=int(number("split_lines")),
            ),
            file_format=CsvFormat.model_validate_json(split_format) if split_format else None,
            owner=text("split_owner"),
            lease_until=int(number("split_lease")) if "split_lease" in item else None,
        )
        if "split_offset" in item
        else None,
        results=ResultsFile(
            key=results["key"]["S"],
            size=int(results["size"]["N"]),
            rows=int(results["rows"]["N"]),
            written_at=datetime.fromisoformat(results["written_at"]["S"]),
        )
        if results
        else None,
        results_lease_until=int(number("results_lease")) if "results_lease" in item else None,
        error=JobError(error=error["error"]["S"], message=error["message"]["S"]) if error else None,
        updated_at=datetime.fromisoformat(updated_at) if (updated_at := text("updated_at")) else None,
        usage=JobUsage.model_validate(
            {field: float(number(attribute)) for field, attribute in _USAGE_ATTRIBUTES.items()}
        ),
    )


def _usage_update(usage: JobUsage) -> tuple[str, dict[str, Any]]:
    """An ADD clause (without the keyword) adding ``usage``'s non-zero counts, and its values."""
    clauses, values = [], {}
    for field, attribute in _USAGE_ATTRIBUTES.items():
        amount = getattr(usage, field)
        if amount:
            clauses.append(f"{attribute} :{attribute}")
            values[f":{attribute}"] = {"N": _number_text(amount)}
    return ", ".join(clauses), values


def _number_text(amount: float) -> str:
    return str(int(amount)) if float(amount).is_integer() else f"{amount:.6f}"


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
    # orjson: 5 µs for a chunk of 250 rows where json.dumps took 170 (make bench ARGS=cpu). It
    # refuses str that is not UTF-8 (lone surrogates); row text never is: uploads are decoded
    # strictly and messages are parsed by pydantic, which refuses them.
    return zlib.compress(orjson.dumps(rows), 6)


def decode_outcomes(first_row: int, blob: bytes) -> list[RowOutcome]:
    rows = json.loads(zlib.decompress(blob))
    return [
        RowOutcome(row=first_row + index, url=row[0], code=row[1], error=row[2] if len(row) > 2 else "")
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
