"""Erasing click events: only the owner's clicks of the links named, made up to the request, go;
an event file is replaced only if no one replaced it since it was read; an erasure goes on where
the invocation before stopped; and only an admin may erase another owner's clicks."""

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import duckdb
import pytest

from shortener.access.model import Caller
from shortener.clicks.erasure import EventEraser, erase_from_file
from shortener.clicks.erasures import ClickErasures
from shortener.clicks.store_erasures import ErasureRecords
from shortener.exceptions import ErasureUnderWayError, ForbiddenError

ASKED = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
BUCKET = "click-events-erasure-test"


def events_file(path: Path, events: list[tuple[str, str, datetime]]) -> Path:
    """A Parquet file of (owner, code, time) events, as Firehose writes them (other columns too)."""
    rows = ", ".join(
        f"('{owner}', '{code}', TIMESTAMP '{moment.replace(tzinfo=None)}', 'r{number}')"
        for number, (owner, code, moment) in enumerate(events)
    )
    duckdb.sql(
        f"COPY (SELECT * FROM (VALUES {rows}) AS t(owner, code, time, request_id)) "
        f"TO '{path}' (FORMAT parquet, COMPRESSION snappy)"
    )
    return path


def kept(path: Path) -> list[tuple[str, str]]:
    return duckdb.sql(f"SELECT owner, code FROM '{path}' ORDER BY request_id").fetchall()


def test_only_the_owners_clicks_of_the_links_named_made_up_to_the_request_are_erased(tmp_path: Path) -> None:
    before, after = ASKED - timedelta(minutes=1), ASKED + timedelta(minutes=1)
    source = events_file(
        tmp_path / "in.parquet",
        [("alice", "a", before), ("alice", "b", before), ("bob", "a", before), ("alice", "a", after)],
    )
    done = erase_from_file(source, tmp_path / "out.parquet", owner="alice", codes=["a"], before=ASKED)
    assert (done.kept, done.erased) == (3, 1)
    assert kept(tmp_path / "out.parquet") == [("alice", "b"), ("bob", "a"), ("alice", "a")]
    # and with no codes, every link of the owner's
    every = erase_from_file(source, tmp_path / "all.parquet", owner="alice", codes=[], before=ASKED)
    assert (every.kept, every.erased) == (2, 2)
    assert kept(tmp_path / "all.parquet") == [("bob", "a"), ("alice", "a")]
    # and a file with nothing to erase is not written
    assert (
        erase_from_file(source, tmp_path / "none.parquet", owner="carol", codes=[], before=ASKED).erased == 0
    )
    assert not (tmp_path / "none.parquet").exists()


class ReplacedWhileErasing:
    """An S3 client on which another erasure replaces an object between its read and its write."""

    def __init__(self, s3: Any, replacement: bytes) -> None:
        self._s3 = s3
        self._replacement: bytes | None = replacement

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s3, name)

    def put_object(self, **kwargs: Any) -> Any:
        if self._replacement is not None:
            self._s3.put_object(Bucket=kwargs["Bucket"], Key=kwargs["Key"], Body=self._replacement)
            self._replacement = None
        return self._s3.put_object(**kwargs)


@pytest.mark.integration
def test_an_erasure_rewrites_what_holds_the_clicks_never_undoing_another_and_goes_on_later(
    tables: dict[str, str], tmp_path: Path
) -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    early = ASKED - timedelta(hours=1)
    first = events_file(
        tmp_path / "1.parquet", [("alice", "a", early), ("bob", "a", early), ("carol", "c", early)]
    )
    second = events_file(tmp_path / "2.parquet", [("bob", "b", early)])
    s3.put_object(Bucket=BUCKET, Key="events/day=2026-11-27/1.parquet", Body=first.read_bytes())
    s3.put_object(Bucket=BUCKET, Key="events/day=2026-11-27/2.parquet", Body=second.read_bytes())
    untouched = s3.head_object(Bucket=BUCKET, Key="events/day=2026-11-27/2.parquet")["ETag"]
    records = ErasureRecords(tables["CLICKS_TABLE"])
    records.put("alice", "a" * 32, ["a"], ASKED)
    # Given another erasure (carol's) that replaces the first file between this one's read and write
    carol_done = events_file(tmp_path / "1b.parquet", [("alice", "a", early), ("bob", "a", early)])
    raced = ReplacedWhileErasing(s3, carol_done.read_bytes())
    # When alice's erasure runs, with time for one file only
    handed_over: list[dict[str, Any]] = []
    eraser = EventEraser(
        raced, BUCKET, records, lambda **next_one: handed_over.append(next_one), now=lambda: ASKED
    )
    left = iter([600.0, 10.0])
    asked: dict[str, Any] = {"owner": "alice", "erasure": "a" * 32, "codes": ["a"], "before": ASKED}
    part = eraser.erase(**asked, after=None, seconds_left=lambda: next(left))
    # Then it stops after the first file, which is read again and holds neither alice's nor carol's
    assert (part.outcome, part.after, part.erased) == ("continued", "events/day=2026-11-27/1.parquet", 1)
    body = s3.get_object(Bucket=BUCKET, Key="events/day=2026-11-27/1.parquet")["Body"].read()
    (tmp_path / "now.parquet").write_bytes(body)
    assert kept(tmp_path / "now.parquet") == [("bob", "a")]
    assert handed_over == [{**asked, "after": part.after}]
    # When the next invocation goes on from there
    rest = eraser.erase(**asked, after=part.after, seconds_left=lambda: 600.0)
    # Then the file without alice's clicks is read and left as it was, and the erasure is done
    assert (rest.outcome, rest.checked, rest.erased) == ("done", 1, 0)
    assert s3.head_object(Bucket=BUCKET, Key="events/day=2026-11-27/2.parquet")["ETag"] == untouched
    record = records.get("alice", "a" * 32)
    assert record is not None and record.finished_at == ASKED
    assert (record.objects_checked, record.objects_rewritten, record.events_erased) == (2, 1, 1)


def test_only_an_admin_erases_another_owners_clicks_and_an_open_stack_erases_nothing() -> None:
    started: list[dict[str, Any]] = []

    class Records:
        def put(self, *_: Any) -> None:
            pass

        def get(self, *_: Any) -> None:
            return None

        def running(self, *_: Any) -> list[str]:
            return []

    erasures = ClickErasures(Records, lambda **asked: started.append(asked), now=lambda: ASKED)
    member = Caller(owner_id="alice", role="member")
    with pytest.raises(ForbiddenError):
        erasures.erase(member, "bob", [])
    with pytest.raises(ForbiddenError):
        erasures.erase(Caller.anonymous(), None, [])
    assert started == []
    assert erasures.erase(member, "alice", ["a", "a"]).codes == ["a"]
    assert erasures.erase(Caller(owner_id="root", role="admin"), "bob", []).owner == "bob"
    assert [asked["owner"] for asked in started] == ["alice", "bob"]


@pytest.mark.integration
def test_one_erasure_at_a_time_per_owner_and_one_that_died_a_day_ago_stops_no_other(
    tables: dict[str, str],
) -> None:
    records = ErasureRecords(tables["CLICKS_TABLE"])
    now = datetime.now(UTC)
    records.put("alice", "a" * 32, [], now)
    records.put("alice", "b" * 32, [], now - timedelta(days=2))  # died: never finished
    records.put("bob", "c" * 32, [], now)
    erasures = ClickErasures(lambda: records, lambda **asked: None)
    alice = Caller(owner_id="alice", role="member")
    # While alice's erasure runs, she cannot start another; bob's is his own
    assert records.running("alice") == ["a" * 32]
    with pytest.raises(ErasureUnderWayError):
        erasures.erase(alice, None, [])
    # Once it is done, she can
    records.finish("alice", "a" * 32, now)
    assert records.running("alice") == []
    assert erasures.erase(alice, None, ["x"]).codes == ["x"]
