"""Changes in bulk: disable, enable, delete or set the fields of every link a selector matches.

``POST /links/batch`` checks the request and records the batch; the jobs worker runs it (an
asynchronous invoke), one page of links at a time: it selects the page (a slice of the listed
codes, a chunk of the job's rows, a page of the tag's links), changes each link through the same
rules as ``PATCH``/``DELETE /links/{code}`` (takedowns reach every cache at once, the prod stage's
included), stores the page's outcomes once and counts them once. An invocation near its end hands
over to a fresh one, so a batch of any size finishes (a 1,000,000-row job is 4,000 pages).

It survives a crash: Lambda retries a failed invocation; the invocation holds a lease on the
batch, renewed with every page; a status read of a batch whose lease lapsed starts it again; a
page run twice is stored and counted once, and its outcomes are those of one run: before a page
changes anything, the codes already as the batch would make them are stored once, so a rerun after
a crash mid-page still counts the links its first run changed as changed (not unchanged). A batch
taken over from a crashed holder ``MAX_TAKEOVERS`` times ends as "failed" instead of running forever."""

import re
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from pydantic import ValidationError

from shortener import clock
from shortener.access.model import Caller
from shortener.exceptions import (
    BatchNotFoundError,
    ConflictError,
    LinkGoneError,
    LinkNotFoundError,
    ShortenerError,
)
from shortener.jobs.batches_model import (
    BATCH_ID_TEXT,
    BATCH_OUTCOMES_PAGE,
    Batch,
    BatchOutcome,
    BatchPage,
    BatchRequest,
    BatchView,
)
from shortener.jobs.metering import map_in_context
from shortener.jobs.model import Job
from shortener.jobs.submit import job_for
from shortener.links.management import LinkManager, StageCacheInvalidator, require_key
from shortener.links.model import Link, LinkUpdate
from shortener.links.store_listing import LinkPage
from shortener.links.urls import UrlPolicy
from shortener.request_model import problems

# Links per page of a batch by codes or by tag (a job's page is one of its chunks: at most 1,000).
PAGE_LINKS = 250
# A holder that has not renewed its lease for this long is taken to have crashed.
LEASE_SECONDS = 300
MAX_TAKEOVERS = 3
# A batch invalidates the paths it changed at the edge, each page's in one request, up to this many
# paths in all (CloudFront charges $0.005 a path after the first 1,000 a month); past it, a
# wildcard (one path, the whole cache) at most once a minute and after the last page.
EDGE_PATHS = 1_000
EDGE_WILDCARD_SECONDS = 60.0
# Links of a page changed at once: each is a write's wait (and a stage cache refresh), so one at a
# time a batch changed about 8 links a second.
PAGE_THREADS = 16
# An invocation with less than this left hands over to a fresh one (a page takes far less).
HANDOVER_SECONDS = 120.0
_BATCH_ID = re.compile(BATCH_ID_TEXT)
# Pages of outcomes one status read answers (each at most 1,000 outcomes).
_STATUS_PAGES = 4


class EdgeCache(Protocol):
    """``shortener.links.edge_cache.EdgeCache``."""

    def invalidate(self, codes: list[str]) -> bool: ...
    def invalidate_all(self) -> bool: ...


class BatchRecords(Protocol):
    """``shortener.jobs.store.batches.BatchStore``."""

    def create(self, batch: Batch, *, expires_at: int, lease_until: int) -> None: ...
    def get(self, batch_id: str) -> tuple[Batch, int] | None: ...
    def claim(self, batch_id: str, holder: str, *, now: int, lease_until: int) -> int | None: ...
    def release(self, batch_id: str, holder: str, *, lease_until: int) -> None: ...
    def get_page(self, batch_id: str, page: int) -> BatchPage | None: ...
    def get_already(self, batch_id: str, page: int) -> set[str] | None: ...
    def put_already(self, batch_id: str, page: int, codes: set[str], *, expires_at: int) -> set[str]: ...
    def put_page(self, batch_id: str, page: int, outcomes: BatchPage, *, expires_at: int) -> BatchPage: ...
    def count_page(
        self, batch_id: str, page: int, outcomes: BatchPage, *, now: datetime, lease_until: int
    ) -> bool: ...
    def fail(self, batch_id: str, error: str, *, now: datetime) -> None: ...
    def read_pages(self, batch_id: str, first: int, *, most: int) -> list[tuple[int, BatchPage]]: ...


class Jobs(Protocol):
    def get_job(self, job_id: str) -> Job | None: ...


class JobCodeReader(Protocol):
    """``shortener.jobs.store.batches.JobCodes``."""

    def codes_from(self, job_id: str, chunk: int, *, chunks: int) -> tuple[list[str], int | None]: ...


class OwnerLinks(Protocol):
    """``shortener.links.store_listing.LinkIndex``."""

    def list_links(
        self,
        owner: str,
        *,
        before: str | None,
        limit: int,
        tag: str | None = None,
    ) -> LinkPage: ...


class TaggedLinkScan(Protocol):
    """``shortener.jobs.store.batches.TaggedLinks``: every owner's links with a tag (the tag index)."""

    def page(self, tag: str, start: str | None, *, limit: int) -> tuple[list[Link], str | None]: ...


# Starts (or continues) a batch in a fresh asynchronous invocation.
BatchStarter = Callable[[str], None]
# The stage cache refresher for a stage's base URL.
StageCacheFor = Callable[[str], StageCacheInvalidator]


class Batches:
    """Accepting batches and reporting on them (the API function)."""

    def __init__(
        self, records: BatchRecords, jobs: Jobs, start: BatchStarter, *, retention_days: int
    ) -> None:
        self._records = records
        self._jobs = jobs
        self._start = start
        self._retention_seconds = retention_days * 86_400

    def submit(self, caller: Caller, request: BatchRequest, *, stage_base_url: str | None) -> Batch:
        """Record the batch and start it; a job of another owner is JobNotFoundError (404), a job
        still being shortened a ConflictError (its links are not all made yet)."""
        require_key(caller)
        if request.job_id is not None:
            job = job_for(caller, self._jobs.get_job(request.job_id), request.job_id)
            if job.status != "done":
                raise ConflictError(
                    f"The job '{job.job_id}' is not done yet; change its links once it is done."
                )
        batch = Batch(
            batch_id=uuid.uuid4().hex,
            owner=caller.owner_id,
            role=caller.role,
            action=request.action,
            selector=request.selector,
            # Each code once, in the order given.
            codes=list(dict.fromkeys(request.codes or [])),
            job_id=request.job_id,
            tag=request.tag,
            set_fields=request.set.model_dump(mode="json", exclude_unset=True) if request.set else {},
            stage_base_url=stage_base_url,
            created_at=clock.now(),
        )
        now = clock.epoch_seconds()
        self._records.create(batch, expires_at=now + self._retention_seconds, lease_until=now + LEASE_SECONDS)
        self._start(batch.batch_id)
        return batch

    def status(self, caller: Caller, batch_id: str, cursor: str | None) -> BatchView:
        """The batch's counts and a page of its outcomes (from ``cursor``, a page number). A
        running batch whose holder stopped renewing its lease is started again."""
        require_key(caller)
        # A malformed id is unknown without a read (nor a key DynamoDB would refuse).
        found = self._records.get(batch_id) if _BATCH_ID.fullmatch(batch_id) else None
        if found is None or not (caller.is_admin or found[0].owner == caller.owner_id):
            raise BatchNotFoundError(f"You have no batch with the id '{batch_id[:64]}'.")
        batch, lease_until = found
        if batch.status == "running" and lease_until < clock.epoch_seconds():
            self._start(batch_id)
        first = int(cursor) if cursor and cursor.isdigit() and len(cursor) <= 7 else 0
        pages = [
            (number, page)
            for number, page in self._records.read_pages(batch_id, first, most=_STATUS_PAGES)
            if number < batch.pages
        ]
        outcomes = [outcome for _, page in pages for outcome in page.outcomes]
        after = pages[-1][0] + 1 if pages else first
        return BatchView(
            batch_id=batch.batch_id,
            action=batch.action,
            status=batch.status,
            total=batch.total,
            changed=batch.changed,
            unchanged=batch.unchanged,
            failed=batch.failed,
            created_at=batch.created_at,
            finished_at=batch.finished_at,
            error=batch.error or None,
            outcomes=outcomes[: BATCH_OUTCOMES_PAGE * _STATUS_PAGES],
            next_cursor=str(after) if after < batch.pages else None,
        )


class BatchRunner:
    """Runs batches, one page at a time (the jobs worker)."""

    def __init__(
        self,
        records: BatchRecords,
        manager: LinkManager,
        *,
        job_codes: JobCodeReader,
        owner_links: OwnerLinks,
        tagged_links: TaggedLinkScan,
        start: BatchStarter,
        stage_cache_for: StageCacheFor,
        policy: UrlPolicy,
        retention_days: int,
        on_stale_cache: Callable[[str], None] = lambda code: None,
        threads: int = PAGE_THREADS,
        edge: EdgeCache | None = None,
        on_ended: Callable[[Batch], None] | None = None,
    ) -> None:
        self._edge = edge
        # Told once of a batch that ended (batch.completed webhooks).
        self._on_ended = on_ended
        self._last_wildcard = float("-inf")
        self._records = records
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="batch-page")
        self._manager = manager
        self._job_codes = job_codes
        self._owner_links = owner_links
        self._tagged_links = tagged_links
        self._start = start
        self._stage_cache_for = stage_cache_for
        self._policy = policy
        self._retention_seconds = retention_days * 86_400
        self._on_stale_cache = on_stale_cache

    def run(self, batch_id: str, holder: str, seconds_left: Callable[[], float]) -> str:
        """Work on the batch until it is done or this invocation's time runs short (then hand over):
        "done", "failed", "handed_over", or "busy" (another invocation holds it, or it ended)."""
        now = clock.epoch_seconds()
        takeovers = self._records.claim(batch_id, holder, now=now, lease_until=now + LEASE_SECONDS)
        found = self._records.get(batch_id)
        if takeovers is None or found is None:
            return "busy"
        batch = found[0]
        if takeovers > MAX_TAKEOVERS:
            self._records.fail(
                batch_id, f"stalled: its work stopped {takeovers} times without finishing", now=clock.now()
            )
            return "failed"
        stage_cache = self._stage_cache_for(batch.stage_base_url) if batch.stage_base_url else None
        while batch.status == "running":
            if seconds_left() < HANDOVER_SECONDS:
                self._records.release(batch_id, holder, lease_until=clock.epoch_seconds() + LEASE_SECONDS)
                self._start(batch_id)
                return "handed_over"
            page = self._records.get_page(batch_id, batch.pages)
            if page is None:
                page = self._records.put_page(
                    batch_id,
                    batch.pages,
                    self._run_page(batch, stage_cache),
                    expires_at=clock.epoch_seconds() + self._retention_seconds,
                )
            self._records.count_page(
                batch_id,
                batch.pages,
                page,
                now=clock.now(),
                lease_until=clock.epoch_seconds() + LEASE_SECONDS,
            )
            found = self._records.get(batch_id)
            if found is None:
                return "busy"
            batch = found[0]
        self._records.release(batch_id, holder, lease_until=0)
        if self._on_ended is not None:
            self._on_ended(batch)
        return batch.status

    def _run_page(self, batch: Batch, stage_cache: StageCacheInvalidator | None) -> BatchPage:
        codes, next_cursor = self._select(batch)
        try:
            update = _update_for(batch)
        except ValidationError as exc:
            # Checked when accepted: an expires_at has passed since, say.
            message = f"The batch's change is no longer valid: {problems(exc)}."
            return BatchPage(
                [BatchOutcome(code=code, outcome="invalid", message=message) for code in codes], next_cursor
            )
        caller = Caller(owner_id=batch.owner, role=batch.role)
        # A code listed twice is changed once (two changes of one link at once would conflict).
        unique = list(dict.fromkeys(codes))
        read = self._manager.read_many(caller, unique)
        page = _PageChange(
            caller,
            batch.action,
            update,
            stage_cache,
            read,
            self._already_before(batch, caller, unique, read, update),
        )
        outcomes = dict(
            zip(unique, map_in_context(self._pool, lambda code: self._apply(page, code), unique), strict=True)
        )
        changed = [code for code, outcome in outcomes.items() if outcome.outcome == "changed"]
        if changed:
            # Once for the page: its links were written without it (LinkManager.update_link).
            self._manager.announce_takedowns()
        self._invalidate_at_edge(batch, changed, last_page=next_cursor is None)
        return BatchPage([outcomes[code] for code in codes], next_cursor)

    def _invalidate_at_edge(self, batch: Batch, changed: list[str], *, last_page: bool) -> None:
        """The edge forgets what the page changed (a rerun of the page sends it again)."""
        if self._edge is None:
            return
        if batch.changed + len(changed) <= EDGE_PATHS:
            if changed:
                self._edge.invalidate(changed)
        elif last_page or time.monotonic() - self._last_wildcard >= EDGE_WILDCARD_SECONDS:
            self._last_wildcard = time.monotonic()
            self._edge.invalidate_all()

    def _select(self, batch: Batch) -> tuple[list[str], str | None]:
        """The codes of the batch's next page, and where the page after starts (None: none)."""
        cursor = batch.cursor
        if batch.selector == "codes":
            start = int(cursor or 0)
            end = start + PAGE_LINKS
            return batch.codes[start:end], (str(end) if end < len(batch.codes) else None)
        if batch.selector == "job_id":
            assert batch.job_id is not None
            codes, next_chunk = self._job_codes.codes_from(batch.job_id, int(cursor or 0), chunks=1)
            return codes, (str(next_chunk) if next_chunk is not None else None)
        assert batch.tag is not None
        if batch.role == "admin":
            links, next_position = self._tagged_links.page(batch.tag, cursor, limit=PAGE_LINKS)
            return [link.code for link in links], next_position
        page = self._owner_links.list_links(batch.owner, before=cursor, limit=PAGE_LINKS, tag=batch.tag)
        return [link.code for link in page.links], page.next_position

    def _already_before(
        self, batch: Batch, caller: Caller, codes: list[str], read: dict[str, Link], update: LinkUpdate | None
    ) -> set[str]:
        """The codes of the page that were already as the batch makes them before any run of the
        page changed them (found in the page's first read and stored by its first run, read back
        by a rerun)."""
        stored = self._records.get_already(batch.batch_id, batch.pages)
        if stored is not None:
            return stored
        already = {code for code in codes if self._is_already(caller, code, read.get(code), update)}
        return self._records.put_already(
            batch.batch_id, batch.pages, already, expires_at=clock.epoch_seconds() + self._retention_seconds
        )

    def _is_already(self, caller: Caller, code: str, read: Link | None, update: LinkUpdate | None) -> bool:
        try:
            link = self._manager.checked(caller, code, read)
        except LinkGoneError:
            return update is None  # deleted already
        except ShortenerError:
            return False  # its outcome says why when the page runs
        return update is not None and _already(link, update)

    def _apply(self, page: "_PageChange", code: str) -> BatchOutcome:
        try:
            return self._change_reading_again(page, code)
        except LinkNotFoundError as exc:
            return BatchOutcome(code=code, outcome="not_found", message=str(exc))
        except LinkGoneError as exc:
            if page.action == "delete":
                return BatchOutcome(code=code, outcome="unchanged")
            return BatchOutcome(code=code, outcome="gone", message=str(exc))
        except ConflictError as exc:
            return BatchOutcome(code=code, outcome="conflict", message=str(exc))
        except ShortenerError as exc:
            return BatchOutcome(code=code, outcome="invalid", message=str(exc))

    def _change_reading_again(self, page: "_PageChange", code: str) -> BatchOutcome:
        try:
            return self._change(page, code, page.read.get(code))
        except ConflictError:
            # Changed since the page's read (a click counted on a limited link, say): read anew.
            return self._change(page, code, self._manager.read_many(page.caller, [code]).get(code))

    def _change(self, page: "_PageChange", code: str, read: Link | None) -> BatchOutcome:
        already_before = code in page.already
        try:
            link = self._manager.checked(page.caller, code, read)
        except LinkGoneError:
            if page.update is None and not already_before:  # deleted by this page's run that crashed
                return BatchOutcome(code=code, outcome="changed")
            raise
        if page.update is None:
            change = self._manager.delete_link(link, page.stage_cache, announce=False)
        elif already_before:
            return BatchOutcome(code=code, outcome="unchanged")
        else:
            # Written even when a crashed run of this page made the change already: the write is
            # the same, and the stage cache's entry is refreshed, which that run may not have done.
            change = self._manager.update_link(
                link, page.update, self._policy, page.stage_cache, announce=False
            )
        if change.stage_cache_invalidated is False:
            self._on_stale_cache(code)
        return BatchOutcome(code=code, outcome="changed")


@dataclass(frozen=True, slots=True)
class _PageChange:
    """What each link of a page is changed with: the change, and the page's links as read before
    any of them changed (by code; a code without a link is absent) with those already as the
    batch makes them."""

    caller: Caller
    action: str
    update: LinkUpdate | None
    stage_cache: StageCacheInvalidator | None
    read: dict[str, Link]
    already: set[str]


def _update_for(batch: Batch) -> LinkUpdate | None:
    """The PATCH a batch's action amounts to (None: a delete); ValidationError for a "set" whose
    values are no longer valid."""
    if batch.action == "disable":
        return LinkUpdate(status="disabled")
    if batch.action == "enable":
        return LinkUpdate(status="active")
    if batch.action == "set":
        return LinkUpdate.model_validate(batch.set_fields)
    return None


def _already(link: Link, update: LinkUpdate) -> bool:
    """Whether ``link`` already is what ``update`` would make it (nothing to write)."""
    wanted = update.model_dump(exclude_unset=True)
    current = {
        "status": link.status,
        "title": link.title,
        "tags": list(link.tags),
        "expires_at": link.expires_at,
        "max_clicks": link.max_clicks,
    }
    return all(current.get(name) == value for name, value in wanted.items())
