"""Counting clicks from the API's access log and the edge's standard logs (docs/clicks.md): each
record of a delivered batch is parsed (a malformed one is skipped and counted, the batch goes on), a
redirect of GET /{code} is classified (country from the address, which is then dropped, or from
CloudFront's viewer country; device class, browser and OS from the user agent; bot or human from
the crawler list; the referrer's host where the edge logged one), and the batch's clicks are added
up per link per hour before anything is written: one counter update per link hour, not one write
per click."""

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Protocol, cast
from urllib.parse import unquote, urlsplit

import iptocc
from pydantic import ValidationError

from shortener.access.model import ANONYMOUS_OWNER
from shortener.clicks.agents import classify_agent
from shortener.clicks.events import AnswerEvent, ClickEvent, click_event, visitor_id
from shortener.clicks.model import (
    DESTINATION_RECORD,
    DIMENSIONS,
    EDGE_STAGE,
    MAX_RANGE_DAYS,
    MAX_TOP_RANGE_DAYS,
    MAX_VALUE_LENGTH,
    NOT_REDIRECTS,
    STAGE_CACHE_REFRESH_AGENT,
    TOP_LINKS,
    TOP_VALUES,
    UNKNOWN,
    AccessLogLine,
    AllTime,
    BatchOutcome,
    Click,
    DestinationLine,
    EdgeLogRecord,
    HourCounts,
    Interval,
    LimitOutcome,
    LinkClicks,
    LinkTotals,
    OwnerDay,
    SeriesPoint,
    SkipReason,
    StoredHour,
    TopLink,
    TopLinks,
    ValueCount,
)
from shortener.exceptions import InvalidRequestError
from shortener.links.codes import is_reserved
from shortener.links.model import Link

REDIRECT_ROUTE = "/{code}"
# A code is one path segment; "#" never appears in one (the links table's own items use it).
_CODE = re.compile(r"^[^/#\s]{1,128}$")
# The methods whose redirect is a click: GET, and POST (a password link's form with the right password).
_FOLLOWS = frozenset({"GET", "POST"})
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ClickCounter(Protocol):
    """Where counted clicks go (shortener.clicks.store.ClicksStore)."""

    def add(
        self, batch_key: str, hours: Sequence[HourCounts], owner_days: Sequence[OwnerDay] = ()
    ) -> int | None:
        """Add the hours' counts once per ``batch_key``: the items written, None when every part of
        the batch had been counted before."""
        ...


# codes -> the link of each that exists.
LinkLookup = Callable[[Sequence[str]], Mapping[str, Link]]
# A batch's redirects by code, and its links -> what became of the click-limited ones.
ClickLimits = Callable[[Mapping[str, int], Mapping[str, Link]], LimitOutcome]


def batch_key(log_group: str, log_stream: str, event_ids: Iterable[str]) -> str:
    """The same for every delivery of one batch: a digest of where its events come from and their
    ids (CloudWatch Logs gives each event an id unique in its log group)."""
    digest = hashlib.sha256(f"{log_group}\n{log_stream}\n".encode())
    for event_id in sorted(event_ids):
        digest.update(event_id.encode() + b"\n")
    return digest.hexdigest()[:40]


def edge_batch_key(request_ids: Iterable[str]) -> str:
    """The same for every delivery of the edge's records of one batch, whatever event ids and
    stream CloudWatch Logs gave them: a digest of their ``x-edge-request-id``s (unique per request,
    CloudFront's standard logging reference)."""
    return batch_key("cloudfront", "edge", request_ids)


def parse_line(message: str) -> AccessLogLine | EdgeLogRecord | DestinationLine | None:
    """The access log line, the edge's log record or the API function's destination line, or None
    when it is none of them (junk, truncated, a field out of bounds). The edge's records are told
    by their ``x-edge-request-id``, the function's lines by their ``record``."""
    try:
        document = json.loads(message)
        if isinstance(document, dict) and "x-edge-request-id" in document:
            return EdgeLogRecord.model_validate(document)
        if isinstance(document, dict) and document.get("record") == DESTINATION_RECORD:
            return DestinationLine.model_validate(document)
        return AccessLogLine.model_validate(document)
    except (ValueError, ValidationError):
        return None


def click_of(line: AccessLogLine | EdgeLogRecord) -> Click | SkipReason:
    """The click a line or record records, or why it is none."""
    if isinstance(line, EdgeLogRecord):
        return edge_click_of(line)
    return access_click_of(line)


def access_click_of(line: AccessLogLine) -> Click | SkipReason:
    """The click an access log line records, or why it is none."""
    if line.stage == EDGE_STAGE:
        # The edge's own origin requests: counted from the edge's logs (no access log is set on that
        # stage; a line that arrived anyway must not count the click twice).
        return "edge_stage"
    # A POST answered with a redirect is a password link opened with its password.
    if line.resource_path != REDIRECT_ROUTE or line.method not in _FOLLOWS:
        return "not_a_follow"  # HEAD from link checkers, other routes
    if line.user_agent == STAGE_CACHE_REFRESH_AGENT:
        return "cache_refresh"
    if not 300 <= line.status < 400:
        return "not_a_redirect"  # 404, 410, throttled, errors
    code = unquote(line.path).lstrip("/")
    if not _CODE.match(code):
        return "not_a_follow"
    bot, device, browser, os_family = classify_agent(line.user_agent or "")
    return Click(
        code=code,
        at=datetime.fromtimestamp(line.time_ms / 1000, UTC),
        bot=bot,
        country=country_of(line.ip),
        device=device,
        browser=browser,
        os=os_family,
    )


def edge_click_of(record: EdgeLogRecord) -> Click | SkipReason:
    """The click an edge log record records, by the access log's rules (a GET of one code answered
    with a redirect), or why it is none: the country is CloudFront's, the referrer its host."""
    if record.method not in _FOLLOWS:
        return "not_a_follow"  # HEAD from link checkers
    if record.user_agent == STAGE_CACHE_REFRESH_AGENT:
        return "cache_refresh"
    code = unquote(record.path).removeprefix("/")
    if not _CODE.match(code) or is_reserved(code):
        return "not_a_follow"  # the page, the app-site-association document, other routes
    if not 300 <= record.status < 400:
        return "not_a_redirect"  # 404, 410, refused by the WAF, errors
    at_ms = record.at_ms()
    if at_ms is None:  # the model refuses such a record; kept for the type
        return "malformed"
    bot, device, browser, os_family = classify_agent(record.user_agent or "")
    country = (record.country or "").upper()
    return Click(
        code=code,
        at=datetime.fromtimestamp(at_ms / 1000, UTC),
        bot=bot,
        country=country if _COUNTRY.match(country) else UNKNOWN,
        device=device,
        browser=browser,
        os=os_family,
        referrer=referrer_host(record.referer),
        from_edge=True,
    )


def referrer_host(referer: str | None) -> str | None:
    """The host of a Referer header, lower case, without port or credentials; None for none or one
    that names no host."""
    if not referer:
        return None
    try:
        host = urlsplit(referer.strip()).hostname
    except ValueError:
        return None
    host = _CONTROL.sub("", host or "").strip(".")
    return host[:MAX_VALUE_LENGTH] or None


def country_of(address: str | None) -> str:
    """The ISO country code of a client address from the offline table iptocc ships; "unknown" for
    a private, reserved, unallocated or malformed address. Never a network lookup."""
    if not address:
        return UNKNOWN
    try:
        code = iptocc.country_code(address.strip())
    except (ValueError, TypeError):
        return UNKNOWN
    return code if isinstance(code, str) and len(code) == 2 else UNKNOWN


def aggregate(clicks: Iterable[Click], answers: Iterable[DestinationLine] = ()) -> list[HourCounts]:
    """The clicks, and the answers by destination, added up per link per hour, in a stable order
    (link, then hour)."""
    hours: dict[tuple[str, datetime], HourCounts] = {}

    def counts_of(code: str, at: datetime) -> HourCounts:
        hour = at.replace(minute=0, second=0, microsecond=0)
        counts = hours.get((code, hour))
        if counts is None:
            counts = hours[(code, hour)] = HourCounts(code, hour)
        return counts

    for click in clicks:
        counts_of(click.code, click.at).add(click)
    for answer in answers:
        counts_of(answer.code, datetime.fromtimestamp(answer.time_ms / 1000, UTC)).add_destination(
            answer.destination
        )
    return [hours[key] for key in sorted(hours)]


# The click events of a batch -> sent to the event store (shortener.clicks.event_stream).
EventSink = Callable[[Sequence[ClickEvent]], object]
# The owners of a counted batch's clicked links, and its click events made when asked (only an
# owner with a link.clicked webhook needs them).
ClickedSink = Callable[[set[str], Callable[[], Sequence[ClickEvent]]], object]
AnswerSink = Callable[[Sequence[AnswerEvent]], object]
# A UTC day -> its visitor key (shortener.clicks.visitor_keys).
VisitorKeyOf = Callable[[date], bytes]


class ClickCollector:
    """Counts the clicks of delivered access log batches, once per batch, and sends each click's
    event to the event store (every delivery of a batch: the queries count a request once)."""

    def __init__(
        self,
        counter: ClickCounter,
        links: LinkLookup | None = None,
        limits: ClickLimits | None = None,
        *,
        events: EventSink | None = None,
        visitor_key: VisitorKeyOf | None = None,
        answers: AnswerSink | None = None,
        clicked: ClickedSink | None = None,
    ) -> None:
        self.counter = counter
        # Told of each batch's clicks once, after they are counted (link.clicked webhooks).
        self.clicked = clicked
        self.links = links
        # On a cached stage: the click limits counted from the batch (shortener.clicks.limits).
        self.limits = limits
        self.events = events
        self.visitor_key = visitor_key
        self.answers = answers

    def collect(self, key: str, messages: Iterable[str]) -> BatchOutcome:
        """Count a delivered batch once per ``key`` (its log group, stream and event ids); a batch
        of the edge's records is keyed by their request ids instead, so that the same records
        delivered again under other event ids count once too."""
        outcome = BatchOutcome()
        clicks = []
        # Each click with the line it came from: its request id, status, address and user agent.
        followed: list[tuple[Click, AccessLogLine | EdgeLogRecord]] = []
        answers: list[DestinationLine] = []
        edge_requests: list[str] = []
        access_lines = 0
        for message in messages:
            line = parse_line(message)
            if line is None:
                outcome.skip("malformed")
                continue
            if isinstance(line, DestinationLine):
                # Not a click: which rule answered one (its click, if it was one, is another line's).
                answers.append(line)
                continue
            if isinstance(line, EdgeLogRecord):
                edge_requests.append(line.request_id)
            else:
                access_lines += 1
            click = click_of(line)
            if isinstance(click, str):
                outcome.skip(click)
                continue
            clicks.append(click)
            followed.append((click, line))
            outcome.clicks += 1
            outcome.bots += click.bot
            outcome.humans += not click.bot
        if edge_requests and not access_lines:
            key = edge_batch_key(edge_requests)
        outcome.answers = len(answers)
        hours = aggregate(clicks, answers)
        if hours:
            # One BatchGetItem of the batch's distinct clicked links: their owners, their click limits.
            clicked = sorted({counts.code for counts in hours if counts.clicks})
            links = self.links(clicked) if self.links and clicked else {}
            # Before the counters: a crash in between delivers the batch again, and sends its
            # events again rather than never.
            events = self._send_events(followed, links, answers)
            outcome.events = len(events) if self.events is not None else 0
            written = self.counter.add(key, hours, _owner_days(hours, links))
            outcome.already_counted = written is None
            outcome.items_written = written or 0
            if written is not None:
                self._tell_clicked(followed, links, events)
            limited = {code: link for code, link in links.items() if link.click_limited and link.active}
            # Counted once: a batch delivered again adds nothing to the limits either.
            # The edge's clicks spent their limit in the function already (shortener.clicks.limits).
            per_code: dict[str, int] = {}
            for click in clicks:
                if not click.from_edge:
                    per_code[click.code] = per_code.get(click.code, 0) + 1
            if self.limits is not None and limited and written is not None and per_code:
                outcome.limits = self.limits(per_code, limited)
        return outcome

    def _tell_clicked(
        self,
        followed: Sequence[tuple[Click, AccessLogLine | EdgeLogRecord]],
        links: Mapping[str, Link],
        events: Sequence[ClickEvent],
    ) -> None:
        """Tell ``clicked`` of a batch counted now (not of one delivered again): its links'
        owners, and its events when it asks."""
        owners = {link.owner for link in links.values() if link.owner}
        visitor_key = self.visitor_key
        if self.clicked is not None and followed and owners and visitor_key is not None:
            self.clicked(owners, lambda: events or events_of(followed, links, visitor_key))

    def _send_events(
        self,
        followed: Sequence[tuple[Click, AccessLogLine | EdgeLogRecord]],
        links: Mapping[str, Link],
        answers: Sequence[DestinationLine],
    ) -> list[ClickEvent]:
        """The batch's click events and the answers that say which rule gave each click, sent to
        the event store (where there is one): the click events."""
        if self.answers is not None and (named := answer_events(answers)):
            self.answers(named)
        if self.events is None or self.visitor_key is None or not followed:
            return []
        events = events_of(followed, links, self.visitor_key)
        if self.events is not None:
            self.events(events)
        return events


def answer_events(answers: Sequence[DestinationLine]) -> list[AnswerEvent]:
    """The answers that name their request (lines of before request ids were logged name none)."""
    return [
        AnswerEvent(
            time=datetime.fromtimestamp(line.time_ms / 1000, UTC),
            request_id=line.request_id,
            code=line.code,
            destination=line.destination,
        )
        for line in answers
        if line.request_id
    ]


def events_of(
    followed: Sequence[tuple[Click, AccessLogLine | EdgeLogRecord]],
    links: Mapping[str, Link],
    visitor_key: VisitorKeyOf,
) -> list[ClickEvent]:
    """The event of each click: its link's owner and job (none for a link deleted since), and the
    visitor as the day's keyed hash of address and user agent (the address goes no further)."""
    events = []
    for click, line in followed:
        link = links.get(click.code)
        events.append(
            click_event(
                click,
                request_id=line.request_id,
                owner=(link.owner or "") if link is not None else "",
                job_id=link.job_id if link is not None else None,
                row=link.row if link is not None else None,
                status=line.status,
                visitor=visitor_id(visitor_key(click.at.date()), line.ip, line.user_agent),
            )
        )
    return events


def _owner_days(hours: Sequence[HourCounts], links: Mapping[str, Link]) -> list[OwnerDay]:
    """The hours added up per link per day, under each link's owner (links made without a key,
    Access=open, have no top list of their own)."""
    days: dict[tuple[str, date, str], list[int]] = {}
    for counts in hours:
        link = links.get(counts.code)
        owner = link.owner if link is not None and link.owner != ANONYMOUS_OWNER else None
        if owner and counts.clicks:
            day = days.setdefault((owner, counts.hour.date(), counts.code), [0, 0])
            day[0] += counts.clicks
            day[1] += counts.humans
    return [OwnerDay(o, d, c, clicks, humans) for (o, d, c), (clicks, humans) in sorted(days.items())]


def parse_range(
    start: str | None, end: str | None, interval: str | None, now: datetime
) -> tuple[datetime, datetime, Interval]:
    """A report's range from its query parameters (ISO 8601; a date or a time, UTC when no offset is
    given); defaults: the last 30 days, by day. InvalidRequestError for anything else."""
    chosen = interval or "day"
    if chosen not in MAX_RANGE_DAYS:
        raise InvalidRequestError("interval must be hour, day, week or month.")
    to = parse_instant(end, "to") if end else now
    begin = parse_instant(start, "from") if start else to - timedelta(days=30)
    if begin > to:
        raise InvalidRequestError("from must not be after to.")
    if to - begin > timedelta(days=MAX_RANGE_DAYS[chosen]):
        raise InvalidRequestError(
            f"A range by {chosen} covers at most {MAX_RANGE_DAYS[chosen]} days; ask for a shorter one."
        )
    return begin, to, cast(Interval, chosen)


def parse_instant(text: str, name: str) -> datetime:
    """A date or a time in ISO 8601 (UTC unless it names an offset), or InvalidRequestError naming
    ``name``."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequestError(f"{name} must be an ISO 8601 date or time, such as 2026-11-01.") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def hour_of(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def link_report(
    code: str,
    hours: Sequence[StoredHour],
    totals: LinkTotals,
    *,
    begin: datetime,
    end: datetime,
    interval: Interval,
) -> LinkClicks:
    """The report of a link's stored hours within [begin, end], bucketed by ``interval``."""
    inside = [hour for hour in hours if hour_of(begin) <= hour.hour <= end]
    buckets: dict[datetime, list[int]] = {}
    start = _bucket(begin, interval)
    step = timedelta(hours=1) if interval == "hour" else timedelta(days=1)
    while start <= end:
        buckets[start] = [0, 0]
        start += step
    tops: dict[str, dict[str, int]] = {name: {} for name in DIMENSIONS}
    for hour in inside:
        bucket = buckets.setdefault(_bucket(hour.hour, interval), [0, 0])
        bucket[0] += hour.clicks
        bucket[1] += hour.humans
        for name, counts in hour.values.items():
            if name in tops:
                for value, number in counts.items():
                    tops[name][value] = tops[name].get(value, 0) + number
    return LinkClicks(
        code=code,
        total=sum(hour.clicks for hour in inside),
        humans=sum(hour.humans for hour in inside),
        bots=sum(hour.bots for hour in inside),
        **{"from": begin},
        to=end,
        interval=interval,
        series=[SeriesPoint(start=at, clicks=c, humans=h) for at, (c, h) in sorted(buckets.items())],
        countries=_top(tops["country"]),
        referrers=_top(tops["referrer"]),
        devices=_top(tops["device"]),
        browsers=_top(tops["browser"]),
        os=_top(tops["os"]),
        destinations=destinations_of(sum(hour.clicks for hour in inside), tops["destination"]),
        all_time=AllTime(
            clicks=totals.clicks,
            humans=totals.humans,
            bots=totals.bots,
            first_click=totals.first_click,
            last_click=totals.last_click,
        ),
    )


def destinations_of(clicks: int, answers: dict[str, int]) -> list[ValueCount]:
    """Each answer once by the rule that gave it, most first: the recorded answers, and as
    ``default`` the clicks no rule recorded (a plain link writes no line: its redirects are all
    ``default``; a link that got its rules later has its earlier clicks there too)."""
    counted = dict(answers)
    unrecorded = clicks - sum(number for rule, number in answers.items() if rule not in NOT_REDIRECTS)
    if unrecorded > 0:
        counted["default"] = counted.get("default", 0) + unrecorded
    ranked = sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    return [ValueCount(value=value, clicks=number) for value, number in ranked]


def _bucket(moment: datetime, interval: Interval) -> datetime:
    hour = hour_of(moment)
    return hour if interval == "hour" else hour.replace(hour=0)


def _top(counts: dict[str, int]) -> list[ValueCount]:
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:TOP_VALUES]
    return [ValueCount(value=value, clicks=number) for value, number in ranked]


def top_range(start: str | None, end: str | None, now: datetime) -> tuple[datetime, datetime, list[date]]:
    """GET /clicks' range in whole UTC days (defaults: the last 30 days) and the days it covers."""
    begin, to, _ = parse_range(start, end, "day", now)
    days = [(begin + timedelta(days=offset)).date() for offset in range((to.date() - begin.date()).days + 1)]
    if len(days) > MAX_TOP_RANGE_DAYS:
        raise InvalidRequestError(
            f"GET /clicks covers at most {MAX_TOP_RANGE_DAYS} days; ask for a shorter range."
        )
    return begin, to, days


def top_links(
    counts: dict[str, tuple[int, int]],
    begin: datetime,
    end: datetime,
    short_urls: Callable[[Sequence[str]], Mapping[str, str]],
    limit: int = TOP_LINKS,
) -> TopLinks:
    """The most followed links of ``counts`` (code -> clicks, humans), most clicks first, each with
    its short URL (``short_urls``: code -> URL, asked for the ranked codes only)."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1][0], item[0]))[:limit]
    urls = short_urls([code for code, _ in ranked])
    return TopLinks(
        **{"from": begin},
        to=end,
        total=sum(clicks for clicks, _ in counts.values()),
        humans=sum(humans for _, humans in counts.values()),
        links=[
            TopLink(code=code, short_url=urls[code], clicks=clicks, humans=humans)
            for code, (clicks, humans) in ranked
        ],
    )
