"""``DELETE /clicks`` and ``GET /clicks/erasures/{erasure_id}`` (docs/clicks.md, "Erasing
clicks"): an owner (or an admin, for any owner) asks for the click events of some or all of their
links to be erased; the erasure is recorded and the jobs worker does it
(shortener.clicks.erasure), and its record says how far it got."""

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

from shortener import clock
from shortener.access.model import Caller
from shortener.clicks.event_reports import asked_codes
from shortener.clicks.model import ClickErasure
from shortener.clicks.store_erasures import ErasureRecord
from shortener.exceptions import ErasureNotFoundError, ErasureUnderWayError, ForbiddenError


class ErasureRecords(Protocol):
    """``shortener.clicks.store_erasures.ErasureRecords``."""

    def put(self, owner: str, erasure: str, codes: Sequence[str], requested_at: datetime) -> None: ...
    def get(self, owner: str, erasure: str) -> ErasureRecord | None: ...
    def running(self, owner: str) -> list[str]: ...


class StartErasure(Protocol):
    """Asks the jobs worker to erase (shortener.jobs.invoke.JobsWorker.erase_clicks)."""

    def __call__(self, *, owner: str, erasure: str, codes: Sequence[str], before: datetime) -> None: ...


class ClickErasures:
    def __init__(
        self,
        records: Callable[[], ErasureRecords],
        start: StartErasure,
        *,
        now: Callable[[], datetime] = clock.now,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        self._records = records
        self._start = start
        self._now = now
        self._new_id = new_id

    def erase(self, caller: Caller, owner: str | None, codes: Sequence[str]) -> ClickErasure:
        """Record the erasure of the owner's click events (of ``codes``, or all), and start it."""
        whose = _owner(caller, owner)
        asked = asked_codes(codes)
        records = self._records()
        # Each erasure reads every event file: one at a time per owner.
        if under_way := records.running(whose):
            raise ErasureUnderWayError(
                f"An erasure of this owner's clicks is under way ({under_way[0]}); ask again once it is done."
            )
        erasure, requested_at = self._new_id(), self._now()
        records.put(whose, erasure, asked, requested_at)
        self._start(owner=whose, erasure=erasure, codes=asked, before=requested_at)
        return ClickErasure(
            erasure_id=erasure,
            owner=whose,
            codes=asked,
            status="running",
            requested_at=requested_at.replace(microsecond=0),
            finished_at=None,
            objects_checked=0,
            objects_rewritten=0,
            events_erased=0,
        )

    def status(self, caller: Caller, owner: str | None, erasure: str) -> ClickErasure:
        found = self._records().get(_owner(caller, owner), erasure)
        if found is None:
            raise ErasureNotFoundError(f"No erasure {erasure} of this owner's clicks.")
        return ClickErasure(
            erasure_id=found.erasure_id,
            owner=found.owner,
            codes=found.codes,
            status="done" if found.finished_at else "running",
            requested_at=found.requested_at,
            finished_at=found.finished_at,
            objects_checked=found.objects_checked,
            objects_rewritten=found.objects_rewritten,
            events_erased=found.events_erased,
        )


def _owner(caller: Caller, owner: str | None) -> str:
    """Whose clicks: the caller's own (a key's: an open stack's anonymous callers erase nothing);
    another owner's only for an admin."""
    if caller.role == "anonymous":
        raise ForbiddenError("Erasing clicks needs an API key.")
    if not owner or owner == caller.owner_id:
        return caller.owner_id
    if not caller.is_admin:
        raise ForbiddenError("Only an admin may erase or see another owner's clicks.")
    return owner
