"""Click limits on a cached stage. API Gateway answers cached redirects without the function, so
the function's own count (one conditional write per redirect it answers) misses them. The
collector sees every answered redirect in the access log: for each click-limited link of a batch
it adds the batch's redirects to the link's ``served`` count, and once that reaches ``max_clicks``
it uses up the link's clicks and refreshes the link's stage cache entry, so the function's 410 is
what the cache holds from then on. Redirects answered from the cache between the last allowed one
and that refresh (the access log's delivery delay) are the bound: docs/campaign-links.md."""

from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Protocol

from shortener.clicks.model import LimitOutcome
from shortener.links.model import Link

# Refreshes one code's stage cache entry: the status the function answered, or None.
Refresh = Callable[[str], int | None]


class ClickLimitPort(Protocol):
    def add_served(self, code: str, count: int, max_clicks: int) -> int | None: ...

    def exhaust(self, code: str, max_clicks: int) -> bool: ...


def count_limited_clicks(
    store: ClickLimitPort, refresh: Refresh, clicks: Mapping[str, int], limited: Mapping[str, Link]
) -> LimitOutcome:
    """Add a batch's redirects (``clicks`` by code) to the links of ``limited`` (the batch's
    click-limited links, as read), and end each one that reached its limit."""
    outcome = LimitOutcome()
    for code, link in sorted(limited.items()):
        count = clicks.get(code, 0)
        if count <= 0 or link.max_clicks is None:
            continue
        served = store.add_served(code, count, link.max_clicks)
        if served is None:
            continue
        outcome.counted += 1
        if served < link.max_clicks:
            continue
        # Also when it was used up before: a refresh that failed then is made again while the
        # cache goes on answering (and the access log on showing) its redirects.
        store.exhaust(code, link.max_clicks)
        outcome.ended.append(code)
        if refresh(code) != HTTPStatus.GONE:
            outcome.refresh_failed.append(code)
    return outcome
