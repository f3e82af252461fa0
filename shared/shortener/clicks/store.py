"""The clicks table: hourly counters per link, link totals, and the markers of counted batches
(template.yaml, ClicksTable). Each batch's counter updates are written in transactions that also
put the batch's marker only if it is absent, so a batch delivered twice is counted once."""

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from shortener import aws, clock
from shortener.clicks.model import DIMENSIONS, HourCounts, LinkTotals, OwnerDay, ReportState, StoredHour
from shortener.exceptions import StorageThrottledError

TOTAL_SK = "total"
HOUR_SK_PREFIX = "h#"
BATCH_PK_PREFIX = "#batch#"
REPORT_PK_PREFIX = "#report#"
OWNER_PK_PREFIX = "#owner#"
# A marker outlives any redelivery: CloudWatch Logs retries a failed delivery for up to 24 hours.
MARKER_DAYS = 2
# Updates per transaction, the marker not included (DynamoDB allows 100 items per transaction).
UPDATES_PER_TRANSACTION = 98
_TRANSACTION_ATTEMPTS = 8
_BATCH_GET_LIMIT = 100
# A totals item's counter of a link's answers by one rule (as its hour items name them).
_DESTINATION_PREFIX = "destination#"
_MAX_UNPROCESSED_ROUNDS = 10
_RETRYABLE = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"})


def hour_key(counts: HourCounts) -> str:
    return HOUR_SK_PREFIX + counts.hour.strftime("%Y-%m-%dT%H")


class ClicksStore(aws.DynamoDBTable):
    """Data access for the clicks table."""

    def __init__(
        self, table_name: str, retention_days: int = 400, client: Any = None, *, counters: bool = True
    ) -> None:
        super().__init__(table_name, client)
        self.retention_days = retention_days
        # False: no counters are kept (KeepClickCounters), only each batch's marker.
        self.counters = counters

    def add(
        self, batch_key: str, hours: Sequence[HourCounts], owner_days: Sequence[OwnerDay] = ()
    ) -> int | None:
        """Add the hours' counts (and each link's totals) unless this batch was counted before: the
        items written, None when every part of it had been. A large batch is written in parts, each
        with its own marker, so a delivery that failed half-way counts the rest when redelivered.
        Where no counters are kept, only the marker is written (one write a batch, not a transaction:
        a batch delivered twice still spends click limits once)."""
        if not self.counters:
            return 0 if self._mark(batch_key) else None
        updates = [self._hour_update(counts) for counts in hours] + self._total_updates(hours)
        updates += [self._owner_day_update(day) for day in owner_days]
        written, counted_before = 0, 0
        size = UPDATES_PER_TRANSACTION
        parts = [updates[start : start + size] for start in range(0, len(updates), size)]
        for number, part in enumerate(parts):
            if self._transact([self._marker(batch_key, number), *part]):
                written += len(part)
            else:
                counted_before += 1
        return None if parts and counted_before == len(parts) else written

    def hours(self, code: str, begin: datetime, end: datetime) -> list[StoredHour]:
        """The stored hours of link ``code`` from the hour of ``begin`` to that of ``end``."""
        found: list[StoredHour] = []
        paginator = self.client.get_paginator("query")
        pages = paginator.paginate(
            TableName=self.table_name,
            KeyConditionExpression="pk = :code AND sk BETWEEN :first AND :last",
            ExpressionAttributeValues={
                ":code": {"S": code},
                ":first": {"S": HOUR_SK_PREFIX + begin.strftime("%Y-%m-%dT%H")},
                ":last": {"S": HOUR_SK_PREFIX + end.strftime("%Y-%m-%dT%H")},
            },
        )
        for page in pages:
            found += [_stored_hour(item) for item in page.get("Items", [])]
        return found

    def totals(self, codes: Sequence[str]) -> dict[str, LinkTotals]:
        """The totals of the links that have any (BatchGetItem, 100 keys a request)."""
        found: dict[str, LinkTotals] = {}
        unique = sorted(set(codes))
        for start in range(0, len(unique), _BATCH_GET_LIMIT):
            keys: list[Any] = [
                {"pk": {"S": code}, "sk": {"S": TOTAL_SK}}
                for code in unique[start : start + _BATCH_GET_LIMIT]
            ]
            for _ in range(_MAX_UNPROCESSED_ROUNDS):
                response = self.client.batch_get_item(RequestItems={self.table_name: {"Keys": keys}})
                for item in response.get("Responses", {}).get(self.table_name, []):
                    found[item["pk"]["S"]] = _totals(item)
                keys = list(response.get("UnprocessedKeys", {}).get(self.table_name, {}).get("Keys", []))
                if not keys:
                    break
                self.sleep(0.05)
        return found

    def report_state(self, job_id: str) -> ReportState | None:
        """When a job's click report was last asked for and last built."""
        item = self.client.get_item(
            TableName=self.table_name, Key=_report_key(job_id), ConsistentRead=True
        ).get("Item")
        if item is None:
            return None

        def moment(name: str) -> datetime | None:
            number = item.get(name, {}).get("N")
            return datetime.fromtimestamp(int(number), UTC) if number is not None else None

        return ReportState(requested_at=moment("requested_at"), built_at=moment("built_at"))

    def request_report(self, job_id: str, now: datetime, under_way: timedelta) -> bool:
        """Record that a build of the job's report is asked for, unless one was asked for less than
        ``under_way`` ago (then False: two callers never start two builds)."""
        stamp = int(now.timestamp())
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=_report_key(job_id),
                UpdateExpression="SET requested_at = :now, expires_at = :expires",
                ConditionExpression="attribute_not_exists(requested_at) OR requested_at < :stale",
                ExpressionAttributeValues={
                    ":now": {"N": str(stamp)},
                    ":stale": {"N": str(stamp - int(under_way.total_seconds()))},
                    ":expires": {"N": str(stamp + int(timedelta(days=MARKER_DAYS).total_seconds()))},
                },
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def record_report(self, job_id: str, built_at: datetime) -> None:
        """Record that the job's report file was written at ``built_at``."""
        self.client.update_item(
            TableName=self.table_name,
            Key=_report_key(job_id),
            UpdateExpression="SET built_at = :built, expires_at = :expires",
            ExpressionAttributeValues={
                ":built": {"N": str(int(built_at.timestamp()))},
                ":expires": {
                    "N": str(int(built_at.timestamp()) + int(timedelta(days=MARKER_DAYS).total_seconds()))
                },
            },
        )

    def _mark(self, batch_key: str) -> bool:
        """Put the batch's marker if absent: True when it was (the batch's first delivery)."""
        try:
            self.client.put_item(**self._marker(batch_key, 0)["Put"])
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def _marker(self, batch_key: str, part: int) -> dict[str, Any]:
        expires = clock.epoch_seconds() + int(timedelta(days=MARKER_DAYS).total_seconds())
        return {
            "Put": {
                "TableName": self.table_name,
                "Item": {
                    "pk": {"S": f"{BATCH_PK_PREFIX}{batch_key}#{part}"},
                    "sk": {"S": "batch"},
                    "expires_at": {"N": str(expires)},
                },
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }

    def _hour_update(self, counts: HourCounts) -> dict[str, Any]:
        names = {"#c": "clicks", "#h": "humans", "#b": "bots", "#e": "expires_at", "#hr": "hour"}
        values: dict[str, Any] = {
            ":c": {"N": str(counts.clicks)},
            ":h": {"N": str(counts.humans)},
            ":b": {"N": str(counts.bots)},
            ":e": {"N": str(self._expiry(counts))},
            ":hr": {"S": counts.hour.strftime("%Y-%m-%dT%H:00:00Z")},
        }
        additions = ["#c :c", "#h :h", "#b :b"]
        index = 0
        for dimension in DIMENSIONS:
            for value, number in sorted(counts.values.get(dimension, {}).items()):
                names[f"#d{index}"] = f"{dimension}#{value}"
                values[f":d{index}"] = {"N": str(number)}
                additions.append(f"#d{index} :d{index}")
                index += 1
        return {
            "Update": {
                "TableName": self.table_name,
                "Key": {"pk": {"S": counts.code}, "sk": {"S": hour_key(counts)}},
                "UpdateExpression": f"ADD {', '.join(additions)} SET #e = :e, #hr = :hr",
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }

    def _total_updates(self, hours: Sequence[HourCounts]) -> list[dict[str, Any]]:
        totals: dict[str, tuple[int, int, int, int, int]] = {}
        answers: dict[str, dict[str, int]] = {}
        for counts in hours:
            for rule, number in counts.values.get("destination", {}).items():
                by_rule = answers.setdefault(counts.code, {})
                by_rule[rule] = by_rule.get(rule, 0) + number
            # Hours of answers alone (destinations) hold no click: the totals and their times stay.
            if not counts.clicks:
                continue
            clicks, humans, bots, first, last = totals.get(counts.code, (0, 0, 0, counts.first_ms, 0))
            totals[counts.code] = (
                clicks + counts.clicks,
                humans + counts.humans,
                bots + counts.bots,
                min(first, counts.first_ms),
                max(last, counts.last_ms),
            )
        return [
            self._total_update(code, totals.get(code), answers.get(code, {}))
            for code in sorted(totals.keys() | answers.keys())
        ]

    def _total_update(
        self, code: str, clicks: tuple[int, int, int, int, int] | None, answers: dict[str, int]
    ) -> dict[str, Any]:
        """The link's totals item: its clicks (when the batch had any) and its answers by rule
        (``destination#<rule>`` counters, read by the job's click report per row)."""
        additions, settings = [], []
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        if clicks is not None:
            number, humans, bots, first, last = clicks
            additions += ["clicks :c", "humans :h", "bots :b"]
            # The last click is the latest batch's: a batch redelivered late may set it to an
            # earlier time, by at most the delay of that redelivery.
            settings += ["first_click = if_not_exists(first_click, :f)", "last_click = :l"]
            values |= {
                ":c": {"N": str(number)},
                ":h": {"N": str(humans)},
                ":b": {"N": str(bots)},
                ":f": {"N": str(first)},
                ":l": {"N": str(last)},
            }
        for index, (rule, number) in enumerate(sorted(answers.items())):
            names[f"#d{index}"] = _DESTINATION_PREFIX + rule
            values[f":d{index}"] = {"N": str(number)}
            additions.append(f"#d{index} :d{index}")
        expression = f"ADD {', '.join(additions)}" + (f" SET {', '.join(settings)}" if settings else "")
        update: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": {"pk": {"S": code}, "sk": {"S": TOTAL_SK}},
            "UpdateExpression": expression,
            "ExpressionAttributeValues": values,
        }
        if names:
            update["ExpressionAttributeNames"] = names
        return {"Update": update}

    def _owner_day_update(self, day: OwnerDay) -> dict[str, Any]:
        expires = datetime.combine(day.day, datetime.min.time(), UTC) + timedelta(
            days=1 + self.retention_days
        )
        return {
            "Update": {
                "TableName": self.table_name,
                "Key": {"pk": {"S": owner_day_pk(day.owner, day.day)}, "sk": {"S": day.code}},
                "UpdateExpression": "ADD clicks :c, humans :h SET expires_at = :e",
                "ExpressionAttributeValues": {
                    ":c": {"N": str(day.clicks)},
                    ":h": {"N": str(day.humans)},
                    ":e": {"N": str(int(expires.timestamp()))},
                },
            }
        }

    def owner_links(self, owner: str, days: Sequence[date]) -> dict[str, tuple[int, int]]:
        """code -> (clicks, humans) of the owner's links clicked on ``days`` (a Query per day)."""
        found: dict[str, tuple[int, int]] = {}
        paginator = self.client.get_paginator("query")
        for day in days:
            pages = paginator.paginate(
                TableName=self.table_name,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": owner_day_pk(owner, day)}},
            )
            for page in pages:
                for item in page.get("Items", []):
                    clicks, humans = found.get(item["sk"]["S"], (0, 0))
                    found[item["sk"]["S"]] = (
                        clicks + int(item.get("clicks", {}).get("N", 0)),
                        humans + int(item.get("humans", {}).get("N", 0)),
                    )
        return found

    def _expiry(self, counts: HourCounts) -> int:
        return int((counts.hour + timedelta(hours=1, days=self.retention_days)).timestamp())

    def _transact(self, items: list[dict[str, Any]]) -> bool:
        """True when written, False when the marker was there (the part was counted before).
        Conflicts with another transaction and throttling are retried with backoff."""
        delays = aws.backoff_delays(_TRANSACTION_ATTEMPTS, base=0.05, cap=2.0)
        while True:
            try:
                self.client.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
                return True
            except ClientError as exc:
                if aws.error_code(exc) == "TransactionCanceledException":
                    reasons = exc.response.get("CancellationReasons", [])  # type: ignore[typeddict-item]
                    codes = [reason.get("Code") for reason in reasons]
                    if codes and codes[0] == "ConditionalCheckFailed":
                        return False
                    if not set(codes) & _RETRYABLE:
                        raise
                elif not aws.is_throttling(exc):
                    raise
                delay = next(delays, None)
                if delay is None:
                    raise StorageThrottledError(aws.THROTTLED_MESSAGE) from exc
                self.sleep(delay)


def _stored_hour(item: dict[str, Any]) -> StoredHour:
    values: dict[str, dict[str, int]] = {}
    for name, value in item.items():
        dimension, separator, what = name.partition("#")
        if separator and dimension in DIMENSIONS and "N" in value:
            values.setdefault(dimension, {})[what] = int(value["N"])
    return StoredHour(
        code=item["pk"]["S"],
        hour=datetime.strptime(item["sk"]["S"].removeprefix(HOUR_SK_PREFIX), "%Y-%m-%dT%H").replace(
            tzinfo=UTC
        ),
        clicks=int(item.get("clicks", {}).get("N", 0)),
        humans=int(item.get("humans", {}).get("N", 0)),
        bots=int(item.get("bots", {}).get("N", 0)),
        values=values,
    )


def _totals(item: dict[str, Any]) -> LinkTotals:
    def moment(name: str) -> datetime | None:
        number = item.get(name, {}).get("N")
        return datetime.fromtimestamp(int(number) / 1000, UTC) if number is not None else None

    return LinkTotals(
        clicks=int(item.get("clicks", {}).get("N", 0)),
        humans=int(item.get("humans", {}).get("N", 0)),
        bots=int(item.get("bots", {}).get("N", 0)),
        first_click=moment("first_click"),
        last_click=moment("last_click"),
        destinations={
            name.removeprefix(_DESTINATION_PREFIX): int(value["N"])
            for name, value in item.items()
            if name.startswith(_DESTINATION_PREFIX)
        },
    )


def _report_key(job_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"{REPORT_PK_PREFIX}{job_id}"}, "sk": {"S": "report"}}


def owner_day_pk(owner: str, day: date) -> str:
    return f"{OWNER_PK_PREFIX}{owner}#{day.isoformat()}"
