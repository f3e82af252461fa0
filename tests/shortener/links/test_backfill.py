"""The tag index backfill's rules (shortener.links.backfill) over a store in memory: which links
get entries, where a run stops, how the cursor resumes, and that a finished backfill does nothing."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from freezegun import freeze_time

from shortener.links.backfill import BackfillProgress, ScannedPage, lacking_entries, run_backfill
from shortener.links.model import Link

CREATED = datetime(2026, 1, 1, tzinfo=UTC)


def link(code: str, *tags: str) -> Link:
    return Link(code=code, url=f"https://example.com/{code}", owner="alice", tags=tags, created_at=CREATED)


@dataclass
class MemoryStore:
    """Pages of links in scan order; entries by (code, tag); the cursor as the store keeps it."""

    pages: list[list[Link]]
    entries: set[tuple[str, str]] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)
    after: str | None = None
    done: bool = False
    since: datetime | None = CREATED
    scans: int = 0
    saves: list[tuple[str | None, BackfillProgress, int, int]] = field(default_factory=list)

    def progress(self) -> BackfillProgress:
        return BackfillProgress(self.after, self.done, self.since)

    def begin(self, now: datetime) -> None:
        self.since = self.since or now

    def scan_tagged(self, after: str | None) -> ScannedPage:
        self.scans += 1
        index = 0 if after is None else int(after) + 1
        return ScannedPage(
            links=self.pages[index],
            items_read=len(self.pages[index]) * 2,
            next_after=str(index) if index + 1 < len(self.pages) else None,
        )

    def present_entries(self, links: Sequence[Link]) -> set[tuple[str, str]]:
        return {pair for pair in self.entries if pair[0] in {link.code for link in links}}

    def write_entries(self, links: Sequence[Link]) -> tuple[int, list[str]]:
        unchanged = [link for link in links if link.code not in self.changed]
        self.entries |= {(link.code, tag) for link in unchanged for tag in link.tags}
        return sum(len(link.tags) for link in unchanged), [
            link.code for link in links if link.code in self.changed
        ]

    def save(self, started_after: str | None, progress: BackfillProgress, read: int, written: int) -> bool:
        if started_after != self.after or self.done:
            return False
        self.saves.append((started_after, progress, read, written))
        self.after, self.done = progress.after, progress.done
        return True


class Ticks:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1
        return self.now


def test_only_links_with_a_missing_entry_are_written() -> None:
    links = [link("a", "x", "y"), link("b", "x"), link("c", "y")]
    # a lacks y; b has its one entry; c lacks its one
    assert lacking_entries(links, {("a", "x"), ("b", "x")}) == [links[0], links[2]]
    assert lacking_entries(links, {("a", "x"), ("a", "y"), ("b", "x"), ("c", "y")}) == []


def test_runs_resume_from_the_saved_page_until_the_scan_ends_then_do_nothing() -> None:
    # Given three pages, a link in the second with its entries already
    store = MemoryStore([[link("a", "x")], [link("b", "x"), link("c", "y", "z")], [link("d", "x")]])
    store.entries.add(("b", "x"))
    pages: list[int] = []
    # When each run has time for one page (the clock passes the budget after the first)
    first = run_backfill(
        store, 0.5, on_page=lambda page: pages.append(page.entries_written), monotonic=Ticks()
    )
    second = run_backfill(store, 0.5, monotonic=Ticks())
    third = run_backfill(store, 0.5, monotonic=Ticks())
    # Then each run did one page from where the last stopped, and the last marked it done
    assert [len(run.pages) for run in (first, second, third)] == [1, 1, 1]
    assert (first.done, second.done, third.done) == (False, False, True)
    assert [save[0] for save in store.saves] == [None, "0", "1"]
    assert pages == [1]
    assert [run.entries_written for run in (first, second, third)] == [1, 2, 1]
    assert second.pages[0].links_indexed == 1 and second.pages[0].tagged_links == 2
    assert store.entries == {("a", "x"), ("b", "x"), ("c", "y"), ("c", "z"), ("d", "x")}
    # And a run after that scans nothing and writes nothing
    scans = store.scans
    after = run_backfill(store, 0.5, monotonic=Ticks())
    assert after.done and after.pages == [] and store.scans == scans


def test_a_run_with_time_left_goes_on_to_the_end() -> None:
    store = MemoryStore([[link("a", "x")], [], [link("b", "x")]])
    report = run_backfill(store, 100, monotonic=Ticks())
    assert report.done and len(report.pages) == 3
    assert report.items_read == 4 and report.entries_written == 2


def test_a_link_changed_since_the_page_was_read_is_counted_not_written() -> None:
    store = MemoryStore([[link("a", "x"), link("b", "x")]], changed={"b"})
    report = run_backfill(store, 100, monotonic=Ticks())
    [page] = report.pages
    assert (page.links_indexed, page.links_changed, page.entries_written) == (1, 1, 1)
    assert store.entries == {("a", "x")}


def test_a_run_whose_cursor_was_moved_by_another_stops_without_saving() -> None:
    store = MemoryStore([[link("a", "x")], [link("b", "x")]])

    class Overtaken(MemoryStore):
        def save(self, *args: object) -> bool:
            return False

    overtaken = Overtaken(store.pages)
    report = run_backfill(overtaken, 100, monotonic=Ticks())
    assert report.overtaken and not report.done and report.pages == [] and overtaken.scans == 1


def test_the_scan_starts_only_once_the_previous_versions_functions_have_ended() -> None:
    # Given a backfill no run has seen
    store = MemoryStore([[link("a", "x")]], since=None)
    # When runs come at the upgrade, just before the wait is over, and after it
    with freeze_time(CREATED):
        first = run_backfill(store, 100, monotonic=Ticks(), wait=timedelta(minutes=16))
    with freeze_time(CREATED + timedelta(minutes=15, seconds=59)):
        early = run_backfill(store, 100, monotonic=Ticks(), wait=timedelta(minutes=16))
    with freeze_time(CREATED + timedelta(minutes=16)):
        late = run_backfill(store, 100, monotonic=Ticks(), wait=timedelta(minutes=16))
    # Then the first recorded when it came, and only the last scanned
    assert store.since == CREATED
    assert first.pages == early.pages == [] and not first.done and not early.done
    assert late.done and late.entries_written == 1 and store.scans == 1
