"""The click-limit counts on the links table under moto: ``served`` grows only on an active
click-limited link, and ending a link uses up its clicks only while its limit is the one seen."""

from datetime import UTC, datetime

import pytest

from shortener.clicks.store_limits import ClickLimitStore
from shortener.links.model import Link
from shortener.links.store import LinksStore

pytestmark = pytest.mark.integration

CREATED = datetime(2026, 1, 1, tzinfo=UTC)


def _put(table: str, code: str, max_clicks: int | None, status: str = "active") -> None:
    link = Link(
        code=code,
        url=f"https://example.com/{code}",
        created_at=CREATED,
        max_clicks=max_clicks,
        status=status,  # type: ignore[arg-type]
    )
    LinksStore(table).put_generated_batch([link])


def test_served_grows_only_on_an_active_click_limited_link(tables: dict[str, str]) -> None:
    table = tables["LINKS_TABLE"]
    _put(table, "lim", 3)
    _put(table, "free", None)
    _put(table, "off", 3, status="disabled")
    store = ClickLimitStore(table)
    # When redirects are added to each
    first, second = store.add_served("lim", 2, 3), store.add_served("lim", 2, 3)
    # Then the limited link counts them, and reads back with its count
    assert (first, second) == (2, 4)
    assert LinksStore(table).get("lim", consistent=True).served == 4  # type: ignore[union-attr]
    # And the others are left as they were: no limit, taken down, gone, or a limit changed since
    assert store.add_served("free", 2, 3) is None and store.add_served("off", 2, 3) is None
    assert store.add_served("missing", 1, 3) is None
    assert store.add_served("lim", 1, 5) is None


def test_ending_a_link_uses_up_its_clicks_unless_its_limit_changed(tables: dict[str, str]) -> None:
    table = tables["LINKS_TABLE"]
    _put(table, "lim", 3)
    store = ClickLimitStore(table)
    # A limit changed since it was read wins
    assert store.exhaust("lim", 5) is False
    # The limit as read: the link is used up, and the function would answer 410
    assert store.exhaust("lim", 3) is True
    link = LinksStore(table).get("lim", consistent=True)
    assert link is not None and link.clicks_left == 0 and link.expired(datetime.now(UTC))
