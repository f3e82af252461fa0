"""Link management: an owner lists, reads, changes, disables and deletes their links; an admin
any link. A member never learns that another owner's link exists (it is a 404, as an unknown code
is). A change that redirects see (a new target, disabling, deleting) reaches every cache at once:
this container's, the other containers' (the takedown generation), and API Gateway's stage cache
(one entry invalidated, when the stage caches)."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from shortener import clock
from shortener.access.model import Caller
from shortener.access.takedown import EdgeInvalidator
from shortener.exceptions import (
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    LinkGoneError,
    LinkNotFoundError,
)
from shortener.http.paging import (
    LINKS_PAGE_SIZE,
    MAX_LINKS_PAGE_SIZE,
    decode_cursor,
    encode_cursor,
    page_size,
)
from shortener.links.codes import is_well_formed
from shortener.links.model import Link, LinkLimits, LinkUpdate, link_fields
from shortener.links.rules_model import RULE_FIELDS, with_normalised_rules
from shortener.links.search import LISTED_STATUSES, LinkFilter
from shortener.links.shortening import LinkService, check_rule_hosts
from shortener.links.store_changes import LinkChangedError
from shortener.links.store_listing import LinkPage
from shortener.links.urls import UrlPolicy, normalise_url, url_key


class StoredLinks(Protocol):
    """``shortener.links.store.LinksStore``."""

    def get(self, code: str, *, consistent: bool = False) -> Link | None: ...
    def get_many(self, codes: Sequence[str]) -> dict[str, Link]: ...


class LinkChanges(Protocol):
    """``shortener.links.store_changes.LinkChangesStore``."""

    def replace(self, seen: Link, changed: Link, *, drop_claim: str | None, takedown: bool) -> None: ...
    def announce_takedowns(self) -> None: ...


class OwnerIndex(Protocol):
    """``shortener.links.store_listing.LinkIndex``."""

    def list_links(
        self,
        owner: str,
        *,
        before: str | None,
        limit: int,
        tag: str | None = None,
        where: LinkFilter | None = None,
        after: str | None = None,
    ) -> LinkPage: ...

    def position(self, link: Link) -> str:
        """Where ``link`` is in its owner's listing (a page that ends with it continues below it)."""
        ...


class JobRecord(Protocol):
    """What a listing of a job's links reads of ``shortener.jobs.model.Job``."""

    @property
    def owner(self) -> str | None: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def updated_at(self) -> datetime | None: ...
    @property
    def complete(self) -> bool: ...


class JobRecords(Protocol):
    """``shortener.jobs.store.items.JobItems``."""

    def get_job(self, job_id: str) -> JobRecord | None: ...


# A job's links were created between its record's creation and its last progress; the window read
# is wider by this much on each side (the clocks of the functions that wrote them may differ).
JOB_WINDOW_MARGIN = timedelta(minutes=1)

# What GET /links may answer in one page (Lambda answers at most 6 MB), and a bound on what a link's
# view adds to its own JSON (its short URL's base, the field names).
LIST_PAGE_BYTES = 5_000_000
_VIEW_OVERHEAD = 400

# Refreshes the stage cache's entry of a code: the status of the fresh answer (None: no answer).
StageCacheInvalidator = Callable[[str], int | None]


@dataclass(frozen=True, slots=True)
class Change:
    """A change made, and whether API Gateway's cache took it (None: the stage has no cache)."""

    link: Link
    stage_cache_invalidated: bool | None = None
    # The link as it was before (for the audit log).
    before: Link | None = None


class LinkManager:
    """The link routes' rules (one instance per container)."""

    def __init__(
        self,
        links: StoredLinks,
        changes: LinkChanges,
        index: OwnerIndex,
        service: LinkService,
        *,
        redirect_status: int = 301,
        jobs: JobRecords | None = None,
        edge: EdgeInvalidator | None = None,
    ) -> None:
        self._jobs = jobs
        self._links = links
        self._changes = changes
        self._index = index
        self._service = service
        self._redirect_status = redirect_status
        self._edge = edge

    def get(self, caller: Caller, code: str) -> Link:
        """The caller's link ``code`` (any link for an admin)."""
        require_key(caller)
        link = self._links.get(code, consistent=True) if is_well_formed(code) else None
        return self.checked(caller, code, link)

    def read_many(self, caller: Caller, codes: Sequence[str]) -> dict[str, Link]:
        """The links stored under ``codes``, by code, as ``checked`` takes them: one consistent
        BatchGetItem per 100 codes instead of a read each."""
        require_key(caller)
        return self._links.get_many([code for code in codes if is_well_formed(code)])

    def checked(self, caller: Caller, code: str, link: Link | None) -> Link:
        """``link`` (as read under ``code``) if it is the caller's (any link for an admin) and not
        deleted: LinkNotFoundError or LinkGoneError as ``get`` says otherwise."""
        if link is None or not (
            caller.is_admin or (link.owner is not None and link.owner == caller.owner_id)
        ):
            # Another owner's link is indistinguishable from no link at all.
            raise LinkNotFoundError(f"You have no link with the code '{code[:64]}'.")
        if link.status == "deleted":
            raise LinkGoneError(f"The link '{code}' was deleted.")
        return link

    def announce_takedowns(self) -> None:
        """Tell every container that links were taken down (see ``announce`` of ``update_link``)."""
        self._changes.announce_takedowns()

    def list(
        self,
        caller: Caller,
        *,
        owner: str | None = None,
        cursor: str | None = None,
        limit: int = LINKS_PAGE_SIZE,
        tag: str | None = None,
        q: str | None = None,
        job_id: str | None = None,
        status: str | None = None,
        domain: str | None = None,
    ) -> tuple[list[Link], str | None]:
        """A page of the caller's links (an admin may name another ``owner``), newest first, and
        the cursor of the next page; only those with ``tag``, matching the search ``q``
        (shortener.links.search), of the bulk job ``job_id`` and of the listed ``status``, when
        given, and of ``domain`` (as links store it: search.DEFAULT_DOMAIN for the default one). The
        page is full unless no later link matches."""
        require_key(caller)
        wanted = owner or caller.owner_id
        if wanted != caller.owner_id and not caller.is_admin:
            raise ForbiddenError("Only an admin can list another owner's links.")
        before, size = decode_cursor(cursor), page_size(limit, MAX_LINKS_PAGE_SIZE)
        where = LinkFilter.of(q=q, tag=tag, job_id=job_id, status=_listed_status(status), domain=domain)
        after = None
        if where.job_id and self._jobs is not None:
            window = self._job_window(where.job_id, wanted)
            if window is None:
                return [], None
            after, newest = window
            before = min(before, newest) if before and newest else before or newest
        page = self._index.list_links(wanted, before=before, limit=size, where=where, after=after)
        links, next_position = page.links, page.next_position
        # A page of long URLs ends early, its answer under Lambda's 6 MB; the cursor goes on from there.
        shown = _within_bytes(links, LIST_PAGE_BYTES)
        if shown < len(links):
            links, next_position = links[:shown], self._index.position(links[shown - 1])
        next_cursor = encode_cursor(next_position) if next_position else None
        return links, next_cursor

    def _job_window(self, job_id: str, owner: str) -> tuple[str, str | None] | None:
        """The listing positions the job's links lie between (the newest None: the job still
        runs), or None when ``owner`` has no such job: a job's own key bounds its links' read."""
        assert self._jobs is not None
        job = self._jobs.get_job(job_id)
        if job is None or job.owner != owner:
            return None
        first = (job.created_at - JOB_WINDOW_MARGIN).astimezone(UTC).isoformat()
        if not job.complete or job.updated_at is None:
            return first, None
        return first, (job.updated_at + JOB_WINDOW_MARGIN).astimezone(UTC).isoformat() + "#~"

    def update(
        self,
        caller: Caller,
        code: str,
        update: LinkUpdate,
        policy: UrlPolicy,
        stage_cache: StageCacheInvalidator | None = None,
    ) -> Change:
        """Change the link's target, title, tags or status; the code stays the same."""
        return self.update_link(self.get(caller, code), update, policy, stage_cache)

    def update_link(
        self,
        link: Link,
        update: LinkUpdate,
        policy: UrlPolicy,
        stage_cache: StageCacheInvalidator | None = None,
        *,
        announce: bool = True,
    ) -> Change:
        """``update`` applied to ``link`` (as read for a caller who may change it). A takedown
        moves the table's takedown generation in the same write, so that every container's cache
        forgets the link; with ``announce`` False the caller moves it once for many links
        (``announce_takedowns``): one item that every change writes in a transaction makes
        concurrent changes conflict (TransactionConflict)."""
        fields: dict[str, object] = {"updated_at": clock.now()}
        update = with_normalised_rules(update, policy)
        if update.url is not None:
            url = normalise_url(update.url, policy)
            if url != link.url and self._service.guard is not None:
                self._service.guard.check(url)
            fields["url"] = url
        # The link's own attributes (title, tags): sent as null, left as they are.
        fields.update(
            (name, value)
            for name, value in link_fields(update).items()
            if value is not None and name not in LinkLimits.model_fields and name not in RULE_FIELDS
        )
        # A rule sent as null is removed (forward_query: false).
        rules = {
            name: (False if name == "forward_query" else None) if value is None else value
            for name, value in link_fields(update).items()
            if name in RULE_FIELDS and name in update.model_fields_set
        }
        if rules and self._service.guard is not None:
            check_rule_hosts(self._service.guard, rules)
        fields.update(rules)
        if update.status is not None:
            fields["status"] = update.status
        # Sent as null, a limit is removed; a click count is kept while the link has a limit.
        if "expires_at" in update.model_fields_set:
            fields["expires_at"] = update.expires_at
        if "max_clicks" in update.model_fields_set:
            fields["max_clicks"] = update.max_clicks
            if update.max_clicks is None:
                fields["clicks"] = 0
                fields["served"] = 0
        # Sent as null, the password or the preview is removed.
        if "password" in update.model_fields_set and update.password is None:
            fields["password_hash"] = None
        if "preview" in update.model_fields_set and update.preview is None:
            fields["preview"] = None
        changed = link.model_copy(update=fields)
        retargeted = changed.url != link.url
        limits_changed = (
            changed.expires_at,
            changed.max_clicks,
            changed.password_hash,
            changed.preview,
        ) != (
            link.expires_at,
            link.max_clicks,
            link.password_hash,
            link.preview,
        ) or not changed.same_rules(link)
        # The old URL's find-if-exists claim must not hand out this code for it any more; nor
        # may a disabled link be handed out. A re-enabled link does not claim its URL again.
        # A link that gains rules, a password or a preview is no longer its URL's plain link.
        leaves_claim = (
            retargeted
            or (changed.status != "active" and link.status == "active")
            or (changed.has_rules and not link.has_rules)
            or (changed.per_visitor and not link.per_visitor)
        )
        return self._apply(
            link,
            changed,
            drop_claim=url_key(link.url, link.owner) if leaves_claim else None,
            # New limits or rules change what redirects answer: every cache must forget the old ones.
            takedown=retargeted or changed.status != link.status or limits_changed,
            stage_cache=stage_cache,
            announce=announce,
        )

    def delete(self, caller: Caller, code: str, stage_cache: StageCacheInvalidator | None = None) -> Change:
        """Delete the link: its code answers 410 from now on and is never given out again."""
        return self.delete_link(self.get(caller, code), stage_cache)

    def delete_link(
        self, link: Link, stage_cache: StageCacheInvalidator | None = None, *, announce: bool = True
    ) -> Change:
        """Delete ``link`` (as read for a caller who may delete it); ``announce`` as for
        ``update_link``."""
        tombstone = link.model_copy(update={"status": "deleted", "updated_at": clock.now()})
        return self._apply(
            link,
            tombstone,
            drop_claim=url_key(link.url, link.owner),
            takedown=True,
            stage_cache=stage_cache,
            announce=announce,
        )

    def _apply(
        self,
        link: Link,
        changed: Link,
        *,
        drop_claim: str | None,
        takedown: bool,
        stage_cache: StageCacheInvalidator | None,
        announce: bool,
    ) -> Change:
        try:
            self._changes.replace(link, changed, drop_claim=drop_claim, takedown=takedown and announce)
        except LinkChangedError as exc:
            raise ConflictError(
                f"The link '{link.code}' changed meanwhile; read it again and retry."
            ) from exc
        if not takedown:
            return Change(changed, before=link)
        self._service.forget(link.code)
        if self._edge is not None:
            self._edge([link.code])
        if stage_cache is None:
            return Change(changed, before=link)
        # The refreshed entry must hold the new answer: the redirect, or 410 for a takedown.
        expected = self._redirect_status if changed.active and not changed.expired(clock.now()) else 410
        return Change(changed, stage_cache_invalidated=stage_cache(link.code) == expected, before=link)


def _within_bytes(links: list[Link], budget: int) -> int:
    """How many of ``links`` (at least one) a page shows within about ``budget`` bytes of JSON."""
    used = 0
    for count, link in enumerate(links):
        # The link's own JSON, its short URL (a base and the code) and the view's field names.
        used += len(link.model_dump_json()) + len(link.code) + _VIEW_OVERHEAD
        if used > budget and count:
            return count
    return len(links)


def require_key(caller: Caller) -> None:
    """ForbiddenError for a caller without a key (everyone is the same anonymous owner then)."""
    if caller.role == "anonymous":
        raise ForbiddenError("Managing links needs an API key (send it in X-Api-Key).")


def _listed_status(status: str | None) -> str | None:
    """``status`` if it is one the link list shows (or absent), else InvalidRequestError."""
    if status and status not in LISTED_STATUSES:
        raise InvalidRequestError(f"status must be one of {', '.join(LISTED_STATUSES)}.")
    return status or None
