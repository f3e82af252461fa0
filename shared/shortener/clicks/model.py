"""Clicks: the records a redirect leaves (the API's access log line, the edge's standard log record:
what the collector reads), one classified click, and the hourly counts the collector adds up
(docs/clicks.md)."""

import json
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Annotated, Literal, Self
from urllib.parse import unquote

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

# The user agent of the stack's own refresh of a stage-cache entry (shortener.links.stage_cache): the
# access log records that request like any other, and it is not a click.
STAGE_CACHE_REFRESH_AGENT = "shortener-stage-cache-refresh/1"
# Longer user agents are junk (browsers send a few hundred characters): such a line is skipped.
MAX_USER_AGENT_LENGTH = 2048
# Dimension values are cut to this length (a value names a country, device class, family or host).
MAX_VALUE_LENGTH = 64
UNKNOWN = "unknown"

DeviceClass = Literal["desktop", "mobile", "tablet", "bot", "other"]
Dimension = Literal["country", "device", "browser", "os", "referrer", "destination"]
DIMENSIONS: tuple[Dimension, ...] = ("country", "device", "browser", "os", "referrer", "destination")
# What a rule, password or preview link's answer is recorded as (shortener.clicks.answers): the
# API function's log line that the collector counts under the link's destinations.
DESTINATION_RECORD = "destination"
# The rules whose answer is a redirect (a click); the password page and the preview are answers
# that are not.
NOT_REDIRECTS = frozenset({"password_page", "preview"})
SkipReason = Literal["malformed", "not_a_redirect", "not_a_follow", "cache_refresh", "edge_stage"]
# The API stage CloudFront's origin requests reach (template.yaml): its redirects are counted from
# the edge's logs, never from an access log line, so a click through the edge counts once.
EDGE_STAGE = "edge"


def _dash_is_none(value: object) -> object:
    # API Gateway writes "-" for a variable without a value.
    return None if value in ("-", "") else value


def _url_decoded(value: object) -> object:
    # CloudFront's logs URL-encode the user agent and the referrer ("standard logging reference",
    # log file fields); "-" is a header the request did not send.
    if not isinstance(value, str) or value in ("-", ""):
        return None
    return unquote(value)


class AccessLogLine(BaseModel):
    """One line of the API's access log (template.yaml, AccessLogSetting.Format)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    request_id: str = Field(alias="requestId", min_length=1, max_length=128)
    time_ms: int = Field(alias="time", gt=0)
    method: str = Field(max_length=16)
    resource_path: str = Field(alias="resourcePath", max_length=256)
    path: str = Field(max_length=2048)
    status: int = Field(ge=100, le=599)
    ip: Annotated[str | None, BeforeValidator(_dash_is_none)] = Field(default=None, max_length=64)
    user_agent: Annotated[str | None, BeforeValidator(_dash_is_none)] = Field(
        default=None, alias="userAgent", max_length=MAX_USER_AGENT_LENGTH
    )
    # The stage that answered (absent from lines written before the format named it).
    stage: Annotated[str | None, BeforeValidator(_dash_is_none)] = Field(default=None, max_length=128)


class EdgeLogRecord(BaseModel):
    """One record of the edge's standard logs (v2), output format JSON, delivered to a CloudWatch
    Logs log group (template.yaml, EdgeLogGroup): AWS's field names, each value a string as
    CloudFront writes it ("-" for none). The viewer's address (``c-ip``) is read only to hash the
    day's visitor id, and never kept."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    request_id: str = Field(alias="x-edge-request-id", min_length=1, max_length=128)
    # When the edge answered: ``timestamp(ms)``, or ``date`` and ``time`` (UTC) to the second.
    timestamp_ms: Annotated[int | None, BeforeValidator(_dash_is_none)] = Field(
        default=None, alias="timestamp(ms)", gt=0
    )
    day: Annotated[str | None, BeforeValidator(_dash_is_none)] = Field(
        default=None, alias="date", max_length=10
    )
    clock: Annotated[str | None, BeforeValidator(_dash_is_none)] = Field(
        default=None, alias="time", max_length=12
    )
    method: str = Field(alias="cs-method", max_length=16)
    host: Annotated[str | None, BeforeValidator(_dash_is_none)] = Field(
        default=None, alias="x-host-header", max_length=256
    )
    path: str = Field(alias="cs-uri-stem", max_length=8192)
    # "000": the viewer closed the connection before the edge answered.
    status: int = Field(alias="sc-status", ge=0, le=599)
    referer: Annotated[str | None, BeforeValidator(_url_decoded)] = Field(
        default=None, alias="cs(Referer)", max_length=8192
    )
    user_agent: Annotated[str | None, BeforeValidator(_url_decoded)] = Field(
        default=None, alias="cs(User-Agent)", max_length=MAX_USER_AGENT_LENGTH
    )
    result_type: Annotated[str | None, BeforeValidator(_dash_is_none)] = Field(
        default=None, alias="x-edge-result-type", max_length=32
    )
    country: Annotated[str | None, BeforeValidator(_dash_is_none)] = Field(
        default=None, alias="c-country", max_length=8
    )
    # Read only to hash the day's visitor id (shortener.clicks.events); never kept.
    ip: Annotated[str | None, BeforeValidator(_dash_is_none)] = Field(
        default=None, alias="c-ip", max_length=64
    )

    @model_validator(mode="after")
    def _has_a_time(self) -> Self:
        if self.timestamp_ms is None and self.at_ms() is None:
            raise ValueError("a record needs timestamp(ms), or date and time")
        return self

    def at_ms(self) -> int | None:
        """When the edge answered, in epoch milliseconds (None when the record does not say)."""
        if self.timestamp_ms is not None:
            return self.timestamp_ms
        if not self.day or not self.clock:
            return None
        try:
            moment = datetime.fromisoformat(f"{self.day}T{self.clock}+00:00")
        except ValueError:
            return None
        return int(moment.timestamp() * 1000)


@dataclass(frozen=True)
class Click:
    """One counted follow of a link: no address, only what it was classified as."""

    code: str
    at: datetime
    bot: bool
    country: str
    device: DeviceClass
    browser: str
    os: str
    referrer: str | None = None
    # Counted from the edge's logs: its redirect reached the function through the edge's origin (an
    # HTTP API, which has no cache), so a click limit was spent there already.
    from_edge: bool = False

    def dimension(self, name: Dimension) -> str | None:
        # The destination comes from the function's own line (DestinationLine), not the click's.
        return {
            "country": self.country,
            "device": self.device,
            "browser": self.browser,
            "os": self.os,
            "referrer": self.referrer,
        }.get(name)


def destination_line(code: str, destination: str, at: datetime, request_id: str = "") -> str:
    """The line the API function writes to its log for one answer of a rule, password or preview
    link; a subscription filter on ``record`` hands it to the collector (template.yaml). Its
    ``request_id`` is the click's (the access log's requestId, or behind the edge its
    x-edge-request-id), which joins the answer to the click's event."""
    document: dict[str, object] = {
        "record": DESTINATION_RECORD,
        "code": code,
        "destination": destination,
        "time": int(at.timestamp() * 1000),
    }
    if request_id:
        document["request_id"] = request_id
    return json.dumps(document, separators=(",", ":"))


class DestinationLine(BaseModel):
    """The API function's log line for one answer of a rule, password or preview link: which rule
    answered (``default``, ``ios``, ``android``, ``geo:DE``, ``variant:2``, ``preview``,
    ``password_page``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    record: Literal["destination"]
    code: str = Field(min_length=1, max_length=128)
    destination: str = Field(min_length=1, max_length=MAX_VALUE_LENGTH, pattern=r"^[a-z_]+(:[A-Za-z0-9]+)?$")
    time_ms: int = Field(alias="time", gt=0)
    request_id: str | None = Field(default=None, min_length=1, max_length=128)


@dataclass
class HourCounts:
    """The clicks of one link in one hour: totals, and a counter per value of each dimension."""

    code: str
    hour: datetime
    clicks: int = 0
    humans: int = 0
    bots: int = 0
    first_ms: int = 0
    last_ms: int = 0
    values: dict[Dimension, dict[str, int]] = field(default_factory=dict)

    def add(self, click: Click) -> None:
        self.clicks += 1
        self.bots += click.bot
        self.humans += not click.bot
        at_ms = int(click.at.timestamp() * 1000)
        self.first_ms = min(self.first_ms, at_ms) if self.first_ms else at_ms
        self.last_ms = max(self.last_ms, at_ms)
        for name in DIMENSIONS:
            value = click.dimension(name)
            if value is not None:
                counts = self.values.setdefault(name, {})
                counts[value] = counts.get(value, 0) + 1

    def add_destination(self, destination: str) -> None:
        """One answer of the link by ``destination`` (its click, if it was one, comes apart)."""
        counts = self.values.setdefault("destination", {})
        counts[destination] = counts.get(destination, 0) + 1


@dataclass
class LimitOutcome:
    """A batch's click-limited links on a cached stage: how many were counted, which reached their
    limit (and were ended), and which of those the stage cache refresh did not reach."""

    counted: int = 0
    ended: list[str] = field(default_factory=list)
    refresh_failed: list[str] = field(default_factory=list)


@dataclass
class BatchOutcome:
    """What the collector made of one delivered batch."""

    clicks: int = 0
    humans: int = 0
    bots: int = 0
    skipped: dict[SkipReason, int] = field(default_factory=dict)
    # Counter items written (link hours and link totals); 0 when the batch was counted before.
    items_written: int = 0
    already_counted: bool = False
    # On a cached stage, what became of the batch's click-limited links.
    limits: LimitOutcome | None = None
    # Answers of rule, password and preview links recorded by destination (not clicks).
    answers: int = 0
    # Click events sent to the event store.
    events: int = 0

    def skip(self, reason: SkipReason) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


Interval = Literal["hour", "day", "week", "month"]
# The longest range a report covers, per interval (a series of at most about 750 points).
MAX_RANGE_DAYS: dict[str, int] = {"hour": 31, "day": 731, "week": 731, "month": 731}
# How many values each top list names.
TOP_VALUES = 10


@dataclass(frozen=True)
class StoredHour:
    """One link hour as the clicks table holds it."""

    code: str
    hour: datetime
    clicks: int
    humans: int
    bots: int
    values: dict[str, dict[str, int]]


@dataclass(frozen=True)
class LinkTotals:
    """A link's totals since its first click (kept as long as the link)."""

    clicks: int = 0
    humans: int = 0
    bots: int = 0
    first_click: datetime | None = None
    last_click: datetime | None = None
    # The link's answers by the rule that gave them (``ios``, ``geo:DE``, ...): only a rule, password
    # or preview link's answers are recorded.
    destinations: dict[str, int] = field(default_factory=dict)


class SeriesPoint(BaseModel):
    start: datetime
    clicks: int
    humans: int


class ValueCount(BaseModel):
    value: str
    clicks: int


class Group(BaseModel):
    """One value of a breakdown (``group_by``): its clicks, humans and visitors."""

    value: str | None = Field(description="The value; null for clicks that have none (no referrer, say).")
    clicks: int
    humans: int
    visitors: int


class AllTime(BaseModel):
    clicks: int
    humans: int
    bots: int
    first_click: datetime | None
    last_click: datetime | None


class LinkClicks(BaseModel):
    """GET /links/{code}/clicks: a link's clicks over a range."""

    model_config = ConfigDict(populate_by_name=True)

    code: str
    total: int
    humans: int
    bots: int
    visitors: int | None = Field(
        default=None,
        description=(
            "Unique visitors in the range, each counted once a day (a day's keyed hash of address and "
            "user agent); null where the stack keeps no click events."
        ),
    )
    from_: datetime = Field(alias="from")
    to: datetime
    interval: Interval
    tz: str = Field(default="UTC", description="The IANA time zone of the series' buckets.")
    series: list[SeriesPoint]
    groups: list[Group] | None = Field(
        default=None, description="With group_by: the clicks by that value, most clicks first."
    )
    countries: list[ValueCount]
    referrers: list[ValueCount]
    devices: list[ValueCount]
    browsers: list[ValueCount]
    os: list[ValueCount]
    destinations: list[ValueCount] = Field(
        description=(
            "Each answer once, by the rule that gave it: default, ios, android, geo:DE, variant:2 "
            "(variants counted from 1), preview, password_page. A plain link's clicks are all "
            "default; the password page and the preview are answers, not clicks (not in total)."
        )
    )
    all_time: AllTime


@dataclass(frozen=True)
class ErasureActivity:
    """How many erasures of click events were ever asked, and whether one is under way."""

    asked: int
    running: bool


@dataclass(frozen=True)
class ReportState:
    """What the clicks table knows of a job's click report file."""

    requested_at: datetime | None = None
    built_at: datetime | None = None


@dataclass(frozen=True)
class OwnerDay:
    """One link's clicks on one day, filed under its owner (for the owner's top links)."""

    owner: str
    day: date
    code: str
    clicks: int
    humans: int


# The longest range GET /clicks covers (one Query per day of it).
MAX_TOP_RANGE_DAYS = 92
TOP_LINKS = 25


class LinkSeries(BaseModel):
    code: str
    total: int
    humans: int
    series: list[SeriesPoint]


class LinksSeries(BaseModel):
    """GET /clicks/series: the daily clicks of a list of the caller's links (a table's sparklines)."""

    model_config = ConfigDict(populate_by_name=True)

    from_: datetime = Field(alias="from")
    to: datetime
    interval: Interval
    links: list[LinkSeries]


# The most codes GET /clicks/series answers in one call (a page of the dashboard's table is 20).
MAX_SERIES_CODES = 50


class TopLink(BaseModel):
    code: str
    short_url: str
    clicks: int
    humans: int


class TopLinks(BaseModel):
    """GET /clicks: the caller's most followed links over a range (whole days, UTC)."""

    model_config = ConfigDict(populate_by_name=True)

    from_: datetime = Field(alias="from")
    to: datetime
    total: int
    humans: int
    visitors: int | None = Field(
        default=None, description="Unique visitors, each counted once a day; null where no events are kept."
    )
    links: list[TopLink]
    groups: list[Group] | None = Field(
        default=None, description="With group_by: the clicks by that value, most clicks first."
    )


# GET /clicks/top: what it ranks, and the most values it lists.
TOP_BY = ("code", "country", "referrer")
MAX_TOP_VALUES = 1000


class TopValues(BaseModel):
    """GET /clicks/top: the top codes, countries or referrers over all of the caller's links."""

    model_config = ConfigDict(populate_by_name=True)

    from_: datetime = Field(alias="from")
    to: datetime
    by: Literal["code", "country", "referrer"]
    top: list[Group]


class ClickErasure(BaseModel):
    """DELETE /clicks and GET /clicks/erasures/{erasure_id}: an erasure of click events and how
    far it got."""

    erasure_id: str
    owner: str
    codes: list[str] = Field(description="The links whose events are erased; empty: all the owner's.")
    status: Literal["running", "done"]
    requested_at: datetime = Field(description="Events of clicks made up to this moment are erased.")
    finished_at: datetime | None
    objects_checked: int = Field(description="Event files read so far.")
    objects_rewritten: int = Field(description="Event files rewritten without the erased events.")
    events_erased: int
