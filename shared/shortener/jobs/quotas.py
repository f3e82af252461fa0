"""Limits that follow cost: what one owner may submit per UTC day, in rows (every link asked for,
by any route: ``POST /``, ``POST /links/bulk``, a CSV in the body, a direct upload) and in bytes
of bulk files. A new job or call over either is refused (429 ``quota_exceeded``, nothing written);
a file whose rows pass the quota while it is read ends there, its remaining read rows failed
``quota_exceeded`` and the job ``ended_early`` saying so."""

from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from shortener import clock
from shortener.exceptions import QuotaExceededError

ANONYMOUS_OWNER = "anonymous"
# The counters outlive their day by this much (TTL), then go.
_KEPT = timedelta(days=3)


class QuotaCounters(Protocol):
    """``shortener.jobs.store.quotas.DailyQuotaStore``, or a fake."""

    def reserve(
        self, owner: str, day: str, *, rows: int, size: int, max_rows: int, max_bytes: int, expires_at: int
    ) -> bool: ...


@dataclass(frozen=True, slots=True)
class DailyQuota:
    """One owner's daily maximum of rows and bytes, over its counters."""

    counters: QuotaCounters
    max_rows: int
    max_bytes: int
    # The anonymous owner's own (smaller) daily rows: every caller without a key shares them.
    anonymous_rows: int | None = None

    def rows_for(self, owner: str | None) -> int:
        if (owner or ANONYMOUS_OWNER) == ANONYMOUS_OWNER and self.anonymous_rows is not None:
            return min(self.max_rows, self.anonymous_rows)
        return self.max_rows

    def reserve(self, owner: str | None, *, rows: int, size: int) -> bool:
        """Count ``rows`` and ``size`` against ``owner``'s day if they fit; False otherwise."""
        max_rows = self.rows_for(owner)
        if rows > max_rows or size > self.max_bytes:
            # More than a whole day's quota (the counter's condition holds only once it exists).
            return False
        now = clock.now()
        return self.counters.reserve(
            owner or ANONYMOUS_OWNER,
            now.date().isoformat(),
            rows=rows,
            size=size,
            max_rows=max_rows,
            max_bytes=self.max_bytes,
            expires_at=int((now + _KEPT).timestamp()),
        )

    def require(self, owner: str | None, *, rows: int, size: int, what: str = "This job") -> None:
        """QuotaExceededError (429) when ``rows`` and ``size`` do not fit ``owner``'s day (``what``
        names the request in the message)."""
        if not self.reserve(owner, rows=rows, size=size):
            raise QuotaExceededError(self.message(owner, what))

    def message(self, owner: str | None = None, what: str = "This job") -> str:
        if self.rows_for(owner) != self.max_rows:
            return (
                f"{what} would pass the daily quota of {self.rows_for(owner):,} rows that callers "
                "without an API key share (AnonymousDailyRows); it resets at midnight UTC. Use an API key."
            )
        return (
            f"{what} would pass the daily quota of {self.max_rows:,} rows (links) or {self.max_bytes:,} "
            "bytes of bulk files per owner (OwnerDailyRows, OwnerDailyBytes); it resets at midnight UTC."
        )
