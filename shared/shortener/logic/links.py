"""Shortening and resolving single links."""

import threading
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from cachetools import TTLCache

from shortener import clock
from shortener.dal.links import ClaimOutcome, IdAlreadyAllocatedError
from shortener.logic.codes import CodeGenerator, hash_code_candidates, is_well_formed, validate_custom_code
from shortener.logic.urls import UrlPolicy, normalise_url, url_key
from shortener.models.exceptions import CodesExhaustedError, CodeTakenError, LinkNotFoundError
from shortener.models.links import Link, ShortenRequest, ShortenResult

# A generated code is taken only where an old custom or hash code predates its reservation: rare.
_MAX_CODE_ATTEMPTS = 20


class LinksStorage(Protocol):
    """What the link logic needs of storage (``shortener.dal.links.LinksStore``, or a fake)."""

    def get(self, code: str, *, consistent: bool = False) -> Link | None: ...
    def find_claim(self, key: str) -> Link | None: ...
    def allocate_ids(self, count: int) -> list[int]: ...
    def insert(self, link: Link) -> Link | None: ...
    def insert_reserving_id(self, link: Link, link_id: int) -> Link | None: ...
    def insert_with_claim(self, link: Link, key: str) -> ClaimOutcome: ...


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where a code leads, and whether this container already knew it."""

    url: str
    from_cache: bool


class IdPool:
    """Counter ids reserved in blocks, one counter write per block, handed out one at a time.
    Thread-safe: one pool serves a container."""

    def __init__(self, storage: LinksStorage, block_size: int) -> None:
        self._storage = storage
        self._block_size = block_size
        self._ids: deque[int] = deque()
        self._lock = threading.Lock()

    def next_id(self) -> int:
        with self._lock:
            while not self._ids:
                self._ids.extend(self._storage.allocate_ids(self._block_size))
            return self._ids.popleft()


class LinkService:
    """Creates links (custom, hash-keyed or generated, never overwriting one) and resolves codes
    through a small in-container cache. One instance per container."""

    def __init__(
        self,
        storage: LinksStorage,
        generator: CodeGenerator,
        *,
        strategy: str = "counter",
        find_if_exists: bool = True,
        id_block_size: int = 10,
        cache_seconds: float = 300,
        cache_size: int = 10_000,
    ) -> None:
        self._storage = storage
        self._generator = generator
        self._strategy = strategy
        self._find_if_exists = find_if_exists
        self._ids = IdPool(storage, id_block_size)
        self._cache: TTLCache[str, str] | None = (
            TTLCache(maxsize=cache_size, ttl=cache_seconds) if cache_seconds > 0 and cache_size > 0 else None
        )

    def shorten(self, request: ShortenRequest, policy: UrlPolicy, base_url: str) -> ShortenResult:
        """Create (or find) the link for ``request``; ``created`` is False when an existing link
        is returned."""
        url = normalise_url(request.url, policy)
        if request.code:
            link, created = self._claim_code(validate_custom_code(request.code), url, is_custom=True)
        elif self._strategy == "hash":
            link, created = self._shorten_by_hash(url)
        else:
            link, created = self._shorten_generated(url)
        return ShortenResult(code=link.code, short_url=base_url + link.code, url=link.url, created=created)

    def resolve(self, code: str) -> Resolution:
        """The URL behind ``code``. A malformed code is LinkNotFoundError without any read."""
        if not is_well_formed(code):
            raise LinkNotFoundError(f"No link has the code '{code[:64]}'.")
        if self._cache is not None and (cached := self._cache.get(code)) is not None:
            return Resolution(url=cached, from_cache=True)
        link = self._storage.get(code)
        if link is None:
            raise LinkNotFoundError(f"No link has the code '{code}'.")
        if self._cache is not None:
            self._cache[code] = link.url
        return Resolution(url=link.url, from_cache=False)

    def _claim_code(self, code: str, url: str, *, is_custom: bool) -> tuple[Link, bool]:
        """Write ``code`` -> ``url`` unless the code is held; holding the same URL is success."""
        link = Link(code=code, url=url, created_at=clock.now(), is_custom=is_custom)
        generated_id = self._generator.id_of(code)
        try:
            existing = (
                self._storage.insert(link)
                if generated_id is None
                else self._storage.insert_reserving_id(link, generated_id)
            )
        except IdAlreadyAllocatedError as exc:
            raise CodeTakenError(f"The code '{code}' is already in use.") from exc
        if existing is None:
            return link, True
        if existing.url == url:
            return existing, False
        raise CodeTakenError(f"The code '{code}' is already in use for another URL.")

    def _shorten_by_hash(self, url: str) -> tuple[Link, bool]:
        for candidate in hash_code_candidates(url):
            try:
                return self._claim_code(candidate, url, is_custom=False)
            except CodeTakenError:
                continue
        raise CodesExhaustedError(url)

    def _shorten_generated(self, url: str) -> tuple[Link, bool]:
        key = url_key(url)
        if self._find_if_exists and (existing := self._storage.find_claim(key)) is not None:
            return existing, False
        for _ in range(_MAX_CODE_ATTEMPTS):
            link = Link(code=self._generator.encode(self._ids.next_id()), url=url, created_at=clock.now())
            if self._find_if_exists:
                outcome = self._storage.insert_with_claim(link, key)
                if outcome.created:
                    return link, True
                if outcome.existing is not None:
                    return outcome.existing, False
            elif self._storage.insert(link) is None:
                return link, True
        raise CodesExhaustedError(url)
