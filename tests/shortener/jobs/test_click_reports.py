"""A job's click report (shortener.jobs.click_reports): lines per row in input order, safe cells,
and when a large job's report file is redirected to, waited for, or built."""

import csv
import io
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from shortener.clicks.model import LinkTotals, ReportState
from shortener.jobs.click_reports import report_delivery, report_text
from shortener.jobs.model import RowOutcome
from shortener.links.domains import ShortUrls

NOW = datetime(2026, 11, 26, 10, tzinfo=UTC)


class Totals:
    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def totals(self, codes: Sequence[str]) -> dict[str, LinkTotals]:
        self.asked.append(list(codes))
        return {"b2": LinkTotals(clicks=3, humans=2, bots=1, first_click=NOW, last_click=NOW)}


def test_each_row_has_its_links_clicks_and_a_failed_row_has_none() -> None:
    chunks = [
        (0, [RowOutcome(1, "https://a.example/", "a1"), RowOutcome(2, "https://b.example/", "b2")]),
        (1, [RowOutcome(3, "=HYPERLINK(1)", "", "invalid_url: not a URL")]),
    ]
    reader = Totals()
    text = report_text(chunks, reader, ShortUrls("https://sho.rt/"))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["row"], r["code"], r["clicks"], r["humans"]) for r in rows] == [
        ("1", "a1", "0", "0"),
        ("2", "b2", "3", "2"),
        ("3", "", "0", "0"),
    ]
    assert rows[1]["short_url"] == "https://sho.rt/b2" and rows[1]["first_click"] == "2026-11-26T10:00:00Z"
    assert rows[2]["url"] == "'=HYPERLINK(1)" and rows[2]["short_url"] == ""
    # One read of totals per chunk, for the codes it has
    assert reader.asked == [["a1", "b2"], []]


def test_a_rule_links_row_counts_its_answers_by_destination_and_a_plain_links_row_none() -> None:
    # Given a plain link with clicks, and a rule link of 8 clicks (redirects): 4 iPhones, 1 from
    # Germany and 3 from before it had rules; and 2 crawlers shown its preview (answers, no clicks)
    totals = {
        "p1": LinkTotals(clicks=9, humans=9),
        "r2": LinkTotals(clicks=8, humans=8, destinations={"ios": 4, "geo:DE": 1, "preview": 2}),
    }

    class Reader:
        def totals(self, codes: Sequence[str]) -> dict[str, LinkTotals]:
            return {code: totals[code] for code in codes if code in totals}

    chunks = [(0, [RowOutcome(1, "https://p.example/", "p1"), RowOutcome(2, "https://r.example/", "r2")])]
    # When the report is written
    rows = list(csv.DictReader(io.StringIO(report_text(chunks, Reader(), ShortUrls("https://sho.rt/")))))
    # Then the rule link's row has its answers by rule, most first; the plain link's none
    assert [row["destinations"] for row in rows] == ["", "ios=4;default=3;preview=2;geo:DE=1"]


@pytest.mark.parametrize(
    ("state", "delivery"),
    [
        (None, "build"),
        (ReportState(requested_at=NOW - timedelta(minutes=1)), "wait"),
        (ReportState(requested_at=NOW - timedelta(minutes=20)), "build"),  # a build that died
        (ReportState(requested_at=NOW - timedelta(minutes=5), built_at=NOW - timedelta(minutes=4)), "file"),
        (
            ReportState(requested_at=NOW - timedelta(minutes=90), built_at=NOW - timedelta(minutes=61)),
            "build",
        ),
        (ReportState(requested_at=NOW - timedelta(minutes=1), built_at=NOW - timedelta(minutes=61)), "wait"),
    ],
)
def test_a_large_jobs_report_is_redirected_to_waited_for_or_built(
    state: ReportState | None, delivery: str
) -> None:
    assert report_delivery(state, NOW) == delivery
