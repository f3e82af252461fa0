"""What the API answers about clicks, one method per route: a link's clicks over a range, the daily
clicks of a list of links, and the caller's most followed links. Owner-scoped: another owner's
link is a 404, as everywhere. (A job's clicks per row are the job service's:
``shortener.jobs.service``.)"""

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime
from typing import Protocol
from zoneinfo import ZoneInfo

from shortener import clock
from shortener.access.model import Caller
from shortener.clicks.counting import destinations_of, hour_of, link_report, parse_range, top_links, top_range
from shortener.clicks.event_queries import (
    GROUP_COLUMNS,
    EventSelection,
    Query,
    answers_query,
    breakdown_query,
    codes_series_query,
    groups_query,
    lifetime_query,
    series_query,
    totals_query,
)
from shortener.clicks.event_reports import (
    MAX_GROUPS,
    EventAsk,
    all_time_of,
    asked_codes,
    event_ask,
    groups_of,
    lifetime_totals,
    selection_of,
    series_answer,
)
from shortener.clicks.model import (
    MAX_SERIES_CODES,
    MAX_TOP_VALUES,
    TOP_BY,
    TOP_LINKS,
    TOP_VALUES,
    Interval,
    LinkClicks,
    LinkSeries,
    LinksSeries,
    LinkTotals,
    StoredHour,
    TopLink,
    TopLinks,
    TopValues,
    ValueCount,
)
from shortener.exceptions import InvalidRequestError, ServiceUnavailableError
from shortener.links.domains import ShortUrls
from shortener.links.model import Link

_NO_TOTALS = LinkTotals()
# A code no link has ("#" never appears in one): what a selection of no links selects.
_NO_CODE = "#none"


class CallerLinks(Protocol):
    """Finds one of the caller's links or raises (``shortener.links.management.LinkManager``)."""

    def get(self, caller: Caller, code: str) -> Link: ...


class ClickCounters(Protocol):
    """What click reports read of the clicks table (``shortener.clicks.store.ClicksStore``)."""

    def hours(self, code: str, begin: datetime, end: datetime) -> list[StoredHour]: ...
    def totals(self, codes: Sequence[str]) -> dict[str, LinkTotals]: ...
    def owner_links(self, owner: str, days: Sequence[date]) -> dict[str, tuple[int, int]]: ...


class ClickEvents(Protocol):
    """The click events, asked through Athena (``shortener.clicks.event_store.ClickEventStore``)."""

    table: str
    answers: str | None

    def rows(self, query: Query) -> list[dict[str, str | None]]: ...


# What a link report's breakdowns may be by, and the top lists an events report fills.
OWNER_GROUPS = ("country", "device", "browser", "os", "referrer", "destination", "code")
# (A link's clicks by code are one group: asked for alike, it answers alike.)
LINK_GROUPS = OWNER_GROUPS
_TOP_LISTS = {
    "country": "countries",
    "referrer": "referrers",
    "device": "devices",
    "browser": "browsers",
    "os": "os",
}


class ClickReports:
    """Click reports read from the click events, and from the counters where the stack keeps them
    (they answer a report's totals, series and top lists in milliseconds; the events answer what
    only they can: visitors, a time zone, filters, breakdowns). ``counters`` is asked for on use:
    None where the stack keeps no counters (ServiceUnavailableError where it counts no clicks);
    ``events`` gives None where the stack keeps no click events."""

    def __init__(
        self,
        links: CallerLinks,
        counters: Callable[[], ClickCounters | None],
        now: Callable[[], datetime] = clock.now,
        *,
        events: Callable[[], ClickEvents | None] = lambda: None,
        tagged: Callable[[str, str], list[str]] = lambda owner, tag: [],
        link_domains: Callable[[Sequence[str]], Mapping[str, str | None]] = lambda codes: {},
    ) -> None:
        self._links = links
        self._counters = counters
        self._now = now
        self._events = events
        # owner, tag -> the codes of the owner's links with the tag (at most MAX_TAGGED_CODES).
        self._tagged = tagged
        # codes -> the domain of each one's link (None: the default domain; a code no link has any
        # more is left out).
        self._link_domains = link_domains

    def link(self, caller: Caller, code: str, query: Mapping[str, str | None]) -> LinkClicks:
        """The caller's link's clicks from ``from`` to ``to`` (ISO 8601; the last 30 days by
        default) by ``interval``: totals, visitors, a series, top lists, and with ``group_by`` a
        breakdown; filtered by ``country``, ``device``, ``browser``, ``os``, ``referrer``, ``bots``."""
        begin, to, every = parse_range(query.get("from"), query.get("to"), query.get("interval"), self._now())
        ask = event_ask(query, group_values=LINK_GROUPS)
        link = self._links.get(caller, code)
        counters = self._counters()
        events = self._events()
        if events is None:
            if counters is None:
                raise ServiceUnavailableError("This stack keeps no clicks (no counters, no click events).")
            if ask.needs_events(every):
                raise InvalidRequestError(
                    "This stack keeps no click events: "
                    "ask without tz, filters, bots, group_by, week or month."
                )
            hours = counters.hours(link.code, hour_of(begin), to)
            totals = counters.totals([link.code]).get(link.code) or _NO_TOTALS
            return link_report(link.code, hours, totals, begin=begin, end=to, interval=every)
        selection = selection_of(ask, owner=link.owner or "", begin=begin, end=to, codes=[link.code])
        if counters is not None and not ask.needs_events(every):
            # The counters answer fast; only the visitors are the events'.
            hours = counters.hours(link.code, hour_of(begin), to)
            totals = counters.totals([link.code]).get(link.code) or _NO_TOTALS
            report = link_report(link.code, hours, totals, begin=begin, end=to, interval=every)
            [row] = events.rows(totals_query(selection, events.table)) or [{}]
            return report.model_copy(update={"visitors": int(row.get("visitors") or 0)})
        return self._events_report(events, counters, link=link, selection=selection, ask=ask, every=every)

    def _events_report(
        self,
        events: ClickEvents,
        counters: ClickCounters | None,
        *,
        link: Link,
        selection: EventSelection,
        ask: EventAsk,
        every: Interval,
    ) -> LinkClicks:
        """A link's report from its events: the series, the breakdowns, and where the stack keeps
        no counters its answers by rule and all-time totals, asked at once."""
        dimensions = [
            *_TOP_LISTS,
            *([ask.group_by] if ask.group_by and ask.group_by not in _TOP_LISTS else []),
        ]
        asked = [
            series_query(selection, events.table),
            breakdown_query(selection, events.table, dimensions, events.answers),
        ]
        if counters is None:
            # All time: since the link was made (its code's events from before are another link's).
            lifetime = EventSelection(
                owner=selection.owner, begin=link.created_at, end=self._now(), codes=selection.codes
            )
            asked.append(lifetime_query(lifetime, events.table))
            if events.answers is not None:
                asked.append(answers_query(link.code, selection.begin, selection.end, events.answers))
        with ThreadPoolExecutor(max_workers=len(asked)) as pool:
            answers = list(pool.map(events.rows, asked))
        answer = series_answer(
            answers[0], begin=selection.begin, end=selection.end, interval=every, tz=ask.tz
        )
        by_dimension: dict[str, list[dict[str, str | None]]] = {}
        for row in answers[1]:
            by_dimension.setdefault(str(row.get("dimension")), []).append(row)
        if counters is not None:
            # Which rule answered is counted beside the clicks (docs/clicks.md, "Destinations").
            hours = counters.hours(link.code, hour_of(selection.begin), selection.end)
            totals = counters.totals([link.code]).get(link.code) or _NO_TOTALS
            counted = link_report(
                link.code, hours, totals, begin=selection.begin, end=selection.end, interval="hour"
            )
            destinations, all_time = counted.destinations, counted.all_time
        else:
            rule_rows = answers[3] if len(answers) > 3 else []
            by_rule = {
                str(row["value"]): int(row.get("clicks") or 0) for row in rule_rows if row.get("value")
            }
            destinations = destinations_of(answer.total, by_rule)
            all_time = all_time_of(lifetime_totals(answers[2]).get(link.code))
        tops = {
            field_name: [
                ValueCount(value=str(row["value"]), clicks=int(row.get("clicks") or 0))
                for row in by_dimension.get(dimension, [])
                if row.get("value") is not None
            ][:TOP_VALUES]
            for dimension, field_name in _TOP_LISTS.items()
        }
        return LinkClicks(
            code=link.code,
            total=answer.total,
            humans=answer.humans,
            bots=answer.total - answer.humans,
            visitors=answer.visitors,
            **{"from": selection.begin},
            to=selection.end,
            interval=every,
            tz=ask.tz.key,
            series=answer.series,
            groups=groups_of(by_dimension.get(GROUP_COLUMNS[ask.group_by], []))[:MAX_GROUPS]
            if ask.group_by
            else None,
            destinations=destinations,
            all_time=all_time,
            **tops,
        )

    def series(
        self, caller: Caller, codes: Sequence[str], *, start: str | None, end: str | None
    ) -> LinksSeries:
        """The daily clicks of each of the caller's ``codes`` (at most MAX_SERIES_CODES, in the order
        given, repeats once), over the last 30 days by default: one answer for a page of links."""
        unique = list(dict.fromkeys(code for code in codes if code))
        if not unique or len(unique) > MAX_SERIES_CODES:
            raise InvalidRequestError(f"codes: give 1 to {MAX_SERIES_CODES} codes, separated by commas.")
        begin, to, every = parse_range(start, end, "day", self._now())
        links = [self._links.get(caller, code) for code in unique]
        counters = self._counters()
        if counters is None:
            return self._events_series(links, begin=begin, end=to)
        series = []
        for link in links:
            hours = counters.hours(link.code, hour_of(begin), to)
            report = link_report(link.code, hours, _NO_TOTALS, begin=begin, end=to, interval=every)
            series.append(
                LinkSeries(code=link.code, total=report.total, humans=report.humans, series=report.series)
            )
        return LinksSeries(**{"from": begin}, to=to, interval=every, links=series)

    def _events_series(self, links: Sequence[Link], *, begin: datetime, end: datetime) -> LinksSeries:
        """The links' daily clicks (UTC) from their events, in one query."""
        events = self._events()
        if events is None:
            raise ServiceUnavailableError("This stack keeps no clicks (no counters, no click events).")
        owners: dict[str, list[str]] = {}
        for link in links:
            owners.setdefault(link.owner or "", []).append(link.code)
        # Events are filed under their link's owner (an admin may ask for others' links).
        asked = [
            codes_series_query(
                EventSelection(owner=owner, begin=begin, end=end, codes=tuple(codes)), events.table
            )
            for owner, codes in owners.items()
        ]
        with ThreadPoolExecutor(max_workers=len(asked)) as pool:
            answers = list(pool.map(events.rows, asked))
        by_code: dict[str, list[dict[str, str | None]]] = {}
        for row in (row for rows in answers for row in rows):
            by_code.setdefault(str(row.get("code")), []).append(row)
        series = []
        for link in links:
            answer = series_answer(
                by_code.get(link.code, []), begin=begin, end=end, interval="day", tz=ZoneInfo("UTC")
            )
            series.append(
                LinkSeries(code=link.code, total=answer.total, humans=answer.humans, series=answer.series)
            )
        return LinksSeries(**{"from": begin}, to=end, interval="day", links=series)

    def top(
        self, caller: Caller, query: Mapping[str, str | None], *, codes: Sequence[str], urls: ShortUrls
    ) -> TopLinks:
        """The caller's most followed links over a range of whole UTC days (an admin's own links
        too: links are filed under their owner), with their clicks, humans and visitors; from the
        events, filtered as a link's report is and by ``job_id`` and ``codes``, with a breakdown.
        Each link's short URL is on its own domain (``urls``)."""
        begin, to, days = top_range(query.get("from"), query.get("to"), self._now())
        ask = event_ask(query, group_values=OWNER_GROUPS)
        codes = asked_codes(codes)
        events = self._events()
        tag = query.get("tag")
        if tag:
            tagged = self._tagged(caller.owner_id, tag)
            # A tag no link has, or none of the codes asked: nothing to count.
            codes = [code for code in codes if code in tagged] if codes else tagged
            codes = codes or [_NO_CODE]
        if events is None:
            if ask.needs_events("day") or codes or query.get("job_id"):
                raise InvalidRequestError(
                    "This stack keeps no click events: ask without filters or group_by."
                )
            counters = self._counters()
            if counters is None:
                raise ServiceUnavailableError("This stack keeps no clicks (no counters, no click events).")
            return top_links(
                counters.owner_links(caller.owner_id, days),
                begin,
                to,
                lambda ranked: self._short_urls(ranked, urls),
            )
        selection = selection_of(
            ask, owner=caller.owner_id, begin=begin, end=to, codes=codes, job_id=query.get("job_id")
        )
        asked = [
            totals_query(selection, events.table),
            groups_query(selection, events.table, "code", TOP_LINKS),
        ]
        if ask.group_by:
            asked.append(groups_query(selection, events.table, ask.group_by, MAX_GROUPS, events.answers))
        with ThreadPoolExecutor(max_workers=len(asked)) as pool:
            answers = list(pool.map(events.rows, asked))
        [totals] = answers[0] or [{}]
        top_codes = groups_of(answers[1])
        short_urls = self._short_urls([str(group.value) for group in top_codes], urls)
        links = [
            TopLink(
                code=str(group.value),
                short_url=short_urls[str(group.value)],
                clicks=group.clicks,
                humans=group.humans,
            )
            for group in top_codes
        ]
        return TopLinks(
            **{"from": begin},
            to=to,
            total=int(totals.get("clicks") or 0),
            humans=int(totals.get("humans") or 0),
            visitors=int(totals.get("visitors") or 0),
            links=links,
            groups=groups_of(answers[2]) if ask.group_by else None,
        )

    def _short_urls(self, codes: Sequence[str], urls: ShortUrls) -> dict[str, str]:
        """Each code's short URL on its link's own domain. The links are read only on a stack with
        several domains (one batch read of at most TOP_LINKS items); a code whose link is gone
        answers on the default domain, as the API's own URL would answer it."""
        domains = self._link_domains(codes) if urls.others and codes else {}
        return {code: urls.short_url(domains.get(code), code) for code in codes}

    def top_values(self, caller: Caller, query: Mapping[str, str | None]) -> TopValues:
        """``GET /clicks/top``: the top ``limit`` codes, countries or referrers over all of the
        caller's links in a range (the events'; the last 30 days by default)."""
        begin, to, _ = parse_range(query.get("from"), query.get("to"), "day", self._now())
        by = query.get("by") or "code"
        if by not in TOP_BY:
            raise InvalidRequestError(f"by must be one of {', '.join(TOP_BY)}.")
        text = query.get("limit") or "100"
        if not text.isdigit() or not 1 <= int(text) <= MAX_TOP_VALUES:
            raise InvalidRequestError(f"limit must be a whole number from 1 to {MAX_TOP_VALUES}.")
        events = self._events()
        if events is None:
            raise InvalidRequestError("This stack keeps no click events to rank.")
        selection = selection_of(event_ask({}, group_values=()), owner=caller.owner_id, begin=begin, end=to)
        rows = events.rows(groups_query(selection, events.table, by, int(text), events.answers))
        return TopValues(**{"from": begin}, to=to, by=by, top=groups_of(rows))  # type: ignore[arg-type]
