"""Questions to the click events (docs/clicks.md, "Asking the events"), as Athena SQL (Trino's
dialect) with execution parameters: who may be counted (an owner, links, a job), a range, filters,
and what to count. Every value reaches the query as a parameter, quoted here as a literal, never
spliced into the statement; column names come from a fixed list.

Counted as the counters are: a click is a request (``count(DISTINCT request_id)``: an event stored
twice counts once), a human one that is not a bot, and a visitor a day's visitor id
(``count(DISTINCT visitor)``: ids change every day, so a range counts a visitor once a day)."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

BotsFilter = Literal["include", "exclude", "only"]
# Breakdowns: the query parameter's value -> the events' column.
GROUP_COLUMNS = {
    "country": "country",
    "device": "device",
    "browser": "browser",
    "os": "os",
    "referrer": "referrer",
    "destination": "destination",
    "code": "code",
}
FILTER_COLUMNS = ("country", "device", "browser", "os", "referrer")
# Series are counted per quarter hour, then put in the asked zone's hours, days, weeks or months:
# every zone's offset is a whole number of quarter hours.
SLOT_SECONDS = 900
# The latest a click is stored after it happened (its batch's arrival day is its partition): a
# query reads the partitions of its range and of the day after.
LATE_DAYS = 1

_CLICKS = "count(DISTINCT request_id)"
_HUMANS = "count(DISTINCT CASE WHEN NOT bot THEN request_id END)"
_VISITORS = "count(DISTINCT visitor)"


@dataclass(frozen=True)
class EventSelection:
    """The events a question counts: one owner's (always), within [begin, end]."""

    owner: str
    begin: datetime
    end: datetime
    codes: tuple[str, ...] = ()
    job_id: str | None = None
    filters: dict[str, str] = field(default_factory=dict)
    bots: BotsFilter = "include"


@dataclass(frozen=True)
class Query:
    """A statement and its execution parameters (SQL literals, in order)."""

    sql: str
    parameters: list[str]


def literal(value: str) -> str:
    """A string as an SQL literal (Athena takes execution parameters as literal text)."""
    return "'" + value.replace("'", "''") + "'"


def _timestamp(moment: datetime) -> str:
    return literal(moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3])


def where(selection: EventSelection) -> Query:
    """The WHERE clause of a selection: its partitions (days), range, owner, links and filters."""
    first_day = selection.begin.astimezone(UTC).date()
    last_day = selection.end.astimezone(UTC).date() + timedelta(days=LATE_DAYS)
    parts = [
        "day BETWEEN ? AND ?",
        "time >= CAST(? AS timestamp)",
        "time <= CAST(? AS timestamp)",
        "owner = ?",
    ]
    parameters = [
        literal(first_day.isoformat()),
        literal(last_day.isoformat()),
        _timestamp(selection.begin),
        _timestamp(selection.end),
        literal(selection.owner),
    ]
    if selection.codes:
        parts.append("code IN (" + ", ".join("?" for _ in selection.codes) + ")")
        parameters += [literal(code) for code in selection.codes]
    if selection.job_id is not None:
        parts.append("job_id = ?")
        parameters.append(literal(selection.job_id))
    for name in FILTER_COLUMNS:
        if name in selection.filters:
            parts.append(f"{name} = ?")
            parameters.append(literal(selection.filters[name]))
    if selection.bots == "exclude":
        parts.append("NOT bot")
    elif selection.bots == "only":
        parts.append("bot")
    return Query(" AND ".join(parts), parameters)


# The events' columns, in the table's order (template.yaml, ClickEventsTable).
EVENT_COLUMNS = (
    "time",
    "request_id",
    "code",
    "owner",
    "job_id",
    "row",
    "destination",
    "status",
    "country",
    "device",
    "browser",
    "os",
    "referrer",
    "bot",
    "visitor",
)


def selected(selection: EventSelection, table: str, answers: str | None = None) -> Query:
    """``FROM ... WHERE ...`` of the selection's events. With the answers' table, each event's
    destination is the rule its answer names (joined by request id; ``default`` where none does:
    a plain link, or a click from before its link had rules)."""
    condition = where(selection)
    if answers is None:
        return Query(f"FROM {table} WHERE {condition.sql}", condition.parameters)
    columns = ", ".join(
        "coalesce(a.destination, e.destination) AS destination" if name == "destination" else f'e."{name}"'
        for name in EVENT_COLUMNS
    )
    first_day = selection.begin.astimezone(UTC).date()
    last_day = selection.end.astimezone(UTC).date() + timedelta(days=LATE_DAYS)
    # Values are parameters; the tables' names are checked (shortener.clicks.event_store).
    sql = (
        f"FROM (SELECT {columns} FROM (SELECT * FROM {table} WHERE {condition.sql}) e "  # noqa: S608
        f"LEFT JOIN (SELECT request_id, max(destination) AS destination FROM {answers} "
        "WHERE day BETWEEN ? AND ? GROUP BY request_id) a ON a.request_id = e.request_id) events"
    )
    return Query(sql, [*condition.parameters, literal(first_day.isoformat()), literal(last_day.isoformat())])


def totals_query(selection: EventSelection, table: str) -> Query:
    """The selection's clicks, humans and visitors."""
    condition = where(selection)
    # Values are parameters; the table's name is checked (shortener.clicks.event_store).
    sql = (
        f"SELECT {_CLICKS} AS clicks, {_HUMANS} AS humans, {_VISITORS} AS visitors "  # noqa: S608
        f"FROM {table} WHERE {condition.sql}"
    )
    return Query(sql, condition.parameters)


def series_query(selection: EventSelection, table: str) -> Query:
    """Clicks and humans per quarter hour (``slot``: epoch seconds / 900), and a last row with no
    slot for the whole range, with its visitors."""
    condition = where(selection)
    slot = f"CAST(floor(to_unixtime(time) / {SLOT_SECONDS}) AS bigint)"
    # Values are parameters; the table's name is checked (shortener.clicks.event_store).
    sql = (
        f"SELECT {slot} AS slot, {_CLICKS} AS clicks, {_HUMANS} AS humans, {_VISITORS} AS visitors "  # noqa: S608
        f"FROM {table} WHERE {condition.sql} GROUP BY GROUPING SETS (({slot}), ())"
    )
    return Query(sql, condition.parameters)


def codes_series_query(selection: EventSelection, table: str) -> Query:
    """As series_query, for each of the selection's links (``code``): its quarter hours, and a row
    with no slot for its whole range."""
    condition = where(selection)
    slot = f"CAST(floor(to_unixtime(time) / {SLOT_SECONDS}) AS bigint)"
    # Values are parameters; the table's name is checked (shortener.clicks.event_store).
    sql = (
        f"SELECT code, {slot} AS slot, {_CLICKS} AS clicks, {_HUMANS} AS humans, "  # noqa: S608
        f"{_VISITORS} AS visitors FROM {table} WHERE {condition.sql} "
        f"GROUP BY GROUPING SETS ((code, {slot}), (code))"
    )
    return Query(sql, condition.parameters)


def lifetime_query(selection: EventSelection, table: str, answers: str | None = None) -> Query:
    """Each selected link's clicks, humans, first and last click by the rule that answered them
    (``destination``; with ``answers``, the answers' table), for a link's all-time totals and a
    job's clicks per row (its links' rows added up by code)."""
    source = selected(selection, table, answers)
    # Values are parameters; the columns are fixed, the table's name is checked.
    sql = (
        f"SELECT code, destination, {_CLICKS} AS clicks, {_HUMANS} AS humans, "
        "min(time) AS first_click, max(time) AS last_click "
        f"{source.sql} GROUP BY code, destination"
    )
    return Query(sql, source.parameters)


def answers_query(code: str, begin: datetime, end: datetime, answers: str) -> Query:
    """One link's answers in a range by the rule that gave them, read from the answers' table:
    redirects by rule, and the answers that are no click (the password page, the preview)."""
    first_day = begin.astimezone(UTC).date()
    last_day = end.astimezone(UTC).date() + timedelta(days=LATE_DAYS)
    # Values are parameters; the table's name is checked (shortener.clicks.event_store).
    sql = (
        "SELECT destination AS value, count(DISTINCT request_id) AS clicks "  # noqa: S608
        f"FROM {answers} WHERE day BETWEEN ? AND ? AND time >= CAST(? AS timestamp) "
        "AND time <= CAST(? AS timestamp) AND code = ? GROUP BY destination"
    )
    parameters = [
        literal(first_day.isoformat()),
        literal(last_day.isoformat()),
        _timestamp(begin),
        _timestamp(end),
        literal(code),
    ]
    return Query(sql, parameters)


def groups_query(
    selection: EventSelection, table: str, by: str, limit: int, answers: str | None = None
) -> Query:
    """The selection's clicks, humans and visitors by one column's values, most clicks first
    (``answers``: the answers' table, read for a breakdown by destination)."""
    column = GROUP_COLUMNS[by]
    source = selected(selection, table, answers if column == "destination" else None)
    # Values are parameters; the column comes from GROUP_COLUMNS, the table's name is checked.
    sql = (
        f"SELECT {column} AS value, {_CLICKS} AS clicks, {_HUMANS} AS humans, {_VISITORS} AS visitors "
        f"{source.sql} GROUP BY {column} "
        f"ORDER BY clicks DESC, value LIMIT {int(limit)}"
    )
    return Query(sql, source.parameters)


def breakdown_query(
    selection: EventSelection, table: str, dimensions: list[str], answers: str | None = None
) -> Query:
    """The selection's clicks, humans and visitors by each of several columns' values, in one scan
    (GROUPING SETS): rows of ``dimension``, ``value`` and the counts (``answers`` as for
    groups_query)."""
    columns = [GROUP_COLUMNS[name] for name in dimensions]
    which = " ".join(f"WHEN grouping({column}) = 0 THEN '{column}'" for column in columns)
    sets = ", ".join(f"({column})" for column in columns)
    value = columns[0] if len(columns) == 1 else f"coalesce({', '.join(columns)})"
    source = selected(selection, table, answers if "destination" in columns else None)
    # Values are parameters; the columns come from GROUP_COLUMNS, the table's name is checked.
    sql = (
        f"SELECT CASE {which} END AS dimension, {value} AS value, "
        f"{_CLICKS} AS clicks, {_HUMANS} AS humans, {_VISITORS} AS visitors "
        f"{source.sql} GROUP BY GROUPING SETS ({sets}) ORDER BY clicks DESC, value"
    )
    return Query(sql, source.parameters)


# An export's columns, in order (the CSV's header): the events' but the request id and the owner.
EXPORT_COLUMNS = tuple(name for name in EVENT_COLUMNS if name not in ("request_id", "owner"))


def export_query(selection: EventSelection, table: str, answers: str | None = None) -> Query:
    """One line per click (an event stored twice once), oldest first, with EXPORT_COLUMNS (each
    click's destination from ``answers``, the answers' table, when given)."""
    source = selected(selection, table, answers)
    columns = ", ".join(f'"{column}"' for column in EXPORT_COLUMNS)
    # Values are parameters; the columns are fixed, the table's name is checked.
    sql = (
        f"SELECT {columns} FROM (SELECT *, row_number() OVER (PARTITION BY request_id ORDER BY time) "  # noqa: S608
        f"AS copy {source.sql}) WHERE copy = 1 ORDER BY time, request_id"
    )
    return Query(sql, source.parameters)
