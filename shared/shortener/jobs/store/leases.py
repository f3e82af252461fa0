"""The jobs table's two leases on a job item: the split lease (one invocation at a time reads an
uploaded file into the queue, checkpointing its position, handing over before it times out) and
the results lease (one writer at a time writes the job's results file, recorded once)."""

from typing import Any

from shortener.jobs.model import CsvFormat, Job, JobError, JobUsage, ReadPosition, ResultsFile
from shortener.jobs.store.items import JobItems, job_from_item, usage_update


class JobLeases(JobItems):
    """The split lease and the results lease of a job item."""

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
        usage_expression, usage_values = usage_update(usage)
        return (
            self._update_if(
                job_id,
                UpdateExpression=(
                    "SET split_offset = :offset, split_lines = :lines, #total = :rows, chunks = :chunks, "
                    "split_format = :format, split_lease = :lease, split_number = :number, "
                    "fallback_lines = :fallback_lines"
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
                    ":number": {"N": str(position.last_row_number)},
                    ":fallback_lines": {"N": str(position.fallback_lines)},
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
        usage_expression, usage_values = usage_update(usage)
        sets = (
            "split_done = :true, split_offset = :offset, split_lines = :lines, "
            "#total = :rows, chunks = :chunks, split_number = :number, fallback_lines = :fallback_lines"
        )
        values: dict[str, Any] = {
            ":true": {"BOOL": True},
            ":false": {"BOOL": False},
            ":offset": {"N": str(position.offset)},
            ":lines": {"N": str(position.lines)},
            ":rows": {"N": str(position.rows)},
            ":chunks": {"N": str(chunks)},
            ":owner": {"S": owner},
            ":number": {"N": str(position.last_row_number)},
            ":fallback_lines": {"N": str(position.fallback_lines)},
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
        return job_from_item(response["Attributes"]) if response is not None else None

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
        usage_expression, usage_values = usage_update(usage)
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
