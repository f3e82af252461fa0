"""DynamoDB's on-demand capacity, as AWS documents it, for the embedded AWS (a pure model: the
clock is passed in; ``dynamodb_throttling`` applies it to requests).

What it follows (figures per second, each divided by ``--dynamodb-capacity scale=F``):

- A new on-demand table, and each of its global secondary indexes, serves up to 4,000 write and
  12,000 read request units at once, and "instantly accommodates up to double the previous peak";
  throttling "can still occur if the throughput exceeds twice the previous peak within the same 30
  minutes" (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html,
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/pre-warming-on-demand-capacity-mode.html).
  Here a new peak raises the ceiling (twice that peak) 30 minutes after it was reached.
- ``WarmThroughput`` is what a table or index "can instantaneously support"; raising it pre-warms it
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput.html): it is the
  starting ceiling when above the on-demand default.
- ``OnDemandThroughput`` (MaxReadRequestUnits, MaxWriteRequestUnits) caps a table or index; beyond
  it requests are throttled with ThrottlingException, reason ``...MaxOnDemandThroughputExceeded``
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode-max-throughput.html).
- The per-table quota of 40,000 read and 40,000 write units caps every on-demand table
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html).
- A partition serves up to 1,000 write or 3,000 read units; AWS does not say how keys map to
  partitions, so here each partition key value is held to that on its own (a hot key, such as the
  id counter or one owner's index shard, is throttled with reason ``...KeyRangeThroughputExceeded``)
  (https://repost.aws/knowledge-center/on-demand-table-throttling-dynamodb).
- A write to a table also writes each index whose keys the item carries; when an index cannot take
  it, the table's write is throttled (back-pressure), the reason naming the index
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/gsi-throttling.html).
- One write unit is a write of up to 1 KB (the larger of the item before and after), one read unit
  a strongly consistent read of up to 4 KB, half of it eventually consistent; transactions cost twice
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).

Units are granted from a bucket per table, per index and per partition key, refilled at the
allowed rate and holding at most one second of it: AWS documents no on-demand burst beyond that."""

import math
from dataclasses import dataclass, field
from typing import Any, Literal

ON_DEMAND_WRITE_UNITS = 4_000.0
ON_DEMAND_READ_UNITS = 12_000.0
PARTITION_WRITE_UNITS = 1_000.0
PARTITION_READ_UNITS = 3_000.0
TABLE_QUOTA_UNITS = 40_000.0
PEAK_SETTLES_SECONDS = 30 * 60.0
WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
# Per-key buckets idle this long are full again and forgotten (a million codes written once each
# must not stay in memory).
_KEY_IDLE_SECONDS = 2.0
_PRUNE_EVERY = 4096

Direction = Literal["Read", "Write"]
LimitType = Literal["KeyRangeThroughputExceeded", "MaxOnDemandThroughputExceeded", "AccountLimitExceeded"]


class CapacityOptionError(ValueError):
    """A --dynamodb-capacity value that does not parse."""


@dataclass(frozen=True)
class CapacitySettings:
    """``--dynamodb-capacity``: ``off``, ``on`` (AWS's figures) or ``scale=F`` (each divided by F)."""

    enabled: bool = True
    scale: float = 1.0

    @classmethod
    def parse(cls, text: str) -> "CapacitySettings":
        if text == "off":
            return cls(enabled=False)
        if text == "on":
            return cls()
        name, separator, value = text.partition("=")
        if name == "scale" and separator:
            try:
                scale = float(value)
            except ValueError:
                raise CapacityOptionError(f"--dynamodb-capacity {text}: {value!r} is not a number") from None
            if not math.isfinite(scale) or scale < 1:
                raise CapacityOptionError(f"--dynamodb-capacity {text}: the scale must be at least 1")
            return cls(scale=scale)
        raise CapacityOptionError(f"--dynamodb-capacity {text}: expected off, on or scale=<F>")

    def __str__(self) -> str:
        return "off" if not self.enabled else f"scale={self.scale:g}"


@dataclass(frozen=True)
class ThroughputSpec:
    """A table's or index's capacity settings from its template properties."""

    warm_write: float = ON_DEMAND_WRITE_UNITS
    warm_read: float = ON_DEMAND_READ_UNITS
    max_write: float | None = None
    max_read: float | None = None

    @classmethod
    def from_properties(cls, properties: dict[str, Any]) -> "ThroughputSpec":
        """From ``WarmThroughput`` and ``OnDemandThroughput`` (of a table or of one of its
        ``GlobalSecondaryIndexes``); -1 or absent means no maximum, as in the API."""
        warm = properties.get("WarmThroughput") or {}
        on_demand = properties.get("OnDemandThroughput") or {}

        def maximum(name: str) -> float | None:
            value = on_demand.get(name)
            return None if value in (None, -1, "-1") else float(value)

        return cls(
            warm_write=max(ON_DEMAND_WRITE_UNITS, float(warm.get("WriteUnitsPerSecond") or 0)),
            warm_read=max(ON_DEMAND_READ_UNITS, float(warm.get("ReadUnitsPerSecond") or 0)),
            max_write=maximum("MaxWriteRequestUnits"),
            max_read=maximum("MaxReadRequestUnits"),
        )


@dataclass
class _Bucket:
    tokens: float
    at: float

    def refill(self, rate: float, now: float) -> None:
        self.tokens = min(rate, self.tokens + max(0.0, now - self.at) * rate)
        self.at = now


class Throughput:
    """One direction (read or write) of one table or index: its ceiling, its bucket, its keys'."""

    def __init__(
        self,
        warm: float,
        maximum: float | None,
        per_key: float,
        *,
        scale: float = 1.0,
        settle_seconds: float = PEAK_SETTLES_SECONDS,
        now: float = 0.0,
    ) -> None:
        self.warm = warm / scale
        self.maximum = None if maximum is None else maximum / scale
        self.quota = TABLE_QUOTA_UNITS / scale
        self.per_key = per_key / scale
        self._settle = settle_seconds
        # (moment, peak) for each new peak of units consumed in one second, in rising order.
        self._peaks: list[tuple[float, float]] = []
        self._second = math.floor(now)
        self._in_second = 0.0
        self._bucket = _Bucket(self.rate(now), now)
        self._keys: dict[str, _Bucket] = {}
        self._since_prune = 0
        self.consumed = 0.0

    def rate(self, now: float) -> float:
        """Units a second allowed now: the warm throughput or twice a settled peak, within the caps."""
        settled = max((peak for moment, peak in self._peaks if moment <= now - self._settle), default=0.0)
        return min(max(self.warm, 2 * settled), self._cap())

    def _cap(self) -> float:
        return self.quota if self.maximum is None else min(self.maximum, self.quota)

    def limit_reached(self, now: float) -> LimitType:
        """Which limit a throttle here is (the reason's last part)."""
        rate = self.rate(now)
        if self.maximum is not None and rate >= self.maximum:
            return "MaxOnDemandThroughputExceeded"
        if rate >= self.quota:
            return "AccountLimitExceeded"
        return "KeyRangeThroughputExceeded"

    def shortfall(self, units: float, now: float) -> LimitType | None:
        """None if ``units`` can be granted now (nothing is taken), else the limit reached."""
        rate = self.rate(now)
        self._bucket.refill(rate, now)
        # A request bigger than a whole second's worth goes through a full bucket (into debt),
        # or it could never be served.
        if self._bucket.tokens < min(units, rate):
            return self.limit_reached(now)
        return None

    def key_shortfall(self, key: str, units: float, now: float) -> LimitType | None:
        """None if ``units`` for the partition key ``key`` can be granted now."""
        if self._key_bucket(key, now).tokens < min(units, self.per_key):
            return "KeyRangeThroughputExceeded"
        return None

    def take(self, units: float, key: str | None, now: float) -> None:
        """Consume ``units`` (granted, or charged after the fact: the bucket may go below zero)."""
        self._bucket.refill(self.rate(now), now)
        self._bucket.tokens -= units
        if key is not None:
            self._key_bucket(key, now).tokens -= units
        self.consumed += units
        second = math.floor(now)
        if second != self._second:
            self._close_second()
            self._second, self._in_second = second, 0.0
        self._in_second += units

    def _close_second(self) -> None:
        if self._in_second > (self._peaks[-1][1] if self._peaks else 0.0):
            self._peaks.append((self._second + 1.0, self._in_second))

    def _key_bucket(self, key: str, now: float) -> _Bucket:
        self._since_prune += 1
        if self._since_prune >= _PRUNE_EVERY:
            self._since_prune = 0
            self._keys = {k: b for k, b in self._keys.items() if now - b.at < _KEY_IDLE_SECONDS}
        bucket = self._keys.get(key)
        if bucket is None:
            bucket = self._keys[key] = _Bucket(self.per_key, now)
        else:
            bucket.refill(self.per_key, now)
        return bucket


@dataclass
class ResourceCapacity:
    """A table or one of its indexes: read and write throughput, and what they refused."""

    kind: Literal["Table", "Index"]
    arn: str
    write: Throughput
    read: Throughput

    @classmethod
    def of(
        cls,
        kind: Literal["Table", "Index"],
        arn: str,
        spec: ThroughputSpec,
        settings: CapacitySettings,
        *,
        settle_seconds: float = PEAK_SETTLES_SECONDS,
        now: float = 0.0,
    ) -> "ResourceCapacity":
        scale = settings.scale
        return cls(
            kind,
            arn,
            Throughput(
                spec.warm_write,
                spec.max_write,
                PARTITION_WRITE_UNITS,
                scale=scale,
                settle_seconds=settle_seconds,
                now=now,
            ),
            Throughput(
                spec.warm_read,
                spec.max_read,
                PARTITION_READ_UNITS,
                scale=scale,
                settle_seconds=settle_seconds,
                now=now,
            ),
        )

    def direction(self, direction: Direction) -> Throughput:
        return self.write if direction == "Write" else self.read


@dataclass(frozen=True)
class Charge:
    """Units one item's operation costs one table or index, and the partition key it goes to."""

    resource: ResourceCapacity
    direction: Direction
    units: float
    key: str | None


@dataclass(frozen=True)
class Throttle:
    """Why a request (or an item of a batch) was refused: the ThrottlingReason AWS sends."""

    reason: str  # e.g. "IndexWriteKeyRangeThroughputExceeded"
    resource: str  # the ARN of the table or index

    @property
    def exception(self) -> str:
        """The error AWS answers: ThrottlingException for a configured maximum, else
        ProvisionedThroughputExceededException (both are retried by the SDKs)."""
        if self.reason.endswith("MaxOnDemandThroughputExceeded"):
            return "ThrottlingException"
        return "ProvisionedThroughputExceededException"


def admit(charges: list[Charge], now: float) -> Throttle | None:
    """Grant every charge, or none of them (the first refusal says why). Charges to the same table,
    index or key count together."""
    totals: dict[tuple[int, str | None], list[Any]] = {}
    for charge in charges:
        throughput = charge.resource.direction(charge.direction)
        for key in (None, charge.key) if charge.key is not None else (None,):
            slot = totals.setdefault((id(throughput), key), [charge, throughput, 0.0])
            slot[2] += charge.units
    for (_, key), (charge, throughput, units) in totals.items():
        limit = throughput.shortfall(units, now) if key is None else throughput.key_shortfall(key, units, now)
        if limit is not None:
            resource = charge.resource
            return Throttle(f"{resource.kind}{charge.direction}{limit}", resource.arn)
    for charge in charges:
        charge.resource.direction(charge.direction).take(charge.units, charge.key, now)
    return None


def write_units(size_bytes: int) -> int:
    """Write units of an item of ``size_bytes`` (at least one)."""
    return max(1, math.ceil(size_bytes / WRITE_UNIT_BYTES))


def read_units(size_bytes: int, consistent: bool) -> float:
    """Read units of ``size_bytes`` read (at least one 4 KB step; half when eventually consistent)."""
    units = max(1, math.ceil(size_bytes / READ_UNIT_BYTES))
    return units if consistent else units / 2


@dataclass
class TableStats:
    """What a table consumed and refused, for benchmarks (``GET /_local/dynamodb-capacity``)."""

    write_requests: int = 0
    throttled_write_requests: int = 0  # refused, or a batch with items handed back
    read_requests: int = 0
    throttled_read_requests: int = 0
    throttled_items: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def count_throttle(self, throttle: Throttle, items: int = 1) -> None:
        self.throttled_items += items
        self.reasons[throttle.reason] = self.reasons.get(throttle.reason, 0) + items
