"""Passwords kept as slow salted hashes, shared within a bulk job; the password and preview cells
of a bulk row; the precedence of the password page and the preview over the redirect."""

import pytest
from pydantic import ValidationError

from shortener.jobs.bulk import detect_format
from shortener.links.model import Link, Preview, attributes_of, link_fields
from shortener.links.passwords import hash_password, password_matches
from shortener.links.protection import intercept
from shortener.links.store_items import link_from_item, link_to_item


def test_a_password_is_kept_only_as_a_salted_hash_that_it_matches() -> None:
    stored = hash_password("open sesame")
    assert "open sesame" not in stored and stored.startswith("scrypt$")
    assert password_matches("open sesame", stored)
    assert not password_matches("open sesame ", stored)
    assert hash_password("open sesame") != stored  # a fresh salt each time
    assert not password_matches("x", "not a hash")


def test_rows_of_one_job_sharing_a_password_share_one_hash() -> None:
    first = hash_password("pw", scope="job-1")
    assert hash_password("pw", scope="job-1") == first
    assert hash_password("pw", scope="job-2") != first
    assert hash_password("other", scope="job-1") != first


def test_the_password_and_preview_columns_make_a_rows_password_and_preview() -> None:
    found = detect_format("url,password,preview_title,preview_description,preview_image")
    assert found.attribute_columns == {
        "password": 1,
        "preview_title": 2,
        "preview_description": 3,
        "preview_image": 4,
    }
    attributes = attributes_of(
        {"password": "job pw"}, {"preview_title": "Sale", "preview_image": "https://cdn.example/a.png"}
    )
    assert attributes is not None
    fields = link_fields(attributes, scope="job-3")
    assert fields["preview"] == Preview(title="Sale", image="https://cdn.example/a.png")
    assert fields["password_hash"] == hash_password("job pw", scope="job-3")
    assert "password" not in fields


@pytest.mark.parametrize(
    "cells",
    [
        {"preview_image": "http://cdn.example/a.png", "preview_title": "T"},
        {"preview_description": "no title"},
    ],
)
def test_a_bad_preview_cell_is_a_row_error(cells: dict[str, str]) -> None:
    with pytest.raises(ValidationError, match="preview"):
        attributes_of({}, cells)


def test_password_and_preview_survive_the_links_table() -> None:
    link = Link.model_validate(
        {
            "code": "abc",
            "url": "https://example.com/",
            "created_at": "2026-06-01T12:00:00+00:00",
            "password_hash": hash_password("pw"),
            "preview": Preview(title="T", description="D"),
        }
    )
    assert link_from_item(link_to_item(link)) == link


def test_password_first_then_the_preview_for_crawlers_then_the_destination() -> None:
    base = Link.model_validate(
        {"code": "abc", "url": "https://example.com/", "created_at": "2026-06-01T12:00:00+00:00"}
    )
    preview = Preview(title="T")
    locked = base.model_copy(update={"password_hash": "scrypt$1$1$1$AA==$AA=="})
    both = locked.model_copy(update={"preview": preview})
    shown = base.model_copy(update={"preview": preview})

    def kind(link: Link, crawler: bool, unlocked: bool = False) -> str | None:
        found = intercept(link, crawler=lambda: crawler, unlocked=unlocked)
        return None if found is None else found.shown

    assert [kind(locked, False), kind(locked, True), kind(locked, False, unlocked=True)] == [
        "password_page",
        "password_page",
        None,
    ]
    assert [kind(both, False), kind(both, True)] == ["password_page", "preview"]
    assert [kind(shown, False), kind(shown, True), kind(base, True)] == [None, "preview", None]
