"""The tag index's backfill: gives the links tagged before the tag index existed their entries
(shortener.links.store_items.tag_items), once, after an upgrade, with no operator step.

The restarter runs it on its schedule (every minute): each run reads where the backfill got to (one
GetItem on the links table's ``#migrations`` item), scans on from there page by page (a Scan page
is at most 1 MB, and continues from its LastEvaluatedKey:
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Scan.html#Scan.Pagination) for at
most its time budget, and saves its cursor after each page; the page that ends the scan marks the
backfill done, and from then on a run costs that one GetItem. Of a page's tagged links, those
lacking an entry get theirs, written only if the link is unchanged since the page read it: a link
changed since has had its entries written by that change. Everything here can be done twice
(a crash before a save, two runs at once): an entry written again is the same item, and a cursor
is saved only over the one it started from, so a run that lost that race stops."""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from shortener import clock
from shortener.links.model import Link

# How long after the upgrade the scan starts: a function still running the previous version (the
# jobs worker runs up to 900 s) may write a tagged link without entries until then, and the scan
# must not have passed it already.
WAIT_AFTER_UPGRADE = timedelta(seconds=960)


@dataclass(frozen=True, slots=True)
class BackfillProgress:
    """Where the backfill got to: ``since`` when a run of this version first saw it (None: not
    yet), ``after`` the code the scan continues after (None: from the start), ``done`` once the
    whole table has been scanned."""

    after: str | None = None
    done: bool = False
    since: datetime | None = None


@dataclass(frozen=True, slots=True)
class ScannedPage:
    """One Scan page: the tagged links in it, how many items it read, and the code the next page
    continues after (None: the scan has ended)."""

    links: list[Link]
    items_read: int
    next_after: str | None


@dataclass(frozen=True, slots=True)
class PageReport:
    """What one page did (logged per page)."""

    items_read: int
    tagged_links: int
    links_indexed: int
    entries_written: int
    links_changed: int
    done: bool


@dataclass(slots=True)
class BackfillReport:
    """One run: its pages, whether the backfill is done, and whether another run had moved the
    cursor (this one then stopped)."""

    done: bool = False
    pages: list[PageReport] = field(default_factory=list)
    overtaken: bool = False

    @property
    def entries_written(self) -> int:
        return sum(page.entries_written for page in self.pages)

    @property
    def items_read(self) -> int:
        return sum(page.items_read for page in self.pages)


class BackfillStorage(Protocol):
    """What the backfill reads and writes (shortener.links.store_backfill)."""

    def progress(self) -> BackfillProgress: ...

    def begin(self, now: datetime) -> None:
        """Record ``now`` as ``since``, unless a run recorded it already."""
        ...

    def scan_tagged(self, after: str | None) -> ScannedPage: ...

    def present_entries(self, links: Sequence[Link]) -> set[tuple[str, str]]:
        """The (code, tag) pairs of ``links`` whose entry exists."""
        ...

    def write_entries(self, links: Sequence[Link]) -> tuple[int, list[str]]:
        """Write every entry of each of ``links`` that is unchanged since read: the entries
        written, and the codes of the links changed since (nothing written for them)."""
        ...

    def save(self, started_after: str | None, progress: BackfillProgress, read: int, written: int) -> bool:
        """Record ``progress`` unless the cursor is no longer ``started_after`` (False)."""
        ...


def lacking_entries(links: Sequence[Link], present: set[tuple[str, str]]) -> list[Link]:
    """The links with a tag whose entry is not in ``present``."""
    return [link for link in links if any((link.code, tag) not in present for tag in link.tags)]


def run_backfill(
    store: BackfillStorage,
    budget_seconds: float,
    *,
    on_page: Callable[[PageReport], None] = lambda page: None,
    monotonic: Callable[[], float] = time.monotonic,
    wait: timedelta = WAIT_AFTER_UPGRADE,
) -> BackfillReport:
    """Scan on from where the backfill got to, a page at a time, until the scan ends or
    ``budget_seconds`` have passed (a page begun is finished and saved); the first run of this
    version only records when it came, and the scan starts ``wait`` after that."""
    progress = store.progress()
    report = BackfillReport(done=progress.done)
    if progress.done:
        return report
    if progress.since is None:
        store.begin(clock.now())
        return report
    if clock.now() - progress.since < wait:
        return report
    started = monotonic()
    while not progress.done:
        page = store.scan_tagged(progress.after)
        lacking = lacking_entries(page.links, store.present_entries(page.links))
        written, changed = store.write_entries(lacking) if lacking else (0, [])
        reached = BackfillProgress(after=page.next_after, done=page.next_after is None)
        if not store.save(progress.after, reached, page.items_read, written):
            report.overtaken = True
            break
        progress = reached
        page_report = PageReport(
            items_read=page.items_read,
            tagged_links=len(page.links),
            links_indexed=len(lacking) - len(changed),
            entries_written=written,
            links_changed=len(changed),
            done=reached.done,
        )
        report.pages.append(page_report)
        on_page(page_report)
        if monotonic() - started >= budget_seconds:
            break
    report.done = progress.done
    return report
