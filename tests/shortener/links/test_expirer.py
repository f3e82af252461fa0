"""The expirer under moto: the links table's ByExpiry index holds the active links whose expiry is
still to enforce on the stage cache; a run refreshes the due ones and takes them out."""

from datetime import UTC, datetime, timedelta

import pytest

from shortener.links.expiry import enforce_expiries
from shortener.links.model import Link
from shortener.links.store import LinksStore
from shortener.links.store_expiry import ExpiryIndex

pytestmark = pytest.mark.integration

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def _link(code: str, expires_in: float | None, status: str = "active") -> Link:
    expires_at = NOW + timedelta(seconds=expires_in) if expires_in is not None else None
    return Link(
        code=code,
        url=f"https://example.com/{code}",
        created_at=NOW - timedelta(days=1),
        owner="owner-1",
        status=status,
        expires_at=expires_at,
    )


def test_only_active_links_whose_expiry_has_come_are_due(tables: dict[str, str]) -> None:
    # Given links expired, expiring later, without an expiry, and disabled after their expiry
    links = LinksStore(tables["LINKS_TABLE"])
    links.put_generated_batch(
        [
            _link("past", -5),
            _link("now", 0),
            _link("later", 60),
            _link("never", None),
            _link("off", -5, status="disabled"),
        ]
    )
    # When the index is read for what is due now
    due = sorted(ExpiryIndex(tables["LINKS_TABLE"]).due(NOW))
    # Then exactly the active links whose expiry has come are there
    assert [code for code, _ in due] == ["now", "past"]


def test_an_enforced_expiry_leaves_the_index_and_a_failed_refresh_stays(tables: dict[str, str]) -> None:
    # Given two expired links, one of whose refreshes fails
    table = tables["LINKS_TABLE"]
    LinksStore(table).put_generated_batch([_link("gone", -5), _link("stuck", -5)])
    index = ExpiryIndex(table)
    answers = {"gone": 410, "stuck": None}
    refreshed: list[str] = []

    def refresh(code: str) -> int | None:
        refreshed.append(code)
        return answers[code]

    # When the expirer runs
    report = enforce_expiries(index, refresh, NOW, seconds=30)
    # Then both were refreshed, one is enforced and left the index, the other stays to retry
    assert sorted(refreshed) == ["gone", "stuck"]
    assert (report.due, report.enforced, report.failed, report.failed_codes) == (2, 1, 1, ["stuck"])
    assert [code for code, _ in index.due(NOW)] == ["stuck"]
    # And the next run refreshes only what is left
    refreshed.clear()
    answers["stuck"] = 410
    assert enforce_expiries(index, refresh, NOW, seconds=30).enforced == 1
    assert refreshed == ["stuck"] and list(index.due(NOW)) == []


def test_an_expiry_changed_since_it_was_read_stays_to_enforce(tables: dict[str, str]) -> None:
    # Given an expired link read from the index, then given a later expiry (a PATCH)
    table = tables["LINKS_TABLE"]
    links = LinksStore(table)
    links.put_generated_batch([_link("moved", -5)])
    index = ExpiryIndex(table)
    [(code, seen)] = list(index.due(NOW))
    links.put_generated_batch([_link("moved", 3600)])
    # When the old reading is settled
    # Then the new expiry is not taken out of the index
    assert index.settle(code, seen) is False
    assert [code for code, _ in index.due(NOW + timedelta(hours=2))] == ["moved"]


def test_a_run_stops_at_its_time_and_leaves_the_rest_to_the_next(tables: dict[str, str]) -> None:
    # Given more expired links than one round of refreshes, and a clock that passes the run's
    # time during the first round
    table = tables["LINKS_TABLE"]
    LinksStore(table).put_generated_batch([_link(f"c{number:02d}", -5) for number in range(20)])
    index = ExpiryIndex(table)
    ticks = iter([0.0, 100.0])

    # When the expirer runs
    report = enforce_expiries(index, lambda code: 410, NOW, seconds=30, monotonic=lambda: next(ticks, 100.0))
    # Then it stopped after its first round, and the rest is still due for the next run
    assert report.stopped_early and report.enforced == report.due < 20
    assert len(list(index.due(NOW))) == 20 - report.enforced
