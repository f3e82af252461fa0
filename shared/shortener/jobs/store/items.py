"""The jobs table's job items: one "job" item per bulk upload (its source, totals, progress
counters and usage), read, listed by owner, and updated under a condition. The chunk records
(``chunk_records``) and the leases (``leases``) build on this."""

import json
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from shortener import aws
from shortener.jobs.model import (
    CsvFormat,
    FileEncoding,
    Job,
    JobError,
    JobUsage,
    ReadPosition,
    ResultsFile,
    SplitState,
    UploadSource,
)
from shortener.links.domains import JobDomains

JOB_SK = "job"
# Job items only (chunk items have no owner): an owner's jobs by creation time.
OWNER_INDEX = "ByOwner"
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
    "throttled_requests": "use_throttled",
}


class JobItems(aws.DynamoDBTable):
    """The job items of the jobs table."""

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
        return job_from_item(item) if item else None

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
        jobs = [job_from_item(item) for item in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        return jobs, (f"{last['created_at']['S']}#{last['job_id']['S']}" if last else None)

    def add_usage(self, job_id: str, usage: JobUsage) -> None:
        """Add work done for a job to its counted usage (one UpdateItem, while the job exists)."""
        expression, values = usage_update(usage)
        if not expression:
            return
        self._update_if(
            job_id,
            UpdateExpression="ADD " + expression,
            ConditionExpression="attribute_exists(job_id)",
            ExpressionAttributeValues=values,
        )

    def _update_if(self, job_id: str, **arguments: Any) -> dict[str, Any] | None:
        """One conditional UpdateItem of a job's record: its answer, or None when its condition
        did not hold (another writer got there first, or the job is gone)."""
        try:
            return dict(self.client.update_item(TableName=self.table_name, Key=job_key(job_id), **arguments))
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            return None


def job_key(job_id: str) -> dict[str, Any]:
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
    for name in ("bucket", "base_url", "api_url", "own_host", "owner", "notify_topic", "file_name"):
        if value := getattr(job, name):
            item[name] = {"S": value}
    if job.own_hosts:
        item["own_hosts"] = {"L": [{"S": host} for host in job.own_hosts]}
    if job.domains is not None:
        item["domains"] = {"S": job.domains.model_dump_json(exclude_defaults=True)}
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
    if job.encoding is not None:
        item["fallback_lines"] = {"N": str(job.encoding.fallback_lines)}
        item["fallback"] = {"S": job.encoding.fallback}
    if job.ignored_columns:
        item["ignored_columns"] = {"L": [{"S": name} for name in job.ignored_columns]}
    for field, attribute in _USAGE_ATTRIBUTES.items():
        if amount := getattr(job.usage, field):
            item[attribute] = {"N": _number_text(amount)}
    return item


def job_from_item(item: dict[str, Any]) -> Job:
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
    file_format = CsvFormat.model_validate_json(split_format) if split_format else None
    encoding = None
    if "fallback_lines" in item:
        fallback = text("fallback") or (file_format.fallback if file_format else None)
        encoding = FileEncoding(
            fallback_lines=int(number("fallback_lines")), fallback=fallback or FileEncoding().fallback
        )
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
        api_url=text("api_url") or "",
        own_host=text("own_host"),
        own_hosts=[host["S"] for host in item.get("own_hosts", {}).get("L", [])],
        owner=text("owner"),
        domains=JobDomains.model_validate_json(domains) if (domains := text("domains")) else None,
        notify_topic=text("notify_topic"),
        file_name=text("file_name"),
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
                numbered=int(item["split_number"]["N"]) if "split_number" in item else None,
                fallback_lines=int(number("fallback_lines")),
            ),
            file_format=file_format,
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
        encoding=encoding,
        # A body job keeps its own; an upload job's are in the format its split found.
        ignored_columns=[name["S"] for name in item.get("ignored_columns", {}).get("L", [])]
        or (list(file_format.ignored_columns) if file_format else []),
        updated_at=datetime.fromisoformat(updated_at) if (updated_at := text("updated_at")) else None,
        usage=JobUsage.model_validate(
            {field: float(number(attribute)) for field, attribute in _USAGE_ATTRIBUTES.items()}
        ),
    )


def usage_update(usage: JobUsage) -> tuple[str, dict[str, Any]]:
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
