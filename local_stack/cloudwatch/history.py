"""CloudWatch alarm history on the embedded AWS: moto 5 keeps alarms but has no
DescribeAlarmHistory, so the local stack records the items its alarm evaluator produces (state
updates, executed and failed actions) and serves them through that operation, added to moto's
CloudWatch responses. `cloudwatch.describe_alarm_history(AlarmName=...)` then reads them as on AWS
(CloudWatch API reference, "DescribeAlarmHistory" and "AlarmHistoryItem").

History lives in memory: it does not survive a restart of the stack."""

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from moto.cloudwatch.responses import CloudWatchResponse
from moto.core.responses import ActionResult

STATE_UPDATE, ACTION, CONFIGURATION_UPDATE = "StateUpdate", "Action", "ConfigurationUpdate"


@dataclass(frozen=True)
class HistoryItem:
    """One AlarmHistoryItem."""

    alarm_name: str
    timestamp: datetime
    item_type: str
    summary: str
    data: Mapping[str, Any]

    def to_api(self) -> dict[str, Any]:
        return {
            "AlarmName": self.alarm_name,
            "AlarmType": "MetricAlarm",
            "Timestamp": self.timestamp,
            "HistoryItemType": self.item_type,
            "HistorySummary": self.summary,
            "HistoryData": json.dumps(self.data),
        }


class AlarmHistory:
    """Every alarm's history items, per region."""

    def __init__(self) -> None:
        self._items: dict[str, list[HistoryItem]] = {}
        self._lock = threading.Lock()

    def record(self, region: str, item: HistoryItem) -> None:
        with self._lock:
            self._items.setdefault(region, []).append(item)

    def items(
        self,
        region: str,
        *,
        alarm_name: str | None = None,
        item_type: str | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        oldest_first: bool = False,
    ) -> list[HistoryItem]:
        """The items that match, newest first unless ``oldest_first`` (DescribeAlarmHistory's ScanBy)."""
        with self._lock:
            found = [
                item
                for item in self._items.get(region, [])
                if (alarm_name is None or item.alarm_name == alarm_name)
                and (item_type is None or item.item_type == item_type)
                and (start is None or item.timestamp >= start)
                and (end is None or item.timestamp <= end)
            ]
        return sorted(found, key=lambda item: item.timestamp, reverse=not oldest_first)


# The embedded AWS runs in the local stack's own process, so the evaluator and moto share this.
HISTORY = AlarmHistory()
_MAX_RECORDS = 100


def _describe_alarm_history(self: CloudWatchResponse) -> ActionResult:
    """DescribeAlarmHistory over HISTORY (pagination by a numeric NextToken)."""
    items = HISTORY.items(
        self.region,
        alarm_name=self._get_param("AlarmName"),
        item_type=self._get_param("HistoryItemType"),
        start=_as_datetime(self._get_param("StartDate")),
        end=_as_datetime(self._get_param("EndDate")),
        oldest_first=self._get_param("ScanBy") == "TimestampAscending",
    )
    limit = int(self._get_param("MaxRecords") or _MAX_RECORDS)
    start = int(self._get_param("NextToken") or 0)
    page = items[start : start + limit]
    result: dict[str, Any] = {"AlarmHistoryItems": [item.to_api() for item in page]}
    if start + limit < len(items):
        result["NextToken"] = str(start + limit)
    return ActionResult(result)


def _as_datetime(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def install() -> None:
    """Add DescribeAlarmHistory to moto's CloudWatch (once)."""
    if not hasattr(CloudWatchResponse, "describe_alarm_history"):
        CloudWatchResponse.describe_alarm_history = _describe_alarm_history  # type: ignore[attr-defined]
