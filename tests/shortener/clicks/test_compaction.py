"""Compacting a day's click events: one object sorted by owner, link and time in small row groups,
each request once; the recent days each hour, an older one when asked; never while an erasure
runs or when one was asked meanwhile (the day's objects stay); and an erasure that finds an object
compacted away goes on."""

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import duckdb
import pytest

from shortener.clicks.compaction import ROW_GROUP_ROWS, EventCompactor, compact_files
from shortener.clicks.erasure import EventEraser
from shortener.clicks.model import ErasureActivity
from shortener.clicks.store_erasures import ErasureRecords

pytestmark = pytest.mark.integration

BUCKET = "click-events-compaction-test"
DAY = date(2026, 11, 27)
NOW = datetime(2026, 11, 28, 1, 0, tzinfo=UTC)  # DAY is yesterday


def delivered(path: Path, first: int, count: int, owners: int = 3) -> Path:
    """A Firehose object: ``count`` events in arrival order, request ids from ``first``."""
    duckdb.sql(
        "COPY (SELECT TIMESTAMP '2026-11-27 10:00:00' + to_seconds(i) AS time, 'r' || i AS request_id, "
        f"'c' || (i % 50) AS code, 'o' || (i % {owners}) AS owner, i % 7 = 0 AS bot "
        f"FROM range({first}, {first + count}) t(i)) TO '{path}' (FORMAT parquet, COMPRESSION snappy)"
    )
    return path


def test_a_days_objects_become_one_sorted_by_owner_and_link_each_request_once(tmp_path: Path) -> None:
    # Two deliveries that overlap by 1,000 requests (a batch the collector sent twice)
    first = delivered(tmp_path / "a.parquet", 0, 20_000)
    second = delivered(tmp_path / "b.parquet", 19_000, 11_000)
    made = compact_files([first, second], tmp_path / "c.parquet")
    assert (made.rows_read, made.rows_written) == (31_000, 30_000)
    rows = duckdb.sql(f"SELECT owner, code, time, request_id FROM '{tmp_path / 'c.parquet'}'").fetchall()
    assert rows == sorted(rows, key=lambda row: row[:3]) and len({row[3] for row in rows}) == 30_000
    groups = duckdb.sql(
        "SELECT row_group_id, max(row_group_num_rows), min(stats_min_value), max(stats_max_value) "
        f"FROM parquet_metadata('{tmp_path / 'c.parquet'}') WHERE path_in_schema = 'owner' GROUP BY 1"
    ).fetchall()
    assert len(groups) == -(-30_000 // ROW_GROUP_ROWS) and all(g[1] <= ROW_GROUP_ROWS for g in groups)
    # Sorted: most row groups hold a single owner, so a query for one owner skips the others'
    assert sum(1 for g in groups if g[2] == g[3]) >= len(groups) - 2


class Activity:
    """Erasures' activity as the compactor reads it, changed by the test between two reads."""

    def __init__(self, *answers: ErasureActivity) -> None:
        self.answers = list(answers)

    def activity(self) -> ErasureActivity:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


@pytest.fixture
def bucket(moto: None, tmp_path: Path) -> Any:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    for number, (start, count) in enumerate(((0, 3000), (3000, 2000), (4500, 1500))):
        path = delivered(tmp_path / f"{number}.parquet", start, count)
        s3.upload_file(str(path), BUCKET, f"events/day={DAY}/stream-{number}.parquet")
    # An older day than the hourly run looks at
    s3.upload_file(str(tmp_path / "0.parquet"), BUCKET, "events/day=2026-11-01/stream-0.parquet")
    s3.upload_file(str(tmp_path / "1.parquet"), BUCKET, "events/day=2026-11-01/stream-1.parquet")
    return s3


def keys(s3: Any, prefix: str) -> list[str]:
    return [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])]


def test_the_recent_days_are_compacted_once_each_hour_and_an_older_one_when_asked(
    bucket: Any, tmp_path: Path
) -> None:
    compactor = EventCompactor(bucket, BUCKET, Activity(ErasureActivity(0, False)), now=lambda: NOW)
    first = {day.day: day for day in compactor.compact(lambda: 900.0)}
    assert set(first) == {NOW.date() - timedelta(days=back) for back in range(4)}
    done = first[DAY]
    assert (done.outcome, done.objects, done.rows_read, done.rows_written) == ("compacted", 3, 6500, 6000)
    [compacted] = keys(bucket, f"events/day={DAY}/")
    assert compacted.startswith(f"events/day={DAY}/compacted-") and compacted.endswith(".parquet")
    # Then the next hour finds nothing to do
    again = {day.day: day.outcome for day in compactor.compact(lambda: 900.0)}
    assert again[DAY] == "nothing_to_do" and keys(bucket, f"events/day={DAY}/") == [compacted]
    # until an object arrives late: it joins the compacted one
    late = delivered(tmp_path / "late.parquet", 6000, 500)
    bucket.upload_file(str(late), BUCKET, f"events/day={DAY}/stream-late.parquet")
    joined = {day.day: day for day in compactor.compact(lambda: 900.0)}[DAY]
    assert (joined.outcome, joined.objects, joined.rows_written) == ("compacted", 2, 6500)
    # and a day the hourly run does not look at is compacted when asked
    assert len(keys(bucket, "events/day=2026-11-01/")) == 2
    assert compactor.compact_day(date(2026, 11, 1)).outcome == "compacted"
    assert len(keys(bucket, "events/day=2026-11-01/")) == 1
    # and no day is begun with less than two minutes left
    assert compactor.compact(lambda: 60.0) == []


def test_no_day_is_compacted_while_an_erasure_runs_or_when_one_is_asked_meanwhile(bucket: Any) -> None:
    running = EventCompactor(bucket, BUCKET, Activity(ErasureActivity(4, True)), now=lambda: NOW)
    assert running.compact_day(DAY).outcome == "erasure_under_way"
    assert len(keys(bucket, f"events/day={DAY}/")) == 3
    # Asked while the day was compacted: the compacted object goes, the day's objects stay
    asked = EventCompactor(
        bucket, BUCKET, Activity(ErasureActivity(4, False), ErasureActivity(5, True)), now=lambda: NOW
    )
    assert asked.compact_day(DAY).outcome == "erasure_under_way"
    assert sorted(keys(bucket, f"events/day={DAY}/")) == [
        f"events/day={DAY}/stream-{number}.parquet" for number in range(3)
    ]


def test_the_erasures_activity_counts_those_asked_and_sees_one_running_until_it_finishes(
    tables: dict[str, str],
) -> None:
    records = ErasureRecords(tables["CLICKS_TABLE"])
    assert records.activity() == ErasureActivity(0, False)
    records.put("alice", "e" * 32, [], datetime.now(UTC))
    assert records.activity() == ErasureActivity(1, True)
    records.finish("alice", "e" * 32, datetime.now(UTC))
    assert records.activity() == ErasureActivity(1, False)
    # One that died (asked more than a day ago, never finished) is not waited for
    records.put("bob", "f" * 32, [], datetime.now(UTC) - timedelta(days=2))
    assert records.activity() == ErasureActivity(2, False)


def test_an_erasure_goes_on_past_an_object_compacted_away(bucket: Any, tmp_path: Path) -> None:
    gone = f"events/day={DAY}/stream-1.parquet"

    class CompactedMeanwhile:
        """The bucket, where one listed object is deleted (compacted away) before it is read."""

        def __getattr__(self, name: str) -> Any:
            return getattr(bucket, name)

        def get_object(self, **asked: Any) -> Any:
            if asked["Key"] == gone:
                bucket.delete_object(Bucket=BUCKET, Key=gone)
            return bucket.get_object(**asked)

    class Records:
        def progress(self, *_: Any, **__: Any) -> None: ...
        def finish(self, *_: Any) -> None: ...

    eraser = EventEraser(CompactedMeanwhile(), BUCKET, Records(), lambda **_: None)
    outcome = eraser.erase(
        owner="o1", erasure="e" * 32, codes=[], before=NOW, after=None, seconds_left=lambda: 900
    )
    assert outcome.outcome == "done"
    # o1's events (every third) of the objects left: DAY's two and the older day's two
    kept = [*range(3000), *range(4500, 6000), *range(3000), *range(3000, 5000)]
    assert (outcome.checked, outcome.erased) == (5, sum(1 for n in kept if n % 3 == 1))
