"""What the API answers about clicks, one method per route: a link's clicks over a range, the daily
clicks of a list of links, and the caller's most followed links. Owner-scoped: another owner's
link is a 404, as everywhere. (A job's clicks per row are the job service's:
``shortener.jobs.service``.)"""

from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Protocol

from shortener import clock
from shortener.access.model import Caller
from shortener.clicks.counting import hour_of, link_report, parse_range, top_links, top_range
from shortener.clicks.model import (
    MAX_SERIES_CODES,
    LinkClicks,
    LinkSeries,
    LinksSeries,
    LinkTotals,
    StoredHour,
    TopLinks,
)
from shortener.exceptions import InvalidRequestError
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

    def series(
        self, caller: Caller, codes: Sequence[str], *, start: str | None, end: str | None
    ) -> LinksSeries:
        """The daily clicks of each of the caller's ``codes`` (at most MAX_SERIES_CODES, in the order
        given, repeats once), over the last 30 days by default: one answer for a page of links."""
        unique = list(dict.fromkeys(code for code in codes if code))
        if not unique or len(unique) > MAX_SERIES_CODES:
            raise InvalidRequestError(f"codes: give 1 to {MAX_SERIES_CODES} codes, separated by commas.")
        begin, to, every = parse_range(start, end, "day", self._now())
        counters = self._counters()
        links = []
        for code in unique:
            link = self._links.get(caller, code)
            hours = counters.hours(link.code, hour_of(begin), to)
            report = link_report(link.code, hours, _NO_TOTALS, begin=begin, end=to, interval=every)
            links.append(
                LinkSeries(code=link.code, total=report.total, humans=report.humans, series=report.series)
            )
        return LinksSeries(**{"from": begin}, to=to, interval=every, links=links)

    def top(self, caller: Caller, *, start: str | None, end: str | None, base_url: str) -> TopLinks:
        """The caller's most followed links over a range of whole UTC days (an admin's own links
        too: links are filed under their owner)."""
        begin, to, days = top_range(start, end, self._now())
        counts = self._counters().owner_links(caller.owner_id, days)
        return top_links(counts, begin, to, base_url)
