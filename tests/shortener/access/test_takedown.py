"""Takedown by host without AWS: the container's blocklist snapshot and its refresh, and what a
block refreshes in the stage cache."""

import pytest

from shortener.access.blocklist import HostGuard, host_to_block
from shortener.access.blocklist_model import BlockedHost
from shortener.access.takedown import BlockedHostsSnapshot, HostTakedowns, blocked_match
from shortener.exceptions import InvalidRequestError


class FakeBlocklist:
    def __init__(self) -> None:
        self.hosts: dict[str, BlockedHost] = {}
        self.scans = 0

    def find(self, hosts: list[str]) -> set[str]:
        return {host for host in hosts if host in self.hosts}

    def add(self, entry: BlockedHost) -> BlockedHost:
        return self.hosts.setdefault(entry.host, entry)

    def remove(self, host: str) -> bool:
        return self.hosts.pop(host, None) is not None

    def list_all(self) -> list[BlockedHost]:
        return list(self.hosts.values())

    def list_hosts(self) -> set[str]:
        self.scans += 1
        return set(self.hosts)


class FakeLinks:
    def __init__(self, links: dict[str, str]) -> None:
        self.links = links

    def links_containing(self, text: str, *, seconds: float) -> tuple[list[tuple[str, str]], bool]:
        return [(code, url) for code, url in self.links.items() if text in url], True


def test_a_host_and_its_subdomains_match_and_a_lookalike_does_not() -> None:
    blocked = frozenset({"evil.example"})
    assert blocked_match("https://evil.example/a", blocked) == "evil.example"
    assert blocked_match("https://a.b.evil.example/", blocked) == "evil.example"
    assert blocked_match("https://notevil.example/", blocked) is None
    assert blocked_match("https://example.com/?u=evil.example", blocked) is None


def test_the_snapshot_is_read_again_only_after_its_refresh_time() -> None:
    # Given a snapshot refreshed every 5 s, read once
    store, now = FakeBlocklist(), [100.0]
    snapshot = BlockedHostsSnapshot(store, refresh_seconds=5, monotonic=lambda: now[0])
    assert snapshot.blocked_host("https://evil.example/") is None
    # When another container blocks the host, the snapshot answers from memory for up to 5 s
    store.add(BlockedHost(host="evil.example", created_at="2026-01-01T00:00:00Z"))
    now[0] += 4.9
    assert snapshot.blocked_host("https://evil.example/") is None
    # Then it reads the blocklist again once they passed: one scan per refresh, not per redirect
    now[0] += 0.2
    assert snapshot.blocked_host("https://evil.example/") == "evil.example"
    assert snapshot.blocked_host("https://www.evil.example/") == "evil.example"
    assert store.scans == 2


def test_a_block_refreshes_the_stage_cache_entries_of_the_hosts_links_only() -> None:
    # Given links to a host, its subdomain, a lookalike, and a URL naming it in its query
    store = FakeBlocklist()
    links = FakeLinks(
        {
            "a": "https://evil.example/1",
            "b": "https://www.evil.example/2",
            "c": "https://notevil.example/",
            "d": "https://fine.example/?next=evil.example",
        }
    )
    snapshot = BlockedHostsSnapshot(store, refresh_seconds=3600)
    assert snapshot.blocked_host("https://evil.example/") is None
    takedowns = HostTakedowns(HostGuard(store), links, snapshot=snapshot)
    refreshed: list[str] = []

    def stage_cache(code: str) -> int:
        refreshed.append(code)
        return 410

    # When the host is blocked
    entry, report = takedowns.block("EVIL.example", added_by="ops", reason="", stage_cache=stage_cache)
    # Then only its links' entries were refreshed, and this container knows at once
    assert entry.host == "evil.example"
    assert sorted(refreshed) == ["a", "b"]
    assert (report.links, report.stage_cache_refreshed, report.complete) == (2, 2, True)
    assert snapshot.blocked_host("https://evil.example/1") == "evil.example"
    # And unblocking refreshes them again; a host that is not blocked is None
    refreshed.clear()
    assert takedowns.unblock("evil.example", stage_cache=stage_cache) is not None
    assert sorted(refreshed) == ["a", "b"]
    assert snapshot.blocked_host("https://evil.example/1") is None
    assert takedowns.unblock("evil.example", stage_cache=stage_cache) is None


def test_a_host_with_user_info_is_refused_not_read_as_the_host() -> None:
    for text in ("user@evil.example", "evil.example/path", "evil.example?x", "evil.example#x"):
        with pytest.raises(InvalidRequestError, match="not a host name"):
            host_to_block(text)
    assert host_to_block("EVIL.example.") == "evil.example"


def test_blocking_again_in_another_spelling_keeps_the_first_entry() -> None:
    # Given a host blocked with a reason
    guard = HostGuard(FakeBlocklist())
    first, added = guard.block("evil.example", added_by="ops", reason="phishing")
    # When an admin blocks it again in another spelling, with another reason
    again, added_again = guard.block("EVIL.Example.", added_by="root", reason="spam")
    # Then the first entry stands and is what is answered, saying it was there
    assert (added, added_again) == (True, False)
    assert (again.reason, again.added_by, again.created_at) == ("phishing", "ops", first.created_at)
