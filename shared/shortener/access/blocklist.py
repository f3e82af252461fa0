"""Abuse guard: hosts an admin blocked. A blocked host refuses links to itself and to every
subdomain of it (blocking evil.example refuses https://www.evil.example/x too)."""

import ipaddress
import re
from collections.abc import Iterable, Sequence
from typing import Protocol

import ada_url

from shortener import clock
from shortener.access.blocklist_model import BlockedHost
from shortener.exceptions import BlockedHostError, InvalidRequestError
from shortener.links.urls import canonical_host

MAX_HOST_LENGTH = 253


class BlockedHosts(Protocol):
    """``shortener.access.store_blocklist.BlocklistStore``, or a fake."""

    def find(self, hosts: Sequence[str]) -> set[str]: ...
    def add(self, entry: BlockedHost) -> BlockedHost: ...
    def remove(self, host: str) -> bool: ...
    def list_all(self) -> list[BlockedHost]: ...


# A DNS name as the URL parser serialises it (lower case, punycode): dot-separated labels of
# letters, digits, hyphens (not first or last) and underscores (seen in real hosts), 1-63 each.
_LABEL = r"(?!-)[a-z0-9_-]{1,63}(?<!-)"
_HOST_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


# What a URL puts around its host, never in it: user info, a path, a query, a fragment.
_NOT_IN_A_HOST = ("@", "/", "\\", "?", "#")


def host_to_block(text: str) -> str:
    """``text`` (a host as an admin typed it: any case, a trailing dot, Unicode) in the canonical
    form the blocklist stores, or InvalidRequestError."""
    if any(mark in text for mark in _NOT_IN_A_HOST):
        # 'user@evil.example' reads as a user at a host (an address?): blocking evil.example whole
        # would block more than the admin typed, and no URL's host is that text. Say so instead.
        raise InvalidRequestError(
            f"'{text[:80]}' is not a host name (such as evil.example): it has a user name, path, query "
            "or fragment; send the host alone."
        )
    host = canonical_host(text) if len(text) <= MAX_HOST_LENGTH else None
    if host is not None and not (_is_ip_address(host) or _HOST_NAME.fullmatch(host)):
        host = None  # '*', '-', 'a..b': the URL parser takes them, but no URL's host is one
    if host is None:
        raise InvalidRequestError(f"'{text[:80]}' is not a host name (such as evil.example).")
    return host


def host_and_parents(host: str) -> list[str]:
    """``host`` and every domain above it (a.b.example -> a.b.example, b.example, example). An IP
    address is only itself."""
    host = host.rstrip(".")
    if _is_ip_address(host):
        return [host]
    labels = host.split(".")
    return [".".join(labels[start:]) for start in range(len(labels))]


class HostGuard:
    """Checks URLs against the blocklist: one batched read per call, whatever the number of URLs."""

    def __init__(self, store: BlockedHosts) -> None:
        self._store = store

    def check(self, url: str) -> None:
        """BlockedHostError when ``url``'s host or a domain above it is blocked."""
        blocked = self.blocked([url])
        if url in blocked:
            raise BlockedHostError(blocked[url])

    def blocked(self, urls: Iterable[str]) -> dict[str, str]:
        """The URLs (normalised) whose host is blocked, each with a sentence saying why."""
        return {
            url: f"Links to {match} (and its subdomains) are blocked on this shortener."
            for url, match in self.matches(urls).items()
        }

    def matches(self, urls: Iterable[str]) -> dict[str, str]:
        """The URLs (normalised) whose host is blocked, each with the blocked host it falls under
        (one batched, consistent read)."""
        candidates: dict[str, list[str]] = {}
        for url in urls:
            host = _host_of(url)
            if host:
                candidates[url] = host_and_parents(host)
        if not candidates:
            return {}
        found = self._store.find(sorted({host for hosts in candidates.values() for host in hosts}))
        refused = {}
        for url, hosts in candidates.items():
            match = next((host for host in hosts if host in found), None)
            if match is not None:
                refused[url] = match
        return refused

    def block(self, host_text: str, *, added_by: str, reason: str = "") -> tuple[BlockedHost, bool]:
        """Add a host to the blocklist: the entry, and whether it is new. A host blocked already
        (in any spelling) keeps its entry (reason, who, when): that one is answered."""
        entry = BlockedHost(
            host=host_to_block(host_text), created_at=clock.now(), added_by=added_by, reason=reason
        )
        stored = self._store.add(entry)
        return stored, stored is entry

    def unblock(self, host_text: str) -> bool:
        """Remove a host from the blocklist; False when it was not on it."""
        return self._store.remove(host_to_block(host_text))

    def entries(self) -> list[BlockedHost]:
        return self._store.list_all()


def _host_of(url: str) -> str | None:
    try:
        hostname = ada_url.URL(url).hostname
    except ValueError:
        return None
    return hostname.rstrip(".") or None


def _is_ip_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
