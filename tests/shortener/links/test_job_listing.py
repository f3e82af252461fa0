"""``GET /links?job_id=`` reads the owner's index only between the job's record's creation and its
last progress (the job's own key bounds the read), and nothing for another owner's job."""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from shortener.access.model import Caller
from shortener.links.management import LinkManager
from shortener.links.search import LinkFilter
from shortener.links.store_listing import LinkPage

STARTED = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
ENDED = datetime(2026, 5, 1, 10, 5, tzinfo=UTC)


@dataclass
class Job:
    owner: str | None
    created_at: datetime = STARTED
    updated_at: datetime | None = ENDED
    complete: bool = True


@dataclass
class Index:
    calls: list[dict[str, Any]] = field(default_factory=list)

    def list_links(self, owner: str, **read: Any) -> LinkPage:
        self.calls.append({"owner": owner, **read})
        return LinkPage([], None)

    def position(self, link: Any) -> str:
        raise AssertionError("not reached")


@dataclass
class Jobs:
    jobs: dict[str, Job]

    def get_job(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)


def manager(index: Index, jobs: dict[str, Job]) -> LinkManager:
    return LinkManager(cast(Any, None), cast(Any, None), index, cast(Any, None), jobs=Jobs(jobs))


ALICE = Caller(owner_id="alice", role="member", key_id="k")


def test_a_done_jobs_links_are_read_between_its_start_and_its_last_progress() -> None:
    index = Index()
    manager(index, {"j1": Job("alice")}).list(ALICE, job_id="j1")
    [read] = index.calls
    assert read["after"] == "2026-05-01T09:59:00+00:00"
    assert read["before"] == "2026-05-01T10:06:00+00:00#~"
    assert read["where"] == LinkFilter(job_id="j1")


def test_a_running_job_is_read_from_its_start_to_the_newest_and_a_cursor_narrows_it() -> None:
    index = Index()
    manager(index, {"j1": Job("alice", complete=False)}).list(ALICE, job_id="j1")
    assert (index.calls[0]["after"], index.calls[0]["before"]) == ("2026-05-01T09:59:00+00:00", None)


def test_another_owners_job_or_an_unknown_one_reads_nothing() -> None:
    index = Index()
    assert manager(index, {"j1": Job("bob")}).list(ALICE, job_id="j1") == ([], None)
    assert manager(index, {}).list(ALICE, job_id="nope") == ([], None)
    assert index.calls == []
