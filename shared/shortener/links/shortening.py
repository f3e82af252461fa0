"""Shortening and resolving single links."""

import random
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from cachetools import TTLCache

from shortener import clock
from shortener.access.blocklist import HostGuard
from shortener.access.takedown import BlockedHostsSnapshot, check_host
from shortener.exceptions import (
    BlockedHostError,
    CodeKeyChangedError,
    CodesExhaustedError,
    CodeTakenError,
    LinkExpiredError,
    LinkGoneError,
    LinkNotFoundError,
)
from shortener.jobs.quotas import DailyQuota
from shortener.links.codes import CodeGenerator, is_well_formed, validate_custom_code
from shortener.links.domains import ShortUrls
from shortener.links.model import Link, ShortenRequest, ShortenResult, link_fields
from shortener.links.protection import Interception, intercept
from shortener.links.rules_model import StoredRules, rule_urls, with_normalised_rules
from shortener.links.store import ClaimOutcome, ClickOutcome, CounterKeyMismatchError, IdAlreadyAllocatedError
from shortener.links.targeting import Decision, Visitor, decide
from shortener.links.urls import UrlPolicy, normalise_url, url_key

_MAX_AGE = re.compile(r"max-age=(\d+)")
# A generated code is taken only where an old custom or hash code predates its reservation: rare.
_MAX_CODE_ATTEMPTS = 20


class LinksStorage(Protocol):
    """What the link logic needs of storage (``shortener.links.store.LinksStore``, or a fake)."""

    def get(self, code: str, *, consistent: bool = False) -> Link | None: ...
    def find_claim(self, key: str) -> Link | None: ...
    def counter_key(self) -> str | None: ...
    def allocate_ids(self, count: int, key_fingerprint: str) -> list[int]: ...
    def insert(self, link: Link) -> Link | None: ...
    def insert_reserving_id(self, link: Link, link_id: int, key_fingerprint: str) -> Link | None: ...
    def insert_with_claim(self, link: Link, key: str) -> ClaimOutcome: ...
    def takedown_generation(self) -> int: ...
    def take_click(self, code: str) -> ClickOutcome: ...


# What ``LinkService.resolve`` is told when the request names no domain (the API's own URL): no
# domain is spelt so.
EVERY_DOMAIN = "*"


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where a code leads, whether this container already knew it, and the link's limits (a
    redirect of a limited link must not be kept by browsers past them)."""

    url: str
    from_cache: bool
    expires_at: datetime | None = None
    click_limited: bool = False
    # The link's rules (None for a plain link, which answers ``url`` to everyone).
    rules: StoredRules | None = None
    # A password or a preview: the answer depends on the visitor, never kept by any cache.
    per_visitor: bool = False
    # The password page or the preview, answered instead of the redirect (shortener.links.protection).
    shown: Interception | None = None

    @property
    def varies(self) -> bool:
        """Whether the answer depends on the visitor: never kept by any cache for another one."""
        return self.per_visitor or (self.rules is not None and self.rules.varies)

    def redirect_status(self, configured: int) -> int:
        """``configured``, but 302 for an answer that depends on the visitor (a browser keeps a
        301 for good, and would never ask again where it belongs)."""
        return 302 if self.varies else configured

    def cache_control(self, configured: str, now: datetime, edge_seconds: int = 0) -> str:
        """The redirect's Cache-Control: ``configured`` (what browsers keep), except that a
        click-limited link's redirect is never stored (each follow must reach the function to be
        counted) and an expiring link's is kept at most until its expiry.

        Behind the edge (``edge_seconds`` > 0) the answer also says how long the edge may keep it
        (``s-maxage``: ``edge_seconds``, at most until the expiry) and drops ``private``, which
        CloudFront never stores ("Managing how long content stays in the cache",
        https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/Expiration.html); a
        change reaches the edge by invalidation, not by expiry."""
        if self.click_limited or self.varies:
            return "private, no-store"
        left = None if self.expires_at is None else max(int((self.expires_at - now).total_seconds()), 0)
        browser = configured if left is None else _capped(configured, left)
        if edge_seconds <= 0:
            return browser
        edge = edge_seconds if left is None else min(edge_seconds, left)
        directives = [
            part.strip() for part in browser.split(",") if part.strip() and part.strip() != "private"
        ]
        return ", ".join([*directives, f"s-maxage={edge}"])


def _capped(configured: str, left: int) -> str:
    """``configured`` with its max-age no longer than ``left`` seconds."""
    found = _MAX_AGE.search(configured)
    if found is None:
        return f"{configured}, max-age={left}" if configured else f"private, max-age={left}"
    return _MAX_AGE.sub(f"max-age={min(int(found[1]), left)}", configured)


def key_changed_error(stored: str, current: str) -> CodeKeyChangedError:
    """The 503 that says what changed and what to do."""
    return CodeKeyChangedError(
        f"The links table's id counter was started under another code key (fingerprint {stored}); "
        f"this function runs under {current}. CodeAlphabet (or the stack's own key) changed, and codes "
        "made now could equal existing ones, so no code is written and queued bulk rows wait. Deploy "
        "again with the CodeAlphabet the table was started with (empty if it never had one)."
    )


class IdCounter(Protocol):
    """The id counter (``shortener.links.store.LinksStore.allocate_ids``)."""

    def allocate_ids(self, count: int, key_fingerprint: str) -> list[int]: ...


class IdPool:
    """Counter ids reserved in blocks, one counter write per block, handed out one at a time
    (``next_id``) or many at once (``take``). Ids a container reserved and never handed out are
    simply never used (codes come from a permutation of the ids, so a gap shows nowhere).
    Thread-safe: one pool serves a container."""

    def __init__(self, storage: IdCounter, block_size: int, key_fingerprint: str) -> None:
        self._storage = storage
        self._block_size = block_size
        self._key_fingerprint = key_fingerprint
        self._ids: deque[int] = deque()
        self._handed_out = 0
        self._lock = threading.Lock()

    def next_id(self) -> int:
        return self.take(1)[0]

    def take(self, count: int) -> list[int]:
        """``count`` ids. A pool short of them reserves the missing ones, or more: as many as it has
        handed out so far, up to its block size. A container that shortens little so wastes little
        when it ends; one that runs a bulk job writes the counter once per block, not per chunk."""
        with self._lock:
            while len(self._ids) < count:
                missing = count - len(self._ids)
                wanted = max(missing, min(self._block_size, self._handed_out))
                try:
                    # Fewer may come back: ids that custom codes reserved are skipped.
                    self._ids.extend(self._storage.allocate_ids(wanted, self._key_fingerprint))
                except CounterKeyMismatchError as exc:
                    raise key_changed_error(exc.stored, self._key_fingerprint) from exc
            self._handed_out += count
            return [self._ids.popleft() for _ in range(count)]

    def give_back(self, ids: list[int]) -> None:
        """Ids taken but not used (nothing was written with them): they are handed out next."""
        with self._lock:
            self._ids.extendleft(reversed(ids))
            self._handed_out -= len(ids)


class RedirectCache:
    """The container's memory of the links it resolved. A link can change (a takedown, a new
    target), and another container may have changed it: the whole memory is dropped whenever the
    table's takedown generation moved, which is read at most every ``check_seconds``."""

    def __init__(
        self,
        generation: Callable[[], int],
        *,
        ttl_seconds: float,
        size: int,
        check_seconds: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._generation = generation
        self._entries: TTLCache[str, Link] = TTLCache(maxsize=size, ttl=ttl_seconds, timer=monotonic)
        self._check_seconds = check_seconds
        self._monotonic = monotonic
        self._known_generation: int | None = None
        self._checked_at = float("-inf")
        self._lock = threading.Lock()

    def get(self, code: str) -> Link | None:
        with self._lock:
            now = self._monotonic()
            if now - self._checked_at >= self._check_seconds:
                generation = self._generation()
                if generation != self._known_generation:
                    self._entries.clear()
                    self._known_generation = generation
                self._checked_at = now
            return self._entries.get(code)

    def put(self, link: Link) -> None:
        with self._lock:
            self._entries[link.code] = link

    def forget(self, code: str) -> None:
        with self._lock:
            self._entries.pop(code, None)


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
        cache_check_seconds: float = 1.0,
        guard: HostGuard | None = None,
        blocked_hosts: BlockedHostsSnapshot | None = None,
        quota: DailyQuota | None = None,
    ) -> None:
        self._storage = storage
        # Each owner's daily rows: a link made here counts as one (docs/security.md).
        self._quota = quota
        # Redirects to a blocked host answer 410 (see shortener.access.takedown).
        self._blocked_hosts = blocked_hosts
        self._generator = generator
        self._strategy = strategy
        self._find_if_exists = find_if_exists
        self._guard = guard
        self._ids = IdPool(storage, id_block_size, generator.fingerprint)
        self._cache = (
            RedirectCache(
                storage.takedown_generation,
                ttl_seconds=cache_seconds,
                size=cache_size,
                check_seconds=cache_check_seconds,
            )
            if cache_seconds > 0 and cache_size > 0
            else None
        )

    @property
    def guard(self) -> HostGuard | None:
        return self._guard

    def shorten(
        self,
        request: ShortenRequest,
        policy: UrlPolicy,
        urls: ShortUrls,
        *,
        owner: str | None = None,
        screen: bool = True,
        counted: bool = False,
        scope: str | None = None,
        row: int | None = None,
    ) -> ShortenResult:
        """Create (or find) ``owner``'s link for ``request``; ``created`` is False when an existing
        link is returned. ``screen`` checks the blocklist (bulk screens a whole chunk at once);
        unless ``counted`` (its call or job counted it already), the link counts as one row of
        ``owner``'s daily quota (QuotaExceededError, nothing written, when it does not fit).
        ``scope`` (a bulk job) shares a password's hash between its rows; with ``row`` (the row of
        the job's file) the link records both. ``request.domain`` is stored as given: the caller
        checked it (``ShortUrls.for_caller``)."""
        url = normalise_url(request.url, policy)
        request = with_normalised_rules(request, policy)
        if screen and self._guard is not None:
            self._guard.check(url)
            check_rule_hosts(self._guard, link_fields(request))
        if not counted and self._quota is not None:
            self._quota.require(owner, rows=1, size=0, what="This link")
        template = Link(
            code="-",
            url=url,
            created_at=clock.now(),
            owner=owner,
            job_id=scope if row is not None else None,
            row=row,
            **link_fields(request, scope=scope),
        )
        if request.code:
            link, created = self._claim_code(validate_custom_code(request.code), template, is_custom=True)
        elif self._strategy == "hash":
            link, created = self._shorten_by_hash(template)
        else:
            link, created = self._shorten_generated(template)
        return ShortenResult(
            code=link.code,
            short_url=urls.short_url(link.domain, link.code),
            domain=urls.name_of(link.domain),
            url=link.url,
            created=created,
        )

    def resolve(
        self,
        code: str,
        *,
        fresh: bool = False,
        count_click: bool = True,
        from_bot: Callable[[], bool] = lambda: False,
        unlocked: bool = False,
        domain: str | None = EVERY_DOMAIN,
    ) -> Resolution:
        """The URL behind ``code``: LinkNotFoundError for an unknown or malformed code (the latter
        without any read), LinkGoneError for a deleted or disabled one, LinkExpiredError for one
        past its time or its last allowed click. ``fresh`` skips the container's memory (a client
        asked for it, or API Gateway is refilling its cache). A link without limits costs one
        read (none when remembered); a click-limited one also one conditional write, which counts
        the click unless ``count_click`` is False (HEAD: it only looks) or ``from_bot`` says the
        visitor is a crawler or link-preview fetcher (asked only of a click-limited link: a preview
        must not use up the click the person it was shown to then makes). A password or preview
        link may answer its page instead (``Resolution.shown``, taking no click); ``unlocked``: the
        right password came with the request. ``domain``: the domain the request came to (None:
        the default one), where a link of another domain is not found; EVERY_DOMAIN (the API's
        own URL) answers every domain's links."""
        if not is_well_formed(code):
            raise LinkNotFoundError(f"No link has the code '{code[:64]}'.")
        link = None if fresh or self._cache is None else self._cache.get(code)
        from_cache = link is not None
        if link is None:
            # A strongly consistent read: right after a takedown, an eventually consistent one
            # could still return the old link, and API Gateway would cache that answer for its TTL.
            link = self._storage.get(code, consistent=True)
            if link is None:
                raise LinkNotFoundError(f"No link has the code '{code}'.")
            if self._cache is not None:
                self._cache.put(link)
        if domain not in (EVERY_DOMAIN, link.domain):
            raise LinkNotFoundError(f"No link has the code '{code}' on this domain.")
        self._followable(link, fresh=fresh)
        _unexpired(link)
        shown = intercept(link, crawler=from_bot, unlocked=unlocked) if link.per_visitor else None
        if shown is not None:
            # Neither page is a click: the limit is judged as it stands in the table.
            count_click = False
        if link.click_limited:
            count_click = count_click and not from_bot()
            # The remembered link only said that it has a limit: the count is in the table.
            link = self._take_click(code) if count_click else self._storage.get(code, consistent=True)
            if link is None:
                raise LinkNotFoundError(f"No link has the code '{code}'.")
            self._followable(link, fresh=fresh)
            _unexpired(link)
        if not count_click and link.clicks_left == 0:
            raise LinkExpiredError(f"The link '{code}' answered its last allowed click.")
        return Resolution(
            url=link.url,
            from_cache=from_cache,
            expires_at=link.expires_at,
            click_limited=link.click_limited,
            rules=link if link.has_rules else None,
            per_visitor=link.per_visitor,
            shown=None if shown is None else Interception(shown.shown, link),
        )

    def destination(
        self,
        resolution: Resolution,
        visitor: Callable[[], Visitor],
        draw: Callable[[], float] = random.random,
    ) -> Decision:
        """Where the visitor of a resolved link goes, and the rule that answered (``default`` for a
        plain link, without reading anything of the visitor). A rule's destination on a blocked
        host is gone, as the link's own URL would be (LinkGoneError)."""
        if resolution.rules is None:
            return Decision(resolution.url, "default")
        decision = decide(resolution.rules, resolution.url, visitor(), draw)
        if decision.rule != "default" and self._blocked_hosts is not None:
            host = check_host(decision.url, self._blocked_hosts, self._guard, fresh=False)
            if host is not None:
                raise LinkGoneError(
                    f"This link's destination leads to {host}, which is blocked on this shortener."
                )
        return decision

    def _followable(self, link: Link, *, fresh: bool) -> Link:
        link = _followable(link)
        if self._blocked_hosts is None:
            return link
        # A fresh answer (API Gateway refreshing its cache after a block) reads the blocklist itself.
        host = check_host(link.url, self._blocked_hosts, self._guard, fresh=fresh)
        if host is not None:
            raise LinkGoneError(
                f"The link '{link.code}' leads to {host}, which is blocked on this shortener."
            )
        return link

    def _take_click(self, code: str) -> Link | None:
        outcome = self._storage.take_click(code)
        link = outcome.link
        if outcome.counted or link is None or not link.active or not link.click_limited:
            # Not counted because the link is gone, taken down or lost its limit meanwhile: the
            # caller judges the link as it is.
            return link
        _unexpired(link)
        raise LinkExpiredError(f"The link '{code}' answered its last allowed click ({link.max_clicks}).")

    def forget(self, code: str) -> None:
        """Drop ``code`` from this container's memory (it was just changed here)."""
        if self._cache is not None:
            self._cache.forget(code)

    def check_code_key(self) -> None:
        """CodeKeyChangedError when the id counter was started under another code key."""
        stored = self._storage.counter_key()
        if stored and stored != self._generator.fingerprint:
            raise key_changed_error(stored, self._generator.fingerprint)

    def _claim_code(self, code: str, template: Link, *, is_custom: bool) -> tuple[Link, bool]:
        """Write ``code`` -> the URL unless the code is held; the owner holding it for the same
        URL is success. A code that was deleted or disabled is never given out again."""
        link = template.model_copy(update={"code": code, "is_custom": is_custom})
        generated_id = self._generator.id_of(code)
        try:
            existing = (
                self._storage.insert(link)
                if generated_id is None
                else self._storage.insert_reserving_id(link, generated_id, self._generator.fingerprint)
            )
        except IdAlreadyAllocatedError as exc:
            raise CodeTakenError(f"The code '{code}' is already in use.") from exc
        except CounterKeyMismatchError as exc:
            raise key_changed_error(exc.stored, self._generator.fingerprint) from exc
        if existing is None:
            return link, True
        if not existing.active:
            raise CodeTakenError(f"The code '{code}' was used before and is never given out again.")
        if existing.url == link.url and existing.owner == link.owner and _same_limits(existing, link):
            return existing, False
        raise CodeTakenError(f"The code '{code}' is already in use for another URL.")

    def _shorten_by_hash(self, template: Link) -> tuple[Link, bool]:
        for candidate in self._generator.hash_candidates(template.url):
            try:
                return self._claim_code(candidate, template, is_custom=False)
            except CodeTakenError:
                continue
        raise CodesExhaustedError(template.url)

    def _shorten_generated(self, template: Link) -> tuple[Link, bool]:
        key = url_key(template.url, template.owner)
        # A link with limits is a link of its own: it is never the one find-if-exists returns for
        # its URL, nor does it take the URL's plain link.
        find_if_exists = self._find_if_exists and not template.one_of_its_own
        if find_if_exists and (existing := self._storage.find_claim(key)) is not None:
            return existing, False
        for _ in range(_MAX_CODE_ATTEMPTS):
            link = template.model_copy(update={"code": self._generator.encode(self._ids.next_id())})
            if find_if_exists:
                outcome = self._storage.insert_with_claim(link, key)
                if outcome.created:
                    return link, True
                if outcome.existing is not None:
                    return outcome.existing, False
            elif self._storage.insert(link) is None:
                return link, True
        raise CodesExhaustedError(template.url)


def check_rule_hosts(guard: HostGuard, fields: dict[str, object]) -> None:
    """BlockedHostError naming the rule whose URL leads to a blocked host (one batched read)."""
    urls = rule_urls(fields)
    if not urls:
        return
    blocked = guard.blocked(url for _, url in urls)
    for name, url in urls:
        if url in blocked:
            raise BlockedHostError(f"{name}: {blocked[url]}")


def _same_limits(one: Link, other: Link) -> bool:
    # A password is never compared (its hash is salted anew): a link with one is never "the same".
    return (
        one.expires_at == other.expires_at
        and one.max_clicks == other.max_clicks
        and one.same_rules(other)
        and one.preview == other.preview
        and one.password_hash is None
        and other.password_hash is None
    )


def _unexpired(link: Link) -> None:
    if link.expires_at is not None and link.expires_at <= clock.now():
        raise LinkExpiredError(f"The link '{link.code}' expired at {link.expires_at.isoformat()}.")


def _followable(link: Link) -> Link:
    if not link.active:
        raise LinkGoneError(f"The link '{link.code}' was taken down by its owner or an admin.")
    return link
