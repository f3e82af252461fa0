"""What the API answers about clicks, one method per route: a link's clicks over a range, and the
caller's most followed links. Owner-scoped: another owner's link is a 404, as everywhere. (A
job's clicks per row are the job service's: ``shortener.jobs.service``.)"""

from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Protocol

from shortener import clock
from shortener.access.model import Caller
from shortener.clicks.counting import hour_of, link_report, parse_range, top_links, top_range
from shortener.clicks.model import LinkClicks, LinkTotals, StoredHour, TopLinks
from shortener.links.model import Link

_NO_TOTALS = LinkTotals()


class CallerLinks(Protocol):
    """Finds one of the caller's links or raises (``shortener.links.management.LinkManager``)."""

    def get(self, caller: Caller, code: str) -> Link: ...


class ClickCounters(Protocol):
    """What click reports read of the clicks table (``shortener.clicks.store.ClicksStore``)."""

    def hours(self, code: str, begin: datetime, end: datetime) -> list[StoredHour]: ...
    def totals(self, codes: Sequence[str]) -> dict[str, LinkTotals]: ...
    def owner_links(self, owner: str, days: Sequence[date]) -> dict[str, tuple[int, int]]: ...


class ClickReports:
    """Click reports read from the counters. ``counters`` is asked for on use: it raises
    ServiceUnavailableError where the stack counts no clicks."""

    def __init__(
        self,
        links: CallerLinks,
        counters: Callable[[], ClickCounters],
        now: Callable[[], datetime] = clock.now,
    ) -> None:
        self._links = links
        self._counters = counters
        self._now = now

    def link(
        self, caller: Caller, code: str, *, start: str | None, end: str | None, interval: str | None
    ) -> LinkClicks:
        """The caller's link's clicks from ``start`` to ``end`` (ISO 8601 query values; the last 30
        days by default) by ``interval`` (hour or day): totals, a series and top lists."""
        begin, to, every = parse_range(start, end, interval, self._now())
        link = self._links.get(caller, code)
        counters = self._counters()
        hours = counters.hours(link.code, hour_of(begin), to)
        totals = counters.totals([link.code]).get(link.code)
        return link_report(link.code, hours, totals or _NO_TOTALS, begin=begin, end=to, interval=every)

    def top(self, caller: Caller, *, start: str | None, end: str | None, base_url: str) -> TopLinks:
        """The caller's most followed links over a range of whole UTC days (an admin's own links
        too: links are filed under their owner)."""
        begin, to, days = top_range(start, end, self._now())
        counts = self._counters().owner_links(caller.owner_id, days)
        return top_links(counts, begin, to, base_url)
