"""How a link is stored: only a custom code carries the is_custom flag, and both kinds read back
as they were written."""

from datetime import UTC, datetime, timedelta, timezone

from shortener.links.model import Link
from shortener.links.store_items import link_from_item, link_to_item

CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_a_generated_link_is_stored_without_the_custom_flag_and_reads_back_as_generated() -> None:
    # Given a link with a generated code (every bulk row)
    link = Link(code="b7Kx2", url="https://example.com/a", created_at=CREATED)
    # When it is stored and read back
    item = link_to_item(link)
    # Then the item has no is_custom attribute, and the link reads back unchanged
    assert "is_custom" not in item
    assert link_from_item(item) == link


def test_a_custom_link_keeps_its_flag() -> None:
    # Given a link with a code its owner chose
    link = Link(code="spring-sale", url="https://example.com/b", created_at=CREATED, is_custom=True)
    # When it is stored and read back
    item = link_to_item(link)
    # Then it says so, and reads back as custom
    assert item["is_custom"] == {"BOOL": True}
    assert link_from_item(item).is_custom is True


def test_the_same_moment_in_another_zone_is_written_as_that_zone_writes_it() -> None:
    # Given two links created at one moment, written in two zones (creation times are formatted
    # once and remembered, and equal moments are equal datetimes)
    paris = CREATED.astimezone(timezone(timedelta(hours=1)))
    first = Link(code="b7Kx2", url="https://example.com/a", created_at=CREATED, owner="key:a")
    second = Link(code="b7Kx3", url="https://example.com/a", created_at=paris, owner="key:a")
    # When both are stored
    items = [link_to_item(first), link_to_item(second)]
    # Then each keeps its own text, in the item and in its listing position
    assert [item["created_at"]["S"] for item in items] == [
        "2026-01-02T03:04:05+00:00",
        "2026-01-02T04:04:05+01:00",
    ]
    assert items[1]["list_sk"]["S"] == "2026-01-02T04:04:05+01:00#b7Kx3"


def test_an_expiry_is_indexed_in_utc_at_a_fixed_width_so_text_order_is_time_order() -> None:
    # Given links expiring at moments written in other zones, one on a whole second
    paris = timezone(timedelta(hours=2))
    early = Link(
        code="e1",
        url="https://example.com/e",
        created_at=CREATED,
        expires_at=datetime(2026, 6, 1, 12, 0, 0, 500, tzinfo=paris),
    )
    late = Link(
        code="e2",
        url="https://example.com/e",
        created_at=CREATED,
        expires_at=datetime(2026, 6, 1, 10, 0, 1, tzinfo=UTC),
    )
    # When they are stored
    early_key, late_key = link_to_item(early)["expiry_sk"]["S"], link_to_item(late)["expiry_sk"]["S"]
    # Then the index keys are UTC with microseconds always written, and sort as the moments do
    assert early_key == "2026-06-01T10:00:00.000500Z" and late_key == "2026-06-01T10:00:01.000000Z"
    assert early_key < late_key


def test_only_an_active_link_with_an_expiry_is_in_the_expiry_index() -> None:
    # Given a link without an expiry, and links with one that are active, disabled or deleted
    expires_at = CREATED + timedelta(days=30)
    plain = Link(code="p1", url="https://example.com/p", created_at=CREATED)
    states = {
        status: Link(
            code="x1", url="https://example.com/x", created_at=CREATED, expires_at=expires_at, status=status
        )
        for status in ("active", "disabled", "deleted")
    }
    # When they are stored
    # Then only the active one with an expiry carries the index's keys (the others answer 410
    # already: a takedown refreshes the cache itself)
    assert "expiry_pk" not in link_to_item(plain)
    assert {status: "expiry_pk" in link_to_item(link) for status, link in states.items()} == {
        "active": True,
        "disabled": False,
        "deleted": False,
    }
