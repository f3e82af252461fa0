"""Click reports answered from the click events (docs/clicks.md, "Asking the events"): what a
report's query string asks of them (a time zone, filters, bots, a breakdown, weeks or months),
and the report made of the rows Athena answers. The counters answer the rest (shortener.clicks.reports)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from shortener.clicks.event_queries import (
    FILTER_COLUMNS,
    SLOT_SECONDS,
    BotsFilter,
    EventSelection,
)
from shortener.clicks.model import MAX_VALUE_LENGTH, AllTime, Group, Interval, LinkTotals, SeriesPoint
from shortener.exceptions import InvalidRequestError

# The most values a breakdown lists.
MAX_GROUPS = 100
_BOTS = ("include", "exclude", "only")


@dataclass(frozen=True)
class EventAsk:
    """What a report's query asks that only the events answer."""

    tz: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))
    filters: dict[str, str] = field(default_factory=dict)
    bots: BotsFilter = "include"
    group_by: str | None = None

    def needs_events(self, interval: Interval) -> bool:
        """Whether the counters cannot answer it (they count UTC hours and days, unfiltered)."""
        return bool(
            self.filters
            or self.bots != "include"
            or self.group_by
            or interval in ("week", "month")
            or self.tz.key != "UTC"
        )


def event_ask(query: Mapping[str, str | None], *, group_values: Sequence[str]) -> EventAsk:
    """The event parts of a report's query string; InvalidRequestError naming what is wrong."""
    zone = query.get("tz") or "UTC"
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidRequestError(
            f"tz must be an IANA time zone, such as Europe/Berlin; got '{zone[:64]}'."
        ) from None
    filters = {}
    for name in FILTER_COLUMNS:
        value = query.get(name)
        if value is not None:
            if not value or len(value) > MAX_VALUE_LENGTH:
                raise InvalidRequestError(f"{name} must be 1 to {MAX_VALUE_LENGTH} characters.")
            filters[name] = value
    bots = query.get("bots") or "include"
    if bots not in _BOTS:
        raise InvalidRequestError("bots must be include, exclude or only.")
    group_by = query.get("group_by")
    if group_by is not None and group_by not in group_values:
        raise InvalidRequestError(f"group_by must be one of {', '.join(group_values)}.")
    return EventAsk(tz=tz, filters=filters, bots=bots, group_by=group_by)  # type: ignore[arg-type]


# The most codes a report or an export names (repeated code=).
MAX_CODES = 100


def asked_codes(codes: Sequence[str]) -> list[str]:
    """The codes a query names (``code=`` repeated), each once; InvalidRequestError past MAX_CODES."""
    unique = list(dict.fromkeys(code for code in codes if code))
    if len(unique) > MAX_CODES:
        raise InvalidRequestError(f"code: give at most {MAX_CODES} codes; a tag or a job_id selects more.")
    return unique


def selection_of(
    ask: EventAsk,
    *,
    owner: str,
    begin: datetime,
    end: datetime,
    codes: Sequence[str] = (),
    job_id: str | None = None,
) -> EventSelection:
    return EventSelection(
        owner=owner,
        begin=begin,
        end=end,
        codes=tuple(codes),
        job_id=job_id,
        filters=dict(ask.filters),
        bots=ask.bots,
    )


@dataclass(frozen=True)
class SeriesAnswer:
    """The totals and the series of a range, from the series query's rows."""

    total: int
    humans: int
    visitors: int
    series: list[SeriesPoint]


def series_answer(
    rows: Sequence[Mapping[str, str | None]],
    *,
    begin: datetime,
    end: datetime,
    interval: Interval,
    tz: ZoneInfo,
) -> SeriesAnswer:
    """Quarter-hour rows put in the zone's buckets (every bucket of the range, empty ones too);
    the row with no slot is the range's totals."""
    buckets = {start: [0, 0] for start in bucket_starts(begin, end, interval, tz)}
    total = humans = visitors = 0
    for row in rows:
        if row.get("slot") is None:
            total, humans, visitors = _int(row, "clicks"), _int(row, "humans"), _int(row, "visitors")
            continue
        moment = datetime.fromtimestamp(int(str(row["slot"])) * SLOT_SECONDS, UTC)
        bucket = buckets.setdefault(bucket_of(moment, interval, tz), [0, 0])
        bucket[0] += _int(row, "clicks")
        bucket[1] += _int(row, "humans")
    series = [SeriesPoint(start=start, clicks=c, humans=h) for start, (c, h) in sorted(buckets.items())]
    return SeriesAnswer(total, humans, visitors, series)


def groups_of(rows: Sequence[Mapping[str, str | None]]) -> list[Group]:
    """A breakdown's rows as groups, most clicks first (as the query orders them)."""
    return [
        Group(
            value=row.get("value"),
            clicks=_int(row, "clicks"),
            humans=_int(row, "humans"),
            visitors=_int(row, "visitors"),
        )
        for row in rows
    ]


def bucket_of(moment: datetime, interval: Interval, tz: ZoneInfo) -> datetime:
    """The start of the zone's hour, day, week (from Monday) or month that holds ``moment``."""
    local = moment.astimezone(tz)
    if interval == "hour":
        start = local.replace(minute=0, second=0, microsecond=0)
    else:
        start = local.replace(hour=0, minute=0, second=0, microsecond=0)
        if interval == "week":
            start -= timedelta(days=start.weekday())
        elif interval == "month":
            start = start.replace(day=1)
    # Made again in the zone: a day that starts after a change of offset keeps the right one.
    return datetime(start.year, start.month, start.day, start.hour, tzinfo=tz)


def bucket_starts(begin: datetime, end: datetime, interval: Interval, tz: ZoneInfo) -> list[datetime]:
    """Every bucket start from the one holding ``begin`` to the one holding ``end``."""
    starts = []
    current = bucket_of(begin, interval, tz)
    last = bucket_of(end, interval, tz)
    while current <= last:
        starts.append(current)
        current = _next(current, interval, tz)
    return starts


def _next(start: datetime, interval: Interval, tz: ZoneInfo) -> datetime:
    if interval == "hour":
        return (start.astimezone(UTC) + timedelta(hours=1)).astimezone(tz)
    if interval == "day":
        return bucket_of((start + timedelta(days=1, hours=12)).astimezone(UTC), "day", tz)
    if interval == "week":
        return bucket_of((start + timedelta(days=7, hours=12)).astimezone(UTC), "week", tz)
    month = start.replace(day=28) + timedelta(days=4)
    return datetime(month.year, month.month, 1, tzinfo=tz)


def _int(row: Mapping[str, str | None], name: str) -> int:
    value = row.get(name)
    return int(value) if value not in (None, "") else 0


def lifetime_totals(rows: Sequence[Mapping[str, str | None]]) -> dict[str, LinkTotals]:
    """The lifetime query's rows (a code's clicks by rule) as each code's totals; its answers by
    rule are kept only for a link some rule answered (a plain link's are all ``default``)."""
    found: dict[str, LinkTotals] = {}
    for row in rows:
        code = str(row["code"])
        before = found.get(code) or LinkTotals()
        clicks = _int(row, "clicks")
        first, last = _moment(row.get("first_click")), _moment(row.get("last_click"))
        destinations = dict(before.destinations)
        rule = str(row.get("destination") or "default")
        destinations[rule] = destinations.get(rule, 0) + clicks
        found[code] = LinkTotals(
            clicks=before.clicks + clicks,
            humans=before.humans + _int(row, "humans"),
            bots=before.bots + clicks - _int(row, "humans"),
            first_click=min(filter(None, (before.first_click, first)), default=None),
            last_click=max(filter(None, (before.last_click, last)), default=None),
            destinations=destinations,
        )
    return {
        code: totals
        if set(totals.destinations) != {"default"}
        else LinkTotals(totals.clicks, totals.humans, totals.bots, totals.first_click, totals.last_click)
        for code, totals in found.items()
    }


def all_time_of(totals: LinkTotals | None) -> AllTime:
    totals = totals or LinkTotals()
    return AllTime(
        clicks=totals.clicks,
        humans=totals.humans,
        bots=totals.bots,
        first_click=totals.first_click,
        last_click=totals.last_click,
    )


def _moment(text: str | None) -> datetime | None:
    """A time as Athena answers it (``2026-11-27 10:00:00.123``, UTC)."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace(" ", "T")).replace(tzinfo=UTC)
