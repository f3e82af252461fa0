"""What the CLI prints: aligned fields and tables for people, JSON (``--json``) or CSV / JSON lines
(``links --format``) for programs. Never a Python repr."""

import csv
import io
import json
from collections.abc import Iterable, Mapping
from typing import Any

from shortener.links.model import LinkView
from shortener.links.rules_model import UTM_COLUMNS

# The columns of `shortener links --format csv`, in order: the fields of GET /links' links but
# their limits, the rules as a bulk file writes them (utm: one column per tag), so an export can
# be uploaded again; an object (the preview) as a column per field, named as the bulk file's columns.
_LIMITS = frozenset({"expires_at", "max_clicks", "clicks_left", "expired"})
_OBJECTS = {"preview": ("title", "description", "image")}
LINK_COLUMNS = tuple(
    column
    for name in LinkView.model_fields
    if name not in _LIMITS
    for column in (
        UTM_COLUMNS
        if name == "utm"
        else [f"{name}_{part}" for part in _OBJECTS[name]]
        if name in _OBJECTS
        else (name,)
    )
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def count(number: int, noun: str, plural: str | None = None) -> str:
    """ "1 link", "2 links", "1,000 rows": a number and its noun, in the singular only for one."""
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"


def value_text(value: Any) -> str:
    """One value as a person reads it: '-' for none, yes/no, lists joined, numbers grouped."""
    if value is None or value in ("", [], {}):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.6g}"
    if isinstance(value, list):
        return ", ".join(value_text(item) for item in value)
    return str(value)


def flatten(fields: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """(name, text) of every field, nested objects as dotted names (cost.requests.dynamodb)."""
    rows: list[tuple[str, str]] = []
    for key, value in fields.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            rows += flatten(value, name + ".")
        else:
            rows.append((name, value_text(value)))
    return rows


def aligned_fields(fields: Mapping[str, Any]) -> str:
    """``name  value`` lines, the values in one column."""
    rows = flatten(fields)
    width = max((len(name) for name, _ in rows), default=0)
    return "\n".join(f"{name + ':':<{width + 1}} {text}" for name, text in rows)


def table(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A plain-text table: a header line, then one line per row, columns padded to fit."""
    all_rows = [list(headers), *(list(row) for row in rows)]
    widths = [max(len(row[column]) for row in all_rows) for column in range(len(all_rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in all_rows
    ]
    return "\n".join(lines)


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def as_json_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def links_csv(links: Iterable[Mapping[str, Any]], *, header: bool) -> str:
    """CSV lines of ``links`` (tags joined by spaces). A cell that a spreadsheet would run as a
    formula starts with a quote mark, as the results CSV does."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if header:
        writer.writerow(LINK_COLUMNS)
    for link in links:
        writer.writerow([_csv_cell(_column(link, column)) for column in LINK_COLUMNS])
    return out.getvalue()


def _column(link: Mapping[str, Any], column: str) -> Any:
    if column in UTM_COLUMNS:
        return (link.get("utm") or {}).get(column.removeprefix("utm_"))
    name, _, part = column.partition("_")
    if name in _OBJECTS and part:
        return (link.get(name) or {}).get(part)
    value = link.get(column)
    if column == "geo" and value:
        return ";".join(f"{country}={url}" for country, url in value.items())
    if column == "variants" and value:
        return ";".join(f"{variant['url']}|{variant['weight']}" for variant in value)
    return value


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = " ".join(value) if isinstance(value, list) else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def links_jsonl(links: Iterable[Mapping[str, Any]]) -> str:
    """One JSON object per line."""
    return "".join(json.dumps(link, ensure_ascii=False) + "\n" for link in links)
