"""Takedown by host: blocking a host takes down every existing link to it and its subdomains at
once (410), and unblocking restores them.

A block changes no link: the redirect path checks each link's target host against the blocklist,
so unblocking restores exactly the links the block took down, and a link its owner or an admin
disabled or deleted stays so. The check costs the redirect no read: each container keeps a
snapshot of the (short, hand-written) blocklist and reads it again at most every few seconds; a
request that asks for a fresh answer (API Gateway refreshing one entry of its stage cache) checks
the blocklist itself, with consistent reads.

The prod stage's cache would serve a cached 301 for the rest of its TTL: blocking (and unblocking)
refreshes the cache entries of the codes that link to the host, found with one scan of the links
table, one signed request per code (``shortener.links.stage_cache``)."""

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

import ada_url

from shortener.access.blocklist import HostGuard, host_and_parents, host_to_block
from shortener.access.blocklist_model import BlockedHost

# Refreshes the stage cache's entry of a code: the status of the fresh answer (None: no answer).
StageCacheRefresher = Callable[[str], int | None]


class BlocklistHosts(Protocol):
    """What the snapshot reads (``shortener.access.store_blocklist.BlocklistStore``)."""

    def list_hosts(self) -> set[str]: ...


class LinksByUrlText(Protocol):
    """What finding a host's links needs (``shortener.links.store_hosts.LinkHostScan``)."""

    def links_containing(self, text: str, *, seconds: float) -> tuple[list[tuple[str, str]], bool]: ...


def host_of(url: str) -> str | None:
    """The host of a normalised URL (no trailing dot), None when it has none."""
    try:
        hostname = ada_url.URL(url).hostname
    except ValueError:
        return None
    return hostname.rstrip(".") or None


def blocked_match(url: str, blocked: set[str] | frozenset[str]) -> str | None:
    """The blocked host (``url``'s host or a domain above it) that ``url`` leads to, if any."""
    if not blocked:
        return None
    host = host_of(url)
    if host is None:
        return None
    return next((candidate for candidate in host_and_parents(host) if candidate in blocked), None)


class BlockedHostsSnapshot:
    """The blocklist as this container last read it, read again at most every ``refresh_seconds``
    (a scan of a table of a few entries). Thread-safe."""

    def __init__(
        self,
        hosts: BlocklistHosts,
        *,
        refresh_seconds: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._hosts = hosts
        self._refresh_seconds = refresh_seconds
        self._monotonic = monotonic
        self._blocked: frozenset[str] = frozenset()
        self._read_at = float("-inf")
        self._lock = threading.Lock()

    def blocked_host(self, url: str) -> str | None:
        """The blocked host ``url`` leads to, by the snapshot."""
        with self._lock:
            if self._monotonic() - self._read_at >= self._refresh_seconds:
                self._read()
            blocked = self._blocked
        return blocked_match(url, blocked)

    def refresh(self) -> None:
        """Read the blocklist now (this container just changed it)."""
        with self._lock:
            self._read()

    def _read(self) -> None:
        self._blocked = frozenset(self._hosts.list_hosts())
        self._read_at = self._monotonic()


@dataclass(frozen=True, slots=True)
class TakedownReport:
    """What a block or an unblock reached: the links to the host (and its subdomains), how many
    stage cache entries were refreshed (None: the stage has no cache), and whether the scan for
    links finished in its time (if not, entries not refreshed expire within the cache's TTL)."""

    host: str
    links: int
    stage_cache_refreshed: int | None
    complete: bool
    # A block of a host that was on the list already (its first entry stands).
    already_blocked: bool = False


# Invalidates the edge's answers of codes: whether the edge took the request
# (shortener.links.edge_cache.EdgeCache.invalidate; more than 1,000 codes become one wildcard).
EdgeInvalidator = Callable[[Sequence[str]], bool]


class HostTakedowns:
    """Blocks and unblocks hosts, and refreshes what caches hold of their links."""

    def __init__(
        self,
        guard: HostGuard,
        links: LinksByUrlText,
        *,
        snapshot: BlockedHostsSnapshot | None = None,
        scan_seconds: float = 10,
        max_refreshes: int = 2_000,
        threads: int = 8,
        edge: EdgeInvalidator | None = None,
    ) -> None:
        self._edge = edge
        self._guard = guard
        self._links = links
        self._snapshot = snapshot
        self._scan_seconds = scan_seconds
        self._max_refreshes = max_refreshes
        self._threads = threads

    def block(
        self, host_text: str, *, added_by: str, reason: str, stage_cache: StageCacheRefresher | None
    ) -> tuple[BlockedHost, TakedownReport]:
        """Block a host: new links to it are refused, existing ones answer 410. A host blocked
        already keeps its entry (``already_blocked`` in the report); its links are checked again."""
        entry, added = self._guard.block(host_text, added_by=added_by, reason=reason)
        report = self._after_change(entry.host, stage_cache, expect_gone=True)
        return entry, replace(report, already_blocked=not added)

    def unblock(self, host_text: str, *, stage_cache: StageCacheRefresher | None) -> TakedownReport | None:
        """Unblock a host: its links redirect again (those still active). None when it was not blocked."""
        host = host_to_block(host_text)
        if not self._guard.unblock(host):
            return None
        return self._after_change(host, stage_cache, expect_gone=False)

    def _after_change(
        self, host: str, stage_cache: StageCacheRefresher | None, *, expect_gone: bool
    ) -> TakedownReport:
        if self._snapshot is not None:
            self._snapshot.refresh()
        codes, complete = self.codes_linking_to(host)
        # The edge takes every code in one request (codes the scan did not reach in time expire
        # there within the redirect's s-maxage).
        if self._edge is not None:
            self._edge(codes)
        if stage_cache is None:
            return TakedownReport(host, len(codes), None, complete)
        chosen = codes[: self._max_refreshes]
        with ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix="stage-cache") as pool:
            statuses = list(pool.map(stage_cache, chosen))
        # A blocked host's entries must now hold 410; an unblocked one's, whatever the link answers.
        refreshed = sum(1 for status in statuses if status is not None and (status == 410 or not expect_gone))
        return TakedownReport(host, len(codes), refreshed, complete and len(chosen) == len(codes))

    def codes_linking_to(self, host: str) -> tuple[list[str], bool]:
        """The codes of links to ``host`` or its subdomains (whatever their status), and whether
        the whole table was scanned in time."""
        found, complete = self._links.links_containing(host, seconds=self._scan_seconds)
        blocked = frozenset({host})
        return sorted(code for code, url in found if blocked_match(url, blocked) is not None), complete


def check_host(
    url: str, snapshot: BlockedHostsSnapshot | None, guard: HostGuard | None, *, fresh: bool
) -> str | None:
    """The blocked host ``url`` leads to: by the container's snapshot, or (``fresh``) by the table."""
    if fresh and guard is not None:
        return guard.matches([url]).get(url)
    return snapshot.blocked_host(url) if snapshot is not None else None
