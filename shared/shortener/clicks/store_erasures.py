"""Erasures of click events in the clicks table (data access): per owner and erasure, the links it
covers (none: all of them), when it was asked, how far the worker got, and when it finished. Kept
ERASURE_DAYS (the table's TTL), as the record that it was done. Written with UpdateItem, which the
API and worker functions may use on the table."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from shortener import aws, clock
from shortener.clicks.model import ErasureActivity

ERASURE_PK = "#erasure#"
# One item for all owners: how many erasures were asked, and which run (the compaction of click
# events waits for them: shortener.clicks.compaction).
ACTIVITY_KEY = {"pk": {"S": "#erasures"}, "sk": {"S": "activity"}}
ERASURE_DAYS = 400
# An erasure not finished a day after it was asked is taken to have died (the worker retries an
# invocation twice, then reports it on the operations topic): another may be asked.
RUNNING_SECONDS = 86_400


@dataclass(frozen=True)
class ErasureRecord:
    erasure_id: str
    owner: str
    codes: list[str]
    requested_at: datetime
    finished_at: datetime | None
    objects_checked: int
    objects_rewritten: int
    events_erased: int


class ErasureRecords(aws.DynamoDBTable):
    """Each owner's erasures and their progress."""

    def put(self, owner: str, erasure: str, codes: Sequence[str], requested_at: datetime) -> None:
        expires = requested_at + timedelta(days=ERASURE_DAYS)
        # First: a compaction that began before then keeps the objects it read.
        self.client.update_item(
            TableName=self.table_name,
            Key=ACTIVITY_KEY,
            UpdateExpression="ADD asked :one, running :erasure",
            ExpressionAttributeValues={":one": {"N": "1"}, ":erasure": {"SS": [f"{owner}/{erasure}"]}},
        )
        # UpdateItem, which the API function may use on the table (not PutItem).
        self.client.update_item(
            TableName=self.table_name,
            Key=self._key(owner, erasure),
            UpdateExpression=(
                "SET codes = :codes, requested_at = :at, objects_checked = :zero, "
                "objects_rewritten = :zero, events_erased = :zero, expires_at = :expires"
            ),
            ConditionExpression="attribute_not_exists(pk)",
            ExpressionAttributeValues={
                ":codes": {"L": [{"S": code} for code in codes]},
                ":at": {"N": str(int(requested_at.timestamp()))},
                ":zero": {"N": "0"},
                ":expires": {"N": str(int(expires.timestamp()))},
            },
        )

    def get(self, owner: str, erasure: str) -> ErasureRecord | None:
        item = self.client.get_item(
            TableName=self.table_name, Key=self._key(owner, erasure), ConsistentRead=True
        ).get("Item")
        if not item or "requested_at" not in item:
            return None
        finished = item.get("finished_at", {}).get("N")
        return ErasureRecord(
            erasure_id=erasure,
            owner=owner,
            codes=[value["S"] for value in item.get("codes", {}).get("L", [])],
            requested_at=datetime.fromtimestamp(int(item["requested_at"]["N"]), UTC),
            finished_at=datetime.fromtimestamp(int(finished), UTC) if finished else None,
            objects_checked=int(item["objects_checked"]["N"]),
            objects_rewritten=int(item["objects_rewritten"]["N"]),
            events_erased=int(item["events_erased"]["N"]),
        )

    def running(self, owner: str) -> list[str]:
        """The ids of the owner's erasures asked within a day and not finished."""
        found: list[str] = []
        pages = self.client.get_paginator("query").paginate(
            TableName=self.table_name,
            KeyConditionExpression="pk = :pk",
            FilterExpression="attribute_not_exists(finished_at) AND requested_at > :since",
            ExpressionAttributeValues={
                ":pk": {"S": ERASURE_PK + owner},
                ":since": {"N": str(int(clock.epoch_seconds()) - RUNNING_SECONDS)},
            },
            ProjectionExpression="sk",
            ConsistentRead=True,
        )
        for page in pages:
            found += [item["sk"]["S"] for item in page.get("Items", [])]
        return found

    def progress(self, owner: str, erasure: str, *, checked: int, rewritten: int, erased: int) -> None:
        """Add an invocation's work to the erasure's counts."""
        self.client.update_item(
            TableName=self.table_name,
            Key=self._key(owner, erasure),
            UpdateExpression="ADD objects_checked :c, objects_rewritten :r, events_erased :e",
            ExpressionAttributeValues={
                ":c": {"N": str(checked)},
                ":r": {"N": str(rewritten)},
                ":e": {"N": str(erased)},
            },
        )

    def finish(self, owner: str, erasure: str, finished_at: datetime) -> None:
        self.client.update_item(
            TableName=self.table_name,
            Key=self._key(owner, erasure),
            UpdateExpression="SET finished_at = if_not_exists(finished_at, :at)",
            ExpressionAttributeValues={":at": {"N": str(int(finished_at.timestamp()))}},
        )
        self.client.update_item(
            TableName=self.table_name,
            Key=ACTIVITY_KEY,
            UpdateExpression="DELETE running :erasure",
            ExpressionAttributeValues={":erasure": {"SS": [f"{owner}/{erasure}"]}},
        )

    def activity(self) -> ErasureActivity:
        """How many erasures were asked, and whether one is under way (asked within a day and not
        finished: one that died is not waited for)."""
        item = self.client.get_item(TableName=self.table_name, Key=ACTIVITY_KEY, ConsistentRead=True).get(
            "Item", {}
        )
        running = False
        for entry in item.get("running", {}).get("SS", []):
            owner, _, erasure = entry.rpartition("/")
            record = self.get(owner, erasure)
            alive = clock.now() - timedelta(seconds=RUNNING_SECONDS)
            if record is not None and record.finished_at is None and record.requested_at > alive:
                running = True
                break
        return ErasureActivity(asked=int(item.get("asked", {}).get("N", "0")), running=running)

    @staticmethod
    def _key(owner: str, erasure: str) -> dict[str, dict[str, str]]:
        return {"pk": {"S": ERASURE_PK + owner}, "sk": {"S": erasure}}
