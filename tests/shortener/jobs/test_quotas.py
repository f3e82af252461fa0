"""An owner's daily quota of bulk rows and bytes, over a fake counter."""

from shortener.jobs.quotas import DailyQuota


class FakeCounters:
    def __init__(self) -> None:
        self.used: dict[tuple[str, str], list[int]] = {}

    def reserve(
        self, owner: str, day: str, *, rows: int, size: int, max_rows: int, max_bytes: int, expires_at: int
    ) -> bool:
        used = self.used.setdefault((owner, day), [0, 0])
        fits = used[0] + rows <= max_rows and used[1] + size <= max_bytes and (rows or used[0] < max_rows)
        if fits:
            used[0] += rows
            used[1] += size
        return bool(fits)


def test_a_job_larger_than_a_whole_days_quota_is_refused_even_on_a_fresh_day() -> None:
    quota = DailyQuota(FakeCounters(), max_rows=10, max_bytes=1_000)
    assert not quota.reserve("alice", rows=11, size=1)
    assert not quota.reserve("alice", rows=1, size=1_001)
    assert quota.reserve("alice", rows=10, size=1_000)


def test_owners_have_their_own_quota_and_anonymous_callers_share_one() -> None:
    counters = FakeCounters()
    quota = DailyQuota(counters, max_rows=10, max_bytes=1_000)
    assert quota.reserve("alice", rows=10, size=10)
    assert quota.reserve("bob", rows=10, size=10)
    assert quota.reserve(None, rows=6, size=10)
    assert not quota.reserve(None, rows=5, size=10)
    assert {owner for owner, _ in counters.used} == {"alice", "bob", "anonymous"}


def test_callers_without_a_key_share_their_own_smaller_daily_rows() -> None:
    quota = DailyQuota(FakeCounters(), max_rows=1_000, max_bytes=10**6, anonymous_rows=10)
    assert quota.reserve(None, rows=10, size=1)
    assert not quota.reserve("anonymous", rows=1, size=1)
    assert "AnonymousDailyRows" in quota.message(None)
    # A member keeps the owners' quota
    assert quota.reserve("alice", rows=500, size=1)
