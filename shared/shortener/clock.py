"""Every read of "now" goes through here, so freezegun controls time everywhere."""

from datetime import UTC, datetime


def now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def epoch_seconds() -> int:
    """The current time as whole seconds since the epoch (for DynamoDB numbers and TTLs)."""
    return int(now().timestamp())
