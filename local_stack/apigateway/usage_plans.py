"""Usage plans, locally: API keys and usage plans live in the embedded AWS (moto's API Gateway,
created from the template and by `shortener keys`); the local API Gateway meters each request of a
method that requires an API key against the key's plan.

What API Gateway does, and this module with it (AWS: "Usage plans and API keys for REST APIs",
"Throttle requests to your REST APIs", "Choose an API key source"):
- The API key comes from the ``X-API-Key`` header (apiKeySource HEADER) or from the Lambda
  authorizer's ``usageIdentifierKey`` (AUTHORIZER). A missing, unknown or disabled key, or one in
  no usage plan of this API, is a 403 INVALID_API_KEY (``{"message":"Forbidden"}``).
- Throttling is a token bucket per key: the bucket holds ``burstLimit`` tokens, refills at
  ``rateLimit`` per second, each request takes one; an empty bucket is a 429 THROTTLED
  (``{"message":"Too Many Requests"}``).
- The quota counts a key's requests per period (DAY, WEEK or MONTH, in UTC); above ``limit`` the
  answer is a 429 QUOTA_EXCEEDED (``{"message":"Limit Exceeded"}``). A throttled request uses no
  quota.
AWS applies both "on a best-effort basis" (targets, not exact ceilings); locally they are exact.
Per-method throttles inside a plan's stages are not emulated.

moto keeps API keys in memory only; `KeyDirectory.save`/`restore` keep them (and their plans) in
the data dir, so keys made with `shortener keys create` survive a restart."""

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

log = logging.getLogger(__name__)

# How long a looked-up key is trusted before moto is asked again: a key created or disabled with
# `shortener keys` takes effect within this.
_LOOKUP_SECONDS = 1.0


@dataclass(frozen=True)
class PlanLimits:
    """A usage plan's throttle and quota (None: not limited)."""

    plan_id: str
    rate: float | None = None
    burst: int | None = None
    quota: int | None = None
    period: str = "DAY"

    @classmethod
    def from_api(cls, plan: dict[str, Any]) -> "PlanLimits":
        throttle, quota = plan.get("throttle") or {}, plan.get("quota") or {}
        return cls(
            plan_id=str(plan["id"]),
            rate=float(throttle["rateLimit"]) if "rateLimit" in throttle else None,
            burst=int(throttle["burstLimit"]) if "burstLimit" in throttle else None,
            quota=int(quota["limit"]) if "limit" in quota else None,
            period=str(quota.get("period", "DAY")).upper(),
        )


@dataclass
class TokenBucket:
    """API Gateway's throttle: ``burst`` tokens at most, ``rate`` new tokens per second."""

    rate: float
    burst: float
    tokens: float
    updated: float

    def take(self, now: float) -> bool:
        """Take a token for one request; False when there is none (throttled)."""
        self.tokens = min(self.burst, self.tokens + max(0.0, now - self.updated) * self.rate)
        self.updated = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


def period_start(period: str, now: datetime) -> datetime:
    """The start (UTC) of the quota period that ``now`` falls in."""
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "WEEK":
        return day - timedelta(days=day.weekday())
    if period == "MONTH":
        return day.replace(day=1)
    return day


@dataclass
class UsageMeter:
    """Token buckets and quota counters per (plan, key). Thread-safe."""

    monotonic: Callable[[], float] = time.monotonic
    utcnow: Callable[[], datetime] = lambda: datetime.now(UTC)
    _buckets: dict[tuple[str, str], TokenBucket] = field(default_factory=dict)
    _used: dict[tuple[str, str], tuple[datetime, int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def admit(self, key_id: str, plan: PlanLimits) -> str | None:
        """None when the request may pass, else the gateway response type (THROTTLED or
        QUOTA_EXCEEDED)."""
        slot = (plan.plan_id, key_id)
        with self._lock:
            if plan.rate is not None and plan.burst is not None:
                now = self.monotonic()
                bucket = self._buckets.get(slot)
                if bucket is None or (bucket.rate, bucket.burst) != (plan.rate, plan.burst):
                    bucket = self._buckets[slot] = TokenBucket(plan.rate, plan.burst, plan.burst, now)
                if not bucket.take(now):
                    return "THROTTLED"
            if plan.quota is not None:
                start = period_start(plan.period, self.utcnow())
                since, used = self._used.get(slot, (start, 0))
                used = used if since == start else 0
                if used >= plan.quota:
                    return "QUOTA_EXCEEDED"
                self._used[slot] = (start, used + 1)
        return None


@dataclass(frozen=True)
class ApiKeyInfo:
    """An API key as the local API Gateway needs it."""

    key_id: str
    enabled: bool
    plans: tuple[PlanLimits, ...]


class KeyDirectory:
    """The API keys and usage plans of the embedded AWS, through its API Gateway API."""

    def __init__(self, apigateway: Any, api_id: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._client = apigateway
        self._api_id = api_id
        self._clock = clock
        self._cache: dict[str, tuple[float, ApiKeyInfo | None]] = {}
        self._lock = threading.Lock()

    def lookup(self, value: str) -> ApiKeyInfo | None:
        """The API key whose value is ``value``, with the usage plans of this API it is in."""
        now = self._clock()
        with self._lock:
            cached = self._cache.get(value)
            if cached and cached[0] > now:
                return cached[1]
        found = next((item for item in self._api_keys() if item.get("value") == value), None)
        info = None
        if found is not None:
            plans = self._client.get_usage_plans(keyId=found["id"]).get("items", [])
            info = ApiKeyInfo(
                key_id=str(found["id"]),
                enabled=bool(found.get("enabled")),
                plans=tuple(PlanLimits.from_api(plan) for plan in plans if self._meters_this_api(plan)),
            )
        with self._lock:
            self._cache[value] = (now + _LOOKUP_SECONDS, info)
        return info

    def _meters_this_api(self, plan: dict[str, Any]) -> bool:
        return any(stage.get("apiId") == self._api_id for stage in plan.get("apiStages") or [])

    def _api_keys(self) -> list[dict[str, Any]]:
        pages = self._client.get_paginator("get_api_keys").paginate(includeValues=True, limit=500)
        return [item for page in pages for item in page.get("items", [])]


class UsagePlans:
    """Admits requests of methods that require an API key, as API Gateway's usage plans do."""

    def __init__(self, directory: KeyDirectory, meter: UsageMeter | None = None) -> None:
        self.directory = directory
        self.meter = meter or UsageMeter()

    def admit(self, api_key: str | None) -> tuple[str | None, ApiKeyInfo | None]:
        """(refusal type or None, the key): INVALID_API_KEY, THROTTLED or QUOTA_EXCEEDED."""
        info = self.directory.lookup(api_key) if api_key else None
        if info is None or not info.enabled or not info.plans:
            return "INVALID_API_KEY", info
        # API Gateway allows one usage plan per key and API stage.
        return self.meter.admit(info.key_id, info.plans[0]), info
