"""How a link is stored: only a custom code carries the is_custom flag, and both kinds read back
as they were written."""

from datetime import UTC, datetime, timedelta, timezone

from shortener.dal.link_items import link_from_item, link_to_item
from shortener.models.links import Link

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
