"""The audit table (data access): one item per change, partitioned by UTC day (``pk`` =
``day#<YYYY-MM-DD>``, ``sk`` = ``<ISO time>#<id>``), expiring AuditRetentionDays after it was
written (the table's TTL). Entries are only ever put, never changed: no route updates or deletes
them, and the API function may only PutItem and Query the table (template.yaml)."""

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from shortener import aws
from shortener.audit.model import AuditEntry

DAY_PREFIX = "day#"


@dataclass(frozen=True)
class AuditSelection:
    """Which entries a page reads: within [begin, end], optionally one actor, target or action,
    older than ``before`` (a position: an entry's sort key)."""

    begin: datetime
    end: datetime
    actor: str | None = None
    target: str | None = None
    action: str | None = None
    before: str | None = None


def position_of(entry_time: datetime, entry_id: str) -> str:
    return f"{entry_time.astimezone(UTC).isoformat(timespec='microseconds')}#{entry_id}"


class AuditStore(aws.DynamoDBTable):
    """Data access for the audit table."""

    def put(self, entry: AuditEntry, expires_at: datetime) -> None:
        moment = entry.time.astimezone(UTC)
        item: dict[str, Any] = {
            "pk": {"S": DAY_PREFIX + moment.date().isoformat()},
            "sk": {"S": position_of(moment, uuid.uuid4().hex[:12])},
            "actor": {"S": entry.actor},
            "action": {"S": entry.action},
            "target": {"S": entry.target},
            "expires_at": {"N": str(int(expires_at.timestamp()))},
        }
        for name in ("before", "after"):
            value = getattr(entry, name)
            if value is not None:
                item[name] = {"S": json.dumps(value, default=str, separators=(",", ":"))}
        if entry.source_ip:
            item["source_ip"] = {"S": entry.source_ip}
        self.client.put_item(
            TableName=self.table_name, Item=item, ConditionExpression="attribute_not_exists(pk)"
        )

    def page(self, selection: AuditSelection, limit: int) -> tuple[list[AuditEntry], str | None]:
        """Up to ``limit`` entries newest first, and the position of the last when there may be
        more."""
        found: list[tuple[str, AuditEntry]] = []
        for position, entry in self._entries(selection):
            found.append((position, entry))
            if len(found) == limit:
                return [entry for _, entry in found], position
        return [entry for _, entry in found], None

    def _entries(self, selection: AuditSelection) -> Iterator[tuple[str, AuditEntry]]:
        low = position_of(selection.begin, "")
        high = selection.before or position_of(selection.end, "~")
        # A cursor names where the last page ended; never a day after the range.
        day = min(_day_of(high), selection.end.astimezone(UTC).date())
        first: date = selection.begin.astimezone(UTC).date()
        filters, names, values = [], {}, {}
        for field, value in (
            ("actor", selection.actor),
            ("target", selection.target),
            ("action", selection.action),
        ):
            if value is not None:
                filters.append(f"#{field} = :{field}")
                names[f"#{field}"] = field
                values[f":{field}"] = {"S": value}
        while day >= first:
            asked: dict[str, Any] = {
                "TableName": self.table_name,
                "KeyConditionExpression": "pk = :day AND sk BETWEEN :low AND :high",
                "ExpressionAttributeValues": {
                    ":day": {"S": DAY_PREFIX + day.isoformat()},
                    ":low": {"S": low},
                    ":high": {"S": high},
                    **values,
                },
                "ScanIndexForward": False,
            }
            if filters:
                asked["FilterExpression"] = " AND ".join(filters)
                asked["ExpressionAttributeNames"] = names
            for page in self.client.get_paginator("query").paginate(**asked):
                for item in page.get("Items", []):
                    if item["sk"]["S"] != selection.before:
                        yield item["sk"]["S"], _entry(item)
            day -= timedelta(days=1)


def _day_of(position: str) -> date:
    return datetime.fromisoformat(position.split("#", 1)[0]).astimezone(UTC).date()


def _entry(item: dict[str, Any]) -> AuditEntry:
    def document(name: str) -> dict[str, Any] | None:
        text = item.get(name, {}).get("S")
        return json.loads(text) if text else None

    return AuditEntry(
        time=datetime.fromisoformat(item["sk"]["S"].split("#", 1)[0]),
        actor=item["actor"]["S"],
        action=item["action"]["S"],
        target=item["target"]["S"],
        before=document("before"),
        after=document("after"),
        source_ip=item.get("source_ip", {}).get("S"),
    )
