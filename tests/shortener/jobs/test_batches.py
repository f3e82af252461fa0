"""The rules of changes in bulk, against fakes: requests are checked as PATCH checks its fields;
a runner selects pages by codes, job or tag, hands over before its time runs out, and a page is
counted once however often it runs."""

from datetime import datetime
from typing import Any

import pytest
from pydantic import ValidationError

from shortener import clock
from shortener.exceptions import ConflictError, LinkGoneError, LinkNotFoundError
from shortener.jobs import batches as batch_logic
from shortener.jobs.batches import BatchRunner
from shortener.jobs.batches_model import Batch, BatchOutcome, BatchPage, BatchRequest
from shortener.links.management import Change
from shortener.links.model import Link, LinkUpdate
from shortener.links.store_listing import LinkPage
from shortener.links.urls import UrlPolicy


class Records:
    """An in-memory BatchStore with its conditional writes."""

    def __init__(self, batch: Batch) -> None:
        self.batch = batch
        self.lease: tuple[str | None, int] = (None, 0)
        self.takeovers = 0
        self.pages: dict[int, BatchPage] = {}
        self.already: dict[int, set[str]] = {}
        self.released: list[str] = []

    def get(self, batch_id: str) -> tuple[Batch, int]:
        return self.batch.model_copy(), self.lease[1]

    def claim(self, batch_id: str, holder: str, *, now: int, lease_until: int) -> int | None:
        current, until = self.lease
        if self.batch.status != "running" or (current not in (None, holder) and until >= now):
            return None
        if current not in (None, holder):
            self.takeovers += 1
        self.lease = (holder, lease_until)
        return self.takeovers

    def release(self, batch_id: str, holder: str, *, lease_until: int) -> None:
        self.released.append(holder)
        self.lease = (None, lease_until)

    def get_page(self, batch_id: str, page: int) -> BatchPage | None:
        return self.pages.get(page)

    def put_page(self, batch_id: str, page: int, outcomes: BatchPage, *, expires_at: int) -> BatchPage:
        return self.pages.setdefault(page, outcomes)

    def get_already(self, batch_id: str, page: int) -> set[str] | None:
        return self.already.get(page)

    def put_already(self, batch_id: str, page: int, codes: set[str], *, expires_at: int) -> set[str]:
        return self.already.setdefault(page, codes)

    def count_page(
        self, batch_id: str, page: int, outcomes: BatchPage, *, now: datetime, lease_until: int
    ) -> bool:
        if self.batch.pages != page:
            return False
        words = [o.outcome for o in outcomes.outcomes]
        self.batch = self.batch.model_copy(
            update={
                "pages": page + 1,
                "total": self.batch.total + len(words),
                "changed": self.batch.changed + words.count("changed"),
                "unchanged": self.batch.unchanged + words.count("unchanged"),
                "failed": self.batch.failed + sum(w not in ("changed", "unchanged") for w in words),
                "cursor": outcomes.next_cursor,
                "status": "running" if outcomes.next_cursor else "done",
            }
        )
        return True

    def fail(self, batch_id: str, error: str, *, now: datetime) -> None:
        self.batch = self.batch.model_copy(update={"status": "failed", "error": error})

    def read_pages(self, batch_id: str, first: int, *, most: int) -> list[tuple[int, BatchPage]]:
        return [(n, self.pages[n]) for n in sorted(self.pages) if n >= first][:most]


class Manager:
    """A LinkManager over a dict of links, recording what it was asked to do."""

    def __init__(self, links: dict[str, Link]) -> None:
        self.links = links
        self.writes: list[tuple[str, str]] = []
        self.reads: list[list[str]] = []
        self.announced = 0
        # Codes whose next write finds the link changed since it was read (once each).
        self.changed_meanwhile: set[str] = set()

    def get(self, caller: Any, code: str) -> Link:
        return self.checked(caller, code, self.links.get(code))

    def read_many(self, caller: Any, codes: list[str]) -> dict[str, Link]:
        self.reads.append(list(codes))
        return {code: self.links[code] for code in codes if code in self.links}

    def checked(self, caller: Any, code: str, link: Link | None) -> Link:
        if link is None or (link.owner != caller.owner_id and not caller.is_admin):
            raise LinkNotFoundError(code)
        if link.status == "deleted":
            raise LinkGoneError(code)
        return link

    def announce_takedowns(self) -> None:
        self.announced += 1

    def update_link(
        self, link: Link, update: LinkUpdate, policy: Any, stage_cache: Any = None, *, announce: bool = True
    ) -> Change:
        self._write(link, announce)
        changed = link.model_copy(update=update.model_dump(exclude_unset=True))
        self.links[link.code] = changed
        self.writes.append((link.code, "update"))
        return Change(changed, stage_cache(link.code) == 410 if stage_cache else None)

    def delete_link(self, link: Link, stage_cache: Any = None, *, announce: bool = True) -> Change:
        self._write(link, announce)
        self.links[link.code] = link.model_copy(update={"status": "deleted"})
        self.writes.append((link.code, "delete"))
        return Change(link, None)

    def _write(self, link: Link, announce: bool) -> None:
        assert not announce, "a batch announces its takedowns once a page"
        if link.code in self.changed_meanwhile:
            self.changed_meanwhile.discard(link.code)
            raise ConflictError(f"The link '{link.code}' changed meanwhile; read it again and retry.")


class Edge:
    """The edge's cache, recording the paths invalidated ("*": all of them)."""

    def __init__(self, invalidated: list[list[str]]) -> None:
        self.invalidated = invalidated

    def invalidate(self, codes: list[str]) -> bool:
        self.invalidated.append(sorted(codes))
        return True

    def invalidate_all(self) -> bool:
        self.invalidated.append(["*"])
        return True


class NoReads:
    def codes_from(self, job_id: str, chunk: int, *, chunks: int) -> tuple[list[str], int | None]:
        chunks_of_job = [["j0", "j1"], ["j2"]]
        return chunks_of_job[chunk], (chunk + 1 if chunk + 1 < len(chunks_of_job) else None)

    def list_links(self, owner: str, *, before: str | None, limit: int, **_: Any) -> LinkPage:
        return LinkPage([], None)

    def page(self, tag: str, start: str | None, *, limit: int) -> tuple[list[Link], str | None]:
        return [], None


def a_link(code: str, owner: str = "alice", status: str = "active") -> Link:
    return Link(
        code=code, url=f"https://example.com/{code}", created_at=clock.now(), owner=owner, status=status
    )  # type: ignore[arg-type]


def a_batch(**fields: Any) -> Batch:
    defaults: dict[str, Any] = {
        "batch_id": "b" * 32,
        "owner": "alice",
        "role": "member",
        "action": "disable",
        "selector": "codes",
        "created_at": clock.now(),
    }
    return Batch(**(defaults | fields))


def runner(
    records: Records,
    manager: Manager,
    started: list[str],
    refreshed: list[str] | None = None,
    reads: NoReads | None = None,
    edge: list[list[str]] | None = None,
) -> BatchRunner:
    reads = reads or NoReads()
    cache = refreshed if refreshed is not None else []

    def stage_cache_for(base_url: str) -> Any:
        def refresh(code: str) -> int:
            cache.append(base_url + code)
            return 410

        return refresh

    return BatchRunner(
        records,  # type: ignore[arg-type]
        manager,  # type: ignore[arg-type]
        job_codes=reads,
        owner_links=reads,
        tagged_links=reads,
        start=started.append,
        stage_cache_for=stage_cache_for,
        policy=UrlPolicy(allowed_schemes=frozenset({"https"}), max_length=2048, own_hosts=frozenset()),
        retention_days=1,
        edge=Edge(edge) if edge is not None else None,
    )


def test_a_request_needs_exactly_one_selector_and_set_only_with_set() -> None:
    assert BatchRequest.model_validate({"action": "delete", "tag": "spring"}).selector == "tag"
    for wrong in (
        {"action": "delete"},
        {"action": "delete", "tag": "a", "job_id": "a" * 32},
        {"action": "set", "tag": "a"},
        {"action": "enable", "tag": "a", "set": {"title": "x"}},
        {"action": "set", "tag": "a", "set": {}},
        {"action": "set", "tag": "a", "set": {"max_clicks": True}},
        {"action": "disable", "codes": ["x"] * 10_001},
    ):
        with pytest.raises(ValidationError):
            BatchRequest.model_validate(wrong)


def test_codes_are_run_in_pages_each_counted_once() -> None:
    # Given a batch of 5 codes (one of them another owner's) in pages of 2
    links = {code: a_link(code) for code in "abcd"} | {"e": a_link("e", owner="bob")}
    records = Records(a_batch(codes=list("abcde")))
    manager = Manager(links)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch_logic, "PAGE_LINKS", 2)
        outcome = runner(records, manager, []).run("b" * 32, "one", lambda: 900.0)
    # Then every page ran once and the counts add up
    assert outcome == "done"
    assert sorted(records.pages) == [0, 1, 2]
    assert (records.batch.total, records.batch.changed, records.batch.failed) == (5, 4, 1)
    assert [o.outcome for o in records.pages[2].outcomes] == ["not_found"]
    assert all(link.status == "disabled" for code, link in links.items() if code != "e")


def test_a_page_is_read_in_one_call_and_announces_its_takedowns_once() -> None:
    # Given a batch of 5 codes in pages of 2
    links = {code: a_link(code) for code in "abcde"}
    records = Records(a_batch(codes=list("abcde")))
    manager = Manager(links)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch_logic, "PAGE_LINKS", 2)
        runner(records, manager, []).run("b" * 32, "one", lambda: 900.0)
    # Then each page's links were read at once, and the takedown generation moved once a page
    # (not once a link: every change writing that one item would conflict on AWS)
    assert manager.reads == [["a", "b"], ["c", "d"], ["e"]]
    assert manager.announced == 3


def test_a_link_changed_since_the_pages_read_is_read_again_and_changed() -> None:
    links = {code: a_link(code) for code in "ab"}
    records = Records(a_batch(codes=["a", "b"]))
    manager = Manager(links)
    manager.changed_meanwhile = {"b"}
    runner(records, manager, []).run("b" * 32, "one", lambda: 900.0)
    assert [o.outcome for o in records.pages[0].outcomes] == ["changed", "changed"]
    assert manager.reads[-1] == ["b"] and links["b"].status == "disabled"


def test_a_stored_page_is_counted_not_run_again() -> None:
    records = Records(a_batch(codes=["a"]))
    records.pages[0] = BatchPage([BatchOutcome(code="a", outcome="changed")], None)
    manager = Manager({"a": a_link("a", status="disabled")})
    runner(records, manager, []).run("b" * 32, "retry", lambda: 900.0)
    assert manager.writes == []
    assert (records.batch.changed, records.batch.unchanged) == (1, 0)


def test_a_runner_short_of_time_hands_over_to_a_fresh_invocation() -> None:
    records = Records(a_batch(selector="job_id", job_id="a" * 32, codes=[]))
    links = {code: a_link(code) for code in ("j0", "j1", "j2")}
    started: list[str] = []
    left = iter([900.0, 10.0])
    assert runner(records, Manager(links), started).run("b" * 32, "one", lambda: next(left)) == "handed_over"
    assert started == ["b" * 32] and records.released == ["one"]
    assert (records.batch.pages, records.batch.cursor) == (1, "1")
    # The next invocation goes on from the next chunk
    assert runner(records, Manager(links), started).run("b" * 32, "two", lambda: 900.0) == "done"
    assert records.batch.total == 3


def test_already_so_is_unchanged_and_a_deleted_code_is_gone_except_for_delete() -> None:
    links = {"a": a_link("a", status="disabled"), "d": a_link("d", status="deleted")}
    records = Records(a_batch(codes=["a", "d"]))
    runner(records, Manager(links), []).run("b" * 32, "one", lambda: 900.0)
    assert [o.outcome for o in records.pages[0].outcomes] == ["unchanged", "gone"]
    records = Records(a_batch(action="delete", codes=["d"]))
    runner(records, Manager(links), []).run("b" * 32, "one", lambda: 900.0)
    assert [o.outcome for o in records.pages[0].outcomes] == ["unchanged"]


class CrashingManager(Manager):
    """Dies (as a killed invocation does) after ``writes_before_crash`` writes."""

    def __init__(self, links: dict[str, Link], writes_before_crash: int) -> None:
        super().__init__(links)
        self.left = writes_before_crash

    def update_link(
        self, link: Link, update: LinkUpdate, policy: Any, stage_cache: Any = None, *, announce: bool = True
    ) -> Change:
        self._one_more_write()
        return super().update_link(link, update, policy, stage_cache, announce=announce)

    def delete_link(self, link: Link, stage_cache: Any = None, *, announce: bool = True) -> Change:
        self._one_more_write()
        return super().delete_link(link, stage_cache, announce=announce)

    def _one_more_write(self) -> None:
        if self.left == 0:
            raise KeyboardInterrupt("killed")
        self.left -= 1


@pytest.mark.parametrize("action", ["disable", "delete"])
def test_a_page_rerun_after_a_crash_midway_counts_each_code_changed_once(action: str) -> None:
    # Given a page of 4 codes, one already disabled, whose first run dies after changing 2 links
    links = {"a": a_link("a"), "b": a_link("b", status="disabled"), "c": a_link("c"), "d": a_link("d")}
    if action == "delete":
        links["b"] = a_link("b", status="deleted")
    records = Records(a_batch(action=action, codes=list("abcd")))
    with pytest.raises(KeyboardInterrupt):
        runner(records, CrashingManager(links, 1), []).run("b" * 32, "killed", lambda: 900.0)
    # When the page runs again in a new invocation
    records.lease = (None, 0)
    runner(records, Manager(links), []).run("b" * 32, "retry", lambda: 900.0)
    # Then the links the first run changed count as changed, the one found so as unchanged
    assert [(o.code, o.outcome) for o in records.pages[0].outcomes] == [
        ("a", "changed"),
        ("b", "unchanged"),
        ("c", "changed"),
        ("d", "changed"),
    ]
    assert (records.batch.changed, records.batch.unchanged) == (3, 1)


def test_takedowns_refresh_the_stage_cache_entry_of_each_changed_code() -> None:
    refreshed: list[str] = []
    records = Records(a_batch(codes=["a", "b"], stage_base_url="https://api.example/prod/"))
    links = {"a": a_link("a"), "b": a_link("b", status="disabled")}
    runner(records, Manager(links), [], refreshed).run("b" * 32, "one", lambda: 900.0)
    assert refreshed == ["https://api.example/prod/a"]


def test_a_batch_taken_over_too_often_fails_instead_of_running_forever() -> None:
    records = Records(a_batch(codes=["a"]))
    records.takeovers = batch_logic.MAX_TAKEOVERS
    records.lease = ("crashed", 0)
    manager = Manager({"a": a_link("a")})
    assert runner(records, manager, []).run("b" * 32, "next", lambda: 900.0) == "failed"
    assert records.batch.status == "failed" and "stalled" in records.batch.error
    assert manager.writes == []


def test_a_jobs_rows_sharing_a_code_change_its_link_once_and_each_row_says_so() -> None:
    # Given a job whose first and third rows got the same code (FindIfExists)
    class SharedCodes(NoReads):
        def codes_from(self, job_id: str, chunk: int, *, chunks: int) -> tuple[list[str], int | None]:
            return ["j0", "j1", "j0"], None

    records = Records(a_batch(action="delete", selector="job_id", job_id="a" * 32, codes=[]))
    manager = Manager({code: a_link(code) for code in ("j0", "j1")})
    # When its links are deleted
    assert runner(records, manager, [], reads=SharedCodes()).run("b" * 32, "one", lambda: 900.0) == "done"
    # Then each link was deleted once (two deletes at once of one link would conflict) and every
    # row has its outcome, in order
    assert sorted(manager.writes) == [("j0", "delete"), ("j1", "delete")]
    assert [(o.code, o.outcome) for o in records.pages[0].outcomes] == [
        ("j0", "changed"),
        ("j1", "changed"),
        ("j0", "changed"),
    ]


def test_each_pages_changed_codes_are_invalidated_at_the_edge_in_one_request() -> None:
    # Given 5 codes in pages of 2: one already disabled, one another owner's
    links = {code: a_link(code) for code in "acd"} | {"b": a_link("b", status="disabled")}
    links["e"] = a_link("e", owner="bob")
    records = Records(a_batch(codes=list("abcde")))
    invalidated: list[list[str]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch_logic, "PAGE_LINKS", 2)
        runner(records, Manager(links), [], edge=invalidated).run("b" * 32, "one", lambda: 900.0)
    # Then each page sent one invalidation of the codes it changed, and nothing for the others
    assert invalidated == [["a"], ["c", "d"]]


def test_past_1000_changed_paths_a_batch_invalidates_everything_once_a_minute_and_at_its_end() -> None:
    # Given a batch that has changed 999 links already, with 6 more codes in pages of 2
    links = {code: a_link(code) for code in "abcdef"}
    records = Records(a_batch(codes=list("abcdef"), changed=999))
    invalidated: list[list[str]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch_logic, "PAGE_LINKS", 2)
        runner(records, Manager(links), [], edge=invalidated).run("b" * 32, "one", lambda: 900.0)
    # Then the page that goes past 1,000 paths sends a wildcard, the next (within the minute) none,
    # and the last one another wildcard
    assert invalidated == [["*"], ["*"]]
