"""Batches (changes in bulk) in the jobs table, and the reads that select their links.

A batch is one "batch" item (what it changes, its counts, where its next page starts, the lease of
the invocation working on it), one "batchpage#<n>" item per page of links it reached (each code's
outcome) and one "batchalready#<n>" item per page (the codes that were already as the batch makes
them before the page ran, written once by its first run, so that a rerun after a crash tells the
links that run changed from those it found changed). A page's outcomes are written once (a
conditional put: a rerun of the page after a crash finds them and does not run it again) and
counted once (a conditional update on the number of pages counted so far), so a redelivered or
retried invocation never counts twice. No item has the ``owner`` and ``created_at`` attributes the
table's ByOwner index is keyed on, so batches never show among an owner's jobs."""

import json
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from shortener import aws
from shortener.jobs.batches_model import FAILED_OUTCOMES, Batch, BatchOutcome, BatchPage
from shortener.jobs.store.chunk_records import CHUNK_PREFIX, chunk_sk, decode_outcomes
from shortener.links.model import Link
from shortener.links.store_listing import LinkIndex

BATCH_SK = "batch"
PAGE_PREFIX = "batchpage#"
# Sorts before PAGE_PREFIX, so the reads of pages never meet it.
ALREADY_PREFIX = "batchalready#"
_PAGE_DIGITS = 7
_NAMES = {"#total": "total", "#status": "status", "#cursor": "cursor"}
_SPEC_FIELDS = (
    "owner",
    "role",
    "action",
    "selector",
    "codes",
    "job_id",
    "tag",
    "set_fields",
    "stage_base_url",
    "created_at",
)


class BatchStore(aws.DynamoDBTable):
    """The batch and page items of the jobs table."""

    def create(self, batch: Batch, *, expires_at: int, lease_until: int) -> None:
        """Store a new batch; its first invocation has the lease until ``lease_until``."""
        spec = batch.model_dump(mode="json", include=set(_SPEC_FIELDS))
        self.client.put_item(
            TableName=self.table_name,
            Item={
                "job_id": {"S": batch.batch_id},
                "sk": {"S": BATCH_SK},
                "spec": {"S": json.dumps(spec, separators=(",", ":"))},
                "status": {"S": batch.status},
                "total": {"N": "0"},
                "changed": {"N": "0"},
                "unchanged": {"N": "0"},
                "failed": {"N": "0"},
                "pages": {"N": "0"},
                "lease_until": {"N": str(lease_until)},
                "expires_at": {"N": str(expires_at)},
            },
            ConditionExpression="attribute_not_exists(job_id)",
        )

    def get(self, batch_id: str) -> tuple[Batch, int] | None:
        """The batch and the end of its lease (epoch seconds), or None. One consistent read."""
        response = self.client.get_item(
            TableName=self.table_name,
            Key=_key(batch_id, BATCH_SK),
            ConsistentRead=True,
        )
        item: Any = response.get("Item")
        if not item:
            return None
        return _batch_from_item(batch_id, item), int(item.get("lease_until", {}).get("N", "0"))

    def claim(self, batch_id: str, holder: str, *, now: int, lease_until: int) -> int | None:
        """Take the batch's lease for ``holder`` (free, already its own, or expired): how many times
        a holder took it over from another that never let go (a crash), or None when another
        holds it or the batch is no longer running."""
        try:
            response = self.client.update_item(
                TableName=self.table_name,
                Key=_key(batch_id, BATCH_SK),
                UpdateExpression="SET lease_holder = :holder, lease_until = :until",
                ConditionExpression=(
                    "#status = :running AND (attribute_not_exists(lease_holder) OR lease_holder = :holder"
                    " OR lease_until < :now)"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":holder": {"S": holder},
                    ":until": {"N": str(lease_until)},
                    ":now": {"N": str(now)},
                    ":running": {"S": "running"},
                },
                ReturnValues="ALL_OLD",
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return None
            raise
        old: Any = response.get("Attributes", {})
        takeovers = int(old.get("takeovers", {}).get("N", "0"))
        previous = old.get("lease_holder", {}).get("S")
        if previous is None or previous == holder:
            return takeovers
        updated: Any = self.client.update_item(
            TableName=self.table_name,
            Key=_key(batch_id, BATCH_SK),
            UpdateExpression="ADD takeovers :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues="UPDATED_NEW",
        )
        return int(updated["Attributes"]["takeovers"]["N"])

    def release(self, batch_id: str, holder: str, *, lease_until: int) -> None:
        """Let go of the lease (a handover: the next invocation may claim it; status reads leave it
        alone until ``lease_until``)."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=_key(batch_id, BATCH_SK),
                UpdateExpression="REMOVE lease_holder SET lease_until = :until",
                ConditionExpression="lease_holder = :holder",
                ExpressionAttributeValues={":holder": {"S": holder}, ":until": {"N": str(lease_until)}},
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise

    def get_page(self, batch_id: str, page: int) -> BatchPage | None:
        response = self.client.get_item(
            TableName=self.table_name, Key=_key(batch_id, page_sk(page)), ConsistentRead=True
        )
        item: Any = response.get("Item")
        return _page_from_item(item) if item else None

    def get_already(self, batch_id: str, page: int) -> set[str] | None:
        """The codes of a page that were already as the batch makes them before it ran, or None
        when no run of the page stored them yet."""
        response = self.client.get_item(
            TableName=self.table_name, Key=_key(batch_id, _already_sk(page)), ConsistentRead=True
        )
        item: Any = response.get("Item")
        return set(json.loads(item["codes"]["S"])) if item else None

    def put_already(self, batch_id: str, page: int, codes: set[str], *, expires_at: int) -> set[str]:
        """Store those codes unless a run of the page stored them first: the codes as stored."""
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item={
                    "job_id": {"S": batch_id},
                    "sk": {"S": _already_sk(page)},
                    "codes": {"S": json.dumps(sorted(codes), separators=(",", ":"))},
                    "expires_at": {"N": str(expires_at)},
                },
                ConditionExpression="attribute_not_exists(job_id)",
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            stored = self.get_already(batch_id, page)
            return codes if stored is None else stored
        return codes

    def put_page(self, batch_id: str, page: int, outcomes: BatchPage, *, expires_at: int) -> BatchPage:
        """Store a page's outcomes unless a run of it stored them first: the page as stored."""
        item: dict[str, Any] = {
            "job_id": {"S": batch_id},
            "sk": {"S": page_sk(page)},
            "outcomes": {
                "S": json.dumps(
                    [[o.code, o.outcome, o.message or ""] for o in outcomes.outcomes], separators=(",", ":")
                )
            },
            "expires_at": {"N": str(expires_at)},
        }
        if outcomes.next_cursor is not None:
            item["next_cursor"] = {"S": outcomes.next_cursor}
        try:
            self.client.put_item(
                TableName=self.table_name, Item=item, ConditionExpression="attribute_not_exists(job_id)"
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            return self.get_page(batch_id, page) or outcomes
        return outcomes

    def count_page(
        self, batch_id: str, page: int, outcomes: BatchPage, *, now: datetime, lease_until: int
    ) -> bool:
        """Add a page's counts to the batch and move its cursor on, once: False when the page was
        counted already (by another run of it)."""
        counts = {"changed": 0, "unchanged": 0, "failed": 0}
        for outcome in outcomes.outcomes:
            counts["failed" if outcome.outcome in FAILED_OUTCOMES else outcome.outcome] += 1
        values: dict[str, Any] = {
            ":page": {"N": str(page)},
            ":next": {"N": str(page + 1)},
            ":total": {"N": str(len(outcomes.outcomes))},
            ":changed": {"N": str(counts["changed"])},
            ":unchanged": {"N": str(counts["unchanged"])},
            ":failed": {"N": str(counts["failed"])},
            ":until": {"N": str(lease_until)},
        }
        update = (
            "SET pages = :next, lease_until = :until ADD #total :total, changed :changed,"
            " unchanged :unchanged, failed :failed"
        )
        if outcomes.next_cursor is None:
            update = update.replace("SET ", "SET #status = :done, finished_at = :now, ") + " REMOVE #cursor"
            values[":done"] = {"S": "done"}
            values[":now"] = {"S": now.isoformat()}
        else:
            update = update.replace("SET ", "SET #cursor = :cursor, ")
            values[":cursor"] = {"S": outcomes.next_cursor}
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=_key(batch_id, BATCH_SK),
                UpdateExpression=update,
                ConditionExpression="pages = :page",
                ExpressionAttributeNames={name: word for name, word in _NAMES.items() if name in update},
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def fail(self, batch_id: str, error: str, *, now: datetime) -> None:
        """End a running batch that cannot go on: the codes it reached keep their outcomes."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=_key(batch_id, BATCH_SK),
                UpdateExpression=(
                    "SET #status = :failed, finished_at = :now, #error = :error REMOVE lease_holder"
                ),
                ConditionExpression="#status = :running",
                ExpressionAttributeNames={"#status": "status", "#error": "error"},
                ExpressionAttributeValues={
                    ":failed": {"S": "failed"},
                    ":running": {"S": "running"},
                    ":now": {"S": now.isoformat()},
                    ":error": {"S": error},
                },
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise

    def read_pages(self, batch_id: str, first: int, *, most: int) -> list[tuple[int, BatchPage]]:
        """Up to ``most`` pages from page ``first`` on, in order (one Query)."""
        response = self.client.query(
            TableName=self.table_name,
            KeyConditionExpression="job_id = :id AND sk BETWEEN :first AND :last",
            ExpressionAttributeValues={
                ":id": {"S": batch_id},
                ":first": {"S": page_sk(first)},
                ":last": {"S": PAGE_PREFIX + "9" * _PAGE_DIGITS},
            },
            ConsistentRead=True,
            Limit=most,
        )
        items: Any = response.get("Items", [])
        return [(int(item["sk"]["S"].removeprefix(PAGE_PREFIX)), _page_from_item(item)) for item in items]


class JobCodes(aws.DynamoDBTable):
    """The codes a bulk job made, a few of its chunk items at a time (jobs table)."""

    def codes_from(self, job_id: str, chunk: int, *, chunks: int) -> tuple[list[str], int | None]:
        """The codes of up to ``chunks`` counted chunks from ``chunk`` on, in input order, and the
        chunk to go on from (None: there are no more)."""
        response = self.client.query(
            TableName=self.table_name,
            KeyConditionExpression="job_id = :job_id AND sk BETWEEN :first AND :last",
            ProjectionExpression="sk, first_row, outcomes",
            ExpressionAttributeValues={
                ":job_id": {"S": job_id},
                ":first": {"S": chunk_sk(chunk)},
                ":last": {"S": CHUNK_PREFIX + "9" * 7},
            },
            ConsistentRead=True,
            Limit=chunks,
        )
        items: Any = response.get("Items", [])
        codes: list[str] = []
        for item in items:
            if "outcomes" in item:
                outcomes = decode_outcomes(int(item["first_row"]["N"]), item["outcomes"]["B"])
                codes += [outcome.code for outcome in outcomes if outcome.code]
        if not response.get("LastEvaluatedKey") or not items:
            return codes, None
        return codes, int(items[-1]["sk"]["S"].removeprefix(CHUNK_PREFIX)) + 1


class TaggedLinks(LinkIndex):
    """Every owner's links with a tag (an admin's batch by tag): the tag index across owners, one
    page at a time (shortener.links.store_items.tag_items)."""

    def page(self, tag: str, start: str | None, *, limit: int) -> tuple[list[Link], str | None]:
        """Up to ``limit`` links with ``tag`` after the position ``start`` (None: from the first),
        and the position to go on from (None: every link with the tag is read)."""
        found = self.list_links(None, before=start, limit=limit, tag=tag)
        return found.links, found.next_position


def page_sk(page: int) -> str:
    return f"{PAGE_PREFIX}{page:0{_PAGE_DIGITS}d}"


def _already_sk(page: int) -> str:
    return f"{ALREADY_PREFIX}{page:0{_PAGE_DIGITS}d}"


def _key(batch_id: str, sk: str) -> dict[str, Any]:
    return {"job_id": {"S": batch_id}, "sk": {"S": sk}}


def _batch_from_item(batch_id: str, item: dict[str, Any]) -> Batch:
    spec = json.loads(item["spec"]["S"])

    def number(name: str) -> int:
        return int(item.get(name, {}).get("N", "0"))

    return Batch(
        batch_id=batch_id,
        **spec,
        status=item["status"]["S"],
        total=number("total"),
        changed=number("changed"),
        unchanged=number("unchanged"),
        failed=number("failed"),
        pages=number("pages"),
        cursor=item.get("cursor", {}).get("S"),
        finished_at=item.get("finished_at", {}).get("S"),
        error=item.get("error", {}).get("S", ""),
    )


def _page_from_item(item: dict[str, Any]) -> BatchPage:
    outcomes = [
        BatchOutcome(code=code, outcome=word, message=message or None)
        for code, word, message in json.loads(item["outcomes"]["S"])
    ]
    return BatchPage(outcomes, item.get("next_cursor", {}).get("S"))
