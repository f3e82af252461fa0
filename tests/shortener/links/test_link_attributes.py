"""Link attributes of bulk rows (columns, cells over the job's defaults) and the redirect's
Cache-Control for links with limits."""

from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time
from pydantic import ValidationError

from shortener.jobs.bulk import CsvRows, detect_format
from shortener.links.model import Link, LinkAttributes, attributes_of
from shortener.links.shortening import Resolution


def test_the_header_names_the_attribute_columns_as_people_write_them() -> None:
    found = detect_format("Long URL;Title;Tags;Expiry date;Max clicks")
    assert found.attribute_columns == {"title": 1, "tags": 2, "expires_at": 3, "max_clicks": 4}
    assert detect_format("url,code").attribute_columns == {}


def test_a_row_carries_only_its_attribute_cells_that_are_not_empty() -> None:
    data = b'url,tags,title,max_clicks\nhttps://a.example/,"spring, print",Flyer,\nhttps://b.example/,,,\n'
    rows = list(CsvRows([data]))
    assert [(row.url, row.code, row.row, row.attributes) for row in rows] == [
        ("https://a.example/", "", 1, {"tags": "spring, print", "title": "Flyer"}),
        ("https://b.example/", "", 2, None),
    ]


@freeze_time("2026-06-01T12:00:00Z")
def test_cells_win_over_the_defaults_and_tags_split_on_commas() -> None:
    defaults = {"max_clicks": "5", "tags": "campaign"}
    own = attributes_of(defaults, {"tags": "spring, print ,", "expires_at": "2026-06-02T00:00:00+02:00"})
    assert own is not None
    assert own.tags == ["spring", "print"]
    assert own.max_clicks == 5
    assert own.expires_at == datetime(2026, 6, 1, 22, tzinfo=UTC)
    assert attributes_of({}, None) is None
    assert attributes_of({}, {"title": "  "}) is None
    with pytest.raises(ValidationError, match="must be in the future"):
        attributes_of(defaults, {"expires_at": "2026-06-01T11:59:59Z"})


@freeze_time("2026-06-01T12:00:00Z")
def test_job_defaults_travel_as_the_text_of_cells() -> None:
    given = LinkAttributes.model_validate(
        {"max_clicks": 3, "tags": ["a", "b"], "expires_at": "2026-07-01T00:00Z"}
    )
    assert given.as_cells() == {"expires_at": "2026-07-01T00:00:00+00:00", "max_clicks": "3", "tags": "a,b"}
    assert attributes_of(given.as_cells(), None) == given


def test_a_redirect_is_kept_no_longer_than_its_link_lives() -> None:
    now = datetime(2026, 6, 1, 12, tzinfo=UTC)
    plain = Resolution(url="https://a.example/", from_cache=False)
    soon = Resolution(url="https://a.example/", from_cache=False, expires_at=now + timedelta(seconds=42))
    later = Resolution(url="https://a.example/", from_cache=False, expires_at=now + timedelta(days=9))
    counted = Resolution(url="https://a.example/", from_cache=False, click_limited=True)
    assert plain.cache_control("private, max-age=90", now) == "private, max-age=90"
    assert soon.cache_control("private, max-age=90", now) == "private, max-age=42"
    assert later.cache_control("private, max-age=90", now) == "private, max-age=90"
    assert soon.cache_control("public", now) == "public, max-age=42"
    assert counted.cache_control("private, max-age=90", now) == "private, no-store"


def test_behind_the_edge_a_redirect_says_how_long_the_edge_may_keep_it() -> None:
    # Given the edge may keep a plain link's redirect for a day
    now = datetime(2026, 6, 1, 12, tzinfo=UTC)
    day = 86400
    plain = Resolution(url="https://a.example/", from_cache=False)
    soon = Resolution(url="https://a.example/", from_cache=False, expires_at=now + timedelta(seconds=42))
    counted = Resolution(url="https://a.example/", from_cache=False, click_limited=True)
    # Then a plain link is kept a day at the edge, browsers keeping it as configured (not private:
    # CloudFront stores nothing private)
    assert plain.cache_control("private, max-age=90", now, day) == "max-age=90, s-maxage=86400"
    # An expiring one no later than its expiry, at the edge and in browsers
    assert soon.cache_control("private, max-age=90", now, day) == "max-age=42, s-maxage=42"
    # A click-limited one nowhere
    assert counted.cache_control("private, max-age=90", now, day) == "private, no-store"


def test_a_link_is_expired_past_its_time_or_its_last_click() -> None:
    now = datetime(2026, 6, 1, 12, tzinfo=UTC)
    link = Link(code="abcd", url="https://a.example/", created_at=now)
    assert not link.expired(now)
    assert link.model_copy(update={"expires_at": now}).expired(now)
    assert not link.model_copy(update={"max_clicks": 2, "clicks": 1}).expired(now)
    assert link.model_copy(update={"max_clicks": 2, "clicks": 2}).expired(now)
