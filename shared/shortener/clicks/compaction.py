"""Compacting click events (docs/clicks.md, "Compaction"): every hour the jobs worker rewrites
each recent day's objects (Firehose's, one per buffer, in arrival order) as one
Parquet object sorted by owner, link and time, in row groups of ROW_GROUP_ROWS, with each request
once. Athena then skips the row groups whose min/max statistics rule out the owner or the links a
query asks for, so a link's report scans its own rows of each day rather than everybody's; and an
event Firehose or the collector delivered twice is stored once.

A day is compacted only while no erasure runs, and its objects are deleted only if no erasure was
asked while it was compacted (else the compacted object is deleted instead, and the day is done
again later): an erasure never meets a compacted object made from objects it did not see."""

import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

from shortener.clicks.export_files import sql_path
from shortener.clicks.model import ErasureActivity

EVENTS_PREFIX = "events/"
COMPACTED_PREFIX = "compacted-"
# A multiple of DuckDB's 2,048-row vectors: a link's rows of a day sit in one or two row groups of
# about 250 KB of the columns a report reads.
ROW_GROUP_ROWS = 4096
# The days before today looked at each hour (a day left alone while an erasure ran is done later).
DAYS_BACK = 3
# Enough for one more day's objects before the worker stops.
SECONDS_PER_DAY = 120
# DuckDB sorts a day larger than this in its temporary directory rather than in memory (the
# worker has 1 GB).
MEMORY_LIMIT = "512MB"

DayOutcome = Literal["compacted", "nothing_to_do", "erasure_under_way"]


@dataclass(frozen=True)
class CompactedFile:
    rows_read: int
    rows_written: int


def compact_files(sources: list[Path], target: Path) -> CompactedFile:
    """The events of ``sources`` (Parquet) written to ``target`` sorted by owner, code and time,
    each request once (its earliest event), Snappy, in row groups of ROW_GROUP_ROWS; what does not
    fit in MEMORY_LIMIT is sorted on disk beside ``target``."""
    import duckdb

    listed = "[" + ", ".join(f"'{sql_path(path)}'" for path in sources) + "]"
    read = f"read_parquet({listed}, union_by_name = true)"
    connection = duckdb.connect(
        config={"memory_limit": MEMORY_LIMIT, "temp_directory": str(target.parent / "duckdb-spill")}
    )
    try:
        counted = connection.execute(f"SELECT count(*) FROM {read}").fetchone()  # noqa: S608
        # The paths are the worker's own files (sql_path quotes them).
        connection.execute(
            "COPY (SELECT * EXCLUDE (copy) FROM (SELECT *, row_number() OVER "  # noqa: S608
            f"(PARTITION BY request_id ORDER BY time) AS copy FROM {read}) WHERE copy = 1 "
            "ORDER BY owner, code, time) "
            f"TO '{sql_path(target)}' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"
        )
        written = connection.execute(
            f"SELECT count(*) FROM read_parquet('{sql_path(target)}')"  # noqa: S608
        ).fetchone()
    finally:
        connection.close()
    return CompactedFile(int(counted[0]) if counted else 0, int(written[0]) if written else 0)


class Erasures(Protocol):
    """``shortener.clicks.store_erasures.ErasureRecords``."""

    def activity(self) -> ErasureActivity: ...


@dataclass(frozen=True)
class DayCompaction:
    day: date
    outcome: DayOutcome
    objects: int = 0
    rows_read: int = 0
    rows_written: int = 0


class EventCompactor:
    """Compacts the click events bucket's days (the jobs worker, every hour)."""

    def __init__(
        self,
        s3: Any,
        bucket: str,
        erasures: Erasures,
        *,
        folder: Callable[[], Any] = tempfile.TemporaryDirectory,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._s3 = s3
        self._bucket = bucket
        self._erasures = erasures
        self._folder = folder
        self._now = now

    def compact(self, seconds_left: Callable[[], float]) -> list[DayCompaction]:
        """Each of the last DAYS_BACK days and today (so far) that is not one compacted object,
        oldest first, while time is left. Compacting a day again is only a rewrite: objects that
        arrive meanwhile stay as they are and are compacted the next hour."""
        today = self._now().date()
        done = []
        for back in range(DAYS_BACK, -1, -1):
            if seconds_left() < SECONDS_PER_DAY:
                break
            done.append(self.compact_day(today - timedelta(days=back)))
        return done

    def compact_day(self, day: date) -> DayCompaction:
        """The day's objects as one compacted object, unless it is one already or an erasure is
        asked meanwhile."""
        prefix = f"{EVENTS_PREFIX}day={day.isoformat()}/"
        keys = [
            found["Key"]
            for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self._bucket, Prefix=prefix)
            for found in page.get("Contents", [])
        ]
        if not keys or (len(keys) == 1 and keys[0].removeprefix(prefix).startswith(COMPACTED_PREFIX)):
            return DayCompaction(day, "nothing_to_do", len(keys))
        before = self._erasures.activity()
        if before.running:
            return DayCompaction(day, "erasure_under_way", len(keys))
        with self._folder() as folder:
            sources = []
            for number, key in enumerate(keys):
                sources.append(Path(folder) / f"{number}.parquet")
                self._s3.download_file(self._bucket, key, str(sources[-1]))
            target = Path(folder) / "compacted.parquet"
            made = compact_files(sources, target)
            stamp = self._now().strftime("%Y%m%dT%H%M%S")
            compacted = f"{prefix}{COMPACTED_PREFIX}{stamp}-{uuid.uuid4().hex[:8]}.parquet"
            self._s3.upload_file(str(target), self._bucket, compacted)
        if self._erasures.activity() != before:
            # An erasure asked meanwhile may have missed the compacted object: the day's objects
            # stay (it erases from them) and the day is compacted again later.
            self._s3.delete_object(Bucket=self._bucket, Key=compacted)
            return DayCompaction(day, "erasure_under_way", len(keys))
        # A day holds at most one object per Firehose buffer (a minute or more): one request each.
        for key in keys:
            self._s3.delete_object(Bucket=self._bucket, Key=key)
        return DayCompaction(day, "compacted", len(keys), made.rows_read, made.rows_written)
