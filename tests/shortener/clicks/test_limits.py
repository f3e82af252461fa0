"""Click limits on a cached stage, from the collector's counts: a click-limited link's redirects
(cache hits included) are added up, and the link is ended and its cache entry refreshed once they
reach its limit; a batch delivered twice adds nothing."""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from shortener.clicks.counting import ClickCollector
from shortener.clicks.limits import count_limited_clicks
from shortener.clicks.model import LimitOutcome
from shortener.links.model import Link
from tests.shortener.clicks.test_counting import RecordingCounter, line

CREATED = datetime(2026, 1, 1, tzinfo=UTC)


def _link(code: str, max_clicks: int | None, served: int = 0, status: str = "active") -> Link:
    return Link(
        code=code,
        url="https://example.com/x",
        created_at=CREATED,
        max_clicks=max_clicks,
        served=served,
        status=status,  # type: ignore[arg-type]
    )


class FakeLimits:
    """The links table's click-limit counts, in memory, with its conditions."""

    def __init__(self, *links: Link) -> None:
        self.links = {link.code: link for link in links}
        self.exhausted: list[str] = []

    def add_served(self, code: str, count: int, max_clicks: int) -> int | None:
        link = self.links.get(code)
        if link is None or link.max_clicks != max_clicks or link.status != "active":
            return None
        self.links[code] = link.model_copy(update={"served": link.served + count})
        return self.links[code].served

    def exhaust(self, code: str, max_clicks: int) -> bool:
        link = self.links[code]
        if link.max_clicks != max_clicks:
            return False
        self.links[code] = link.model_copy(update={"clicks": max_clicks})
        self.exhausted.append(code)
        return True


def test_a_link_is_ended_and_refreshed_once_its_served_redirects_reach_the_limit() -> None:
    # Given a link limited to 5 clicks that has served 3, and one limited to 100
    store = FakeLimits(_link("near", 5, served=3), _link("far", 100))
    refreshed: list[str] = []

    def refresh(code: str) -> int:
        refreshed.append(code)
        return 410

    # When a batch holds 2 redirects of each
    outcome = count_limited_clicks(store, refresh, {"near": 2, "far": 2}, dict(store.links))
    # Then the first reached its limit: its clicks are used up and its cache entry refreshed
    assert (outcome.counted, outcome.ended, outcome.refresh_failed) == (2, ["near"], [])
    assert store.links["near"].clicks_left == 0 and refreshed == ["near"]
    # And the other goes on, counted
    assert (store.links["far"].served, store.links["far"].clicks_left) == (2, 100)


def test_a_failed_refresh_is_reported_and_made_again_at_the_next_batch() -> None:
    # Given a link at its limit whose refresh fails
    store = FakeLimits(_link("stuck", 2, served=1))
    answers = iter([None, 410])
    outcome = count_limited_clicks(store, lambda code: next(answers), {"stuck": 1}, dict(store.links))
    assert outcome.refresh_failed == ["stuck"]
    # When the cache serves it again (the access log shows the redirect)
    outcome = count_limited_clicks(store, lambda code: next(answers), {"stuck": 1}, dict(store.links))
    # Then the refresh is made again
    assert (outcome.ended, outcome.refresh_failed) == (["stuck"], [])


def test_a_link_whose_limit_changed_meanwhile_is_not_counted() -> None:
    # Given a batch read while the link had a limit, which a PATCH removed since
    store = FakeLimits(_link("free", None))
    # When its redirects are counted
    outcome = count_limited_clicks(store, lambda code: 410, {"free": 3}, {"free": _link("free", 2)})
    # Then nothing is counted or ended
    assert (outcome.counted, outcome.ended) == (0, [])


class LimitsSpy:
    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, int], list[str]]] = []

    def __call__(self, clicks: Mapping[str, int], limited: Mapping[str, Link]) -> LimitOutcome:
        self.calls.append((dict(clicks), sorted(limited)))
        return LimitOutcome(counted=len(limited))


def test_the_collector_counts_limits_of_click_limited_links_once_per_batch() -> None:
    # Given a collector on a cached stage, and a batch with redirects of a click-limited link, an
    # unlimited one and a disabled limited one
    links = {"lim": _link("lim", 10), "free": _link("free", None), "off": _link("off", 10, status="disabled")}
    spy = LimitsSpy()

    def lookup(codes: Sequence[str]) -> Mapping[str, Link]:
        return {code: links[code] for code in codes if code in links}

    collector = ClickCollector(RecordingCounter(), lookup, spy)
    batch = [line(path="/lim"), line(path="/lim"), line(path="/free"), line(path="/off")]
    # When it is delivered, then delivered again
    first = collector.collect("k", batch)
    again = collector.collect("k", batch)
    # Then only the active click-limited link is counted, with its 2 redirects, and only once
    assert spy.calls == [({"lim": 2, "free": 1, "off": 1}, ["lim"])]
    assert first.limits == LimitOutcome(counted=1) and again.limits is None


def test_many_entries_are_refreshed_once_each_and_answered_by_code() -> None:
    from shortener.links.cache_refresh import refresh_codes

    # Given codes, one named twice
    asked: list[str] = []

    def refresh(code: str) -> int | None:
        asked.append(code)
        return None if code == "down" else 301

    # When their entries are refreshed
    statuses = refresh_codes(["a", "b", "a", "down"], refresh, workers=4)
    # Then each is asked once, and each answer is under its code
    assert sorted(asked) == ["a", "b", "down"]
    assert statuses == {"a": 301, "b": 301, "down": None}
