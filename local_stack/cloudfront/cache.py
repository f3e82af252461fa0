"""The local edge's caching rules, as CloudFront applies a distribution's cache policy.

- The key is what the cache policy names: here the path and the headers it lists (no query or
  cookie); an invalidation path matches the path whatever the headers.
- How long an answer is kept ("Manage how long content stays in the cache (expiration)",
  https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/Expiration.html): the origin's
  ``s-maxage``, else its ``max-age``, clamped to the policy's MinTTL and MaxTTL; without either,
  the policy's DefaultTTL. ``no-store``, ``private`` and ``no-cache`` are never kept here (with
  MinTTL 0, as the template's policy says, CloudFront honours them).
- Only the cached methods' answers (GET, HEAD) are kept; error codes only for their
  ErrorCachingMinTTL (0: never), and only the codes CloudFront caches ("How CloudFront processes
  HTTP status codes", https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/HTTPStatusCodes.html).
- Invalidation paths match as AWS matches them: exactly, or by prefix with one trailing ``*``
  ("Invalidate files", https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/Invalidation.html).
- At most ``capacity`` entries, the least recently used dropped first."""

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

# Codes CloudFront caches when the origin allows (HTTPStatusCodes.html, "HTTP 3xx" and 4xx/5xx).
CACHEABLE_SUCCESS = frozenset({200, 203, 206, 300, 301, 302, 307, 308, 410})
CACHEABLE_ERRORS = frozenset({400, 403, 404, 405, 414, 416, 500, 501, 502, 503, 504})
_NEVER_STORED = ("no-store", "private", "no-cache")
_DIRECTIVE = re.compile(r"\s*([a-z-]+)\s*(?:=\s*\"?(\d+)\"?)?\s*", re.IGNORECASE)


@dataclass(frozen=True)
class CachePolicy:
    """A cache policy's TTLs and the error caching of the distribution."""

    min_ttl: int = 0
    default_ttl: int = 0
    max_ttl: int = 86400
    cached_methods: frozenset[str] = frozenset({"GET", "HEAD"})
    error_ttls: Mapping[int, int] = field(default_factory=dict)


def directives(cache_control: str) -> dict[str, int | None]:
    """``Cache-Control``'s directives, lower-cased, with their seconds where they have some."""
    found: dict[str, int | None] = {}
    for part in cache_control.split(","):
        match = _DIRECTIVE.fullmatch(part)
        if match:
            found[match.group(1).lower()] = int(match.group(2)) if match.group(2) else None
    return found


def path_of(path: str) -> str:
    """The request's path without its query (the template's policy keys no query)."""
    return path.split("?", 1)[0]


# The path, and the values of the cache policy's headers in its order ("" when not sent).
CacheKey = tuple[str, tuple[str, ...]]


def cache_key(path: str, headers: Mapping[str, str] | None = None, names: Iterable[str] = ()) -> CacheKey:
    """The cache key of the template's policy: the path and the values of the headers it names
    (``names``; header names compared in any letter case)."""
    by_name = {name.lower(): value for name, value in (headers or {}).items()}
    return path_of(path), tuple(by_name.get(name.lower(), "") for name in names)


def ttl_for(policy: CachePolicy, method: str, status: int, cache_control: str) -> int:
    """Seconds an answer is kept (0: not kept)."""
    if method.upper() not in policy.cached_methods:
        return 0
    if status in CACHEABLE_ERRORS:
        # Error caching: the configured minimum TTL (default 10 s when not configured, by AWS).
        return policy.error_ttls.get(status, 10) if not _never_stored(cache_control) else 0
    if status not in CACHEABLE_SUCCESS:
        return 0
    found = directives(cache_control)
    if any(name in found for name in _NEVER_STORED) and policy.min_ttl == 0:
        return 0
    seconds = found.get("s-maxage")
    if seconds is None:
        seconds = found.get("max-age")
    if seconds is None:
        return policy.default_ttl
    return max(policy.min_ttl, min(policy.max_ttl, seconds))


def _never_stored(cache_control: str) -> bool:
    return any(name in directives(cache_control) for name in _NEVER_STORED)


def matches(invalidation_path: str, path: str) -> bool:
    """Whether an invalidation path covers a cached path: ``*`` only as the last character."""
    if invalidation_path.endswith("*"):
        return path.startswith(invalidation_path[:-1])
    return path == invalidation_path


@dataclass(frozen=True)
class Entry:
    """One kept answer."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    stored_at: float
    ttl: int

    def age(self, now: float) -> int:
        return int(now - self.stored_at)

    def fresh(self, now: float) -> bool:
        return now - self.stored_at < self.ttl


class EdgeCache:
    """Answers by key, at most ``capacity`` of them (LRU), thread-safe."""

    def __init__(self, capacity: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = capacity
        self.clock = clock
        self._entries: OrderedDict[CacheKey, Entry] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: CacheKey) -> Entry | None:
        """The fresh entry of ``key``, if any (a stale one is dropped)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if not entry.fresh(self.clock()):
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry

    def put(self, key: CacheKey, entry: Entry) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def invalidate(self, paths: Iterable[str]) -> int:
        """Drop every entry an invalidation path covers: how many were dropped."""
        patterns = list(paths)
        with self._lock:
            doomed = [key for key in self._entries if any(matches(pattern, key[0]) for pattern in patterns)]
            for key in doomed:
                del self._entries[key]
        return len(doomed)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
