"""GET /clicks' top links on a stack with several domains (docs/domains.md): each link's short URL
is on its own domain, from the counters and from the click events alike; a stack with one domain
reads no links for it."""

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime

from shortener.access.model import Caller
from shortener.clicks.event_queries import Query
from shortener.clicks.reports import ClickReports
from shortener.links.domains import ShortUrls
from shortener.links.model import Link

NOW = datetime(2025, 11, 27, 12, tzinfo=UTC)
ALICE = Caller(owner_id="alice", role="member")
SEVERAL = ShortUrls("https://sho.rt/", "sho.rt", {"go.example": "https://go.example/"})
# ongo is go.example's, plain the default domain's; gone's link was deleted since its clicks.
DOMAINS = {"ongo": "go.example", "plain": None}


class NoLinks:
    def get(self, caller: Caller, code: str) -> Link:
        raise AssertionError("top links read no single link")


class Counters:
    def owner_links(self, owner: str, days: Sequence[date]) -> dict[str, tuple[int, int]]:
        return {"ongo": (3, 3), "plain": (2, 2), "gone": (1, 1)}


class Events:
    """Answers the totals query with one row and the by-code query with the codes, most first."""

    table = "events"
    answers = None

    def rows(self, query: Query) -> list[dict[str, str | None]]:
        if "GROUP BY" not in query.sql.upper():
            return [{"clicks": "6", "humans": "6", "visitors": "4"}]
        return [
            {"value": code, "clicks": str(clicks), "humans": str(clicks), "visitors": "1"}
            for code, clicks in (("ongo", 3), ("plain", 2), ("gone", 1))
        ]


class LinkDomains:
    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def __call__(self, codes: Sequence[str]) -> Mapping[str, str | None]:
        self.asked.append(list(codes))
        return {code: DOMAINS[code] for code in codes if code in DOMAINS}


def reports(link_domains: LinkDomains, *, events: bool) -> ClickReports:
    return ClickReports(
        NoLinks(),
        Counters,
        lambda: NOW,
        events=Events if events else (lambda: None),
        link_domains=link_domains,
    )


def short_urls(report: ClickReports, urls: ShortUrls) -> list[str]:
    return [link.short_url for link in report.top(ALICE, {}, codes=[], urls=urls).links]


def test_each_top_link_is_on_its_own_domain_from_counters_and_from_events() -> None:
    for events in (False, True):
        link_domains = LinkDomains()
        assert short_urls(reports(link_domains, events=events), SEVERAL) == [
            "https://go.example/ongo",
            "https://sho.rt/plain",
            # A code whose link is gone: the default domain's URL, where the API's own URL answers
            "https://sho.rt/gone",
        ]
        # One read for the ranked codes
        assert link_domains.asked == [["ongo", "plain", "gone"]]


def test_a_stack_with_one_domain_reads_no_links_for_its_short_urls() -> None:
    for events in (False, True):
        link_domains = LinkDomains()
        urls = short_urls(reports(link_domains, events=events), ShortUrls("https://sho.rt/"))
        assert urls == ["https://sho.rt/ongo", "https://sho.rt/plain", "https://sho.rt/gone"]
        assert link_domains.asked == []
