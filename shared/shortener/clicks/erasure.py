"""Erasing click events (docs/clicks.md, "Erasing clicks"): ``DELETE /clicks`` asks for the events
of some or all of an owner's links to be erased, and the jobs worker rewrites every Parquet object
under ``events/`` that holds any of them without them, object by object, going on in a new
invocation when its time runs low. An object is replaced only if it is still the one read (S3's
conditional write on its ETag): two erasures that rewrite one object never bring back what the
other took out. The events erased are those of clicks made up to the request; what is still on its
way (the minutes of Firehose's buffer) is erased by asking again."""

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from botocore.exceptions import ClientError

from shortener import aws
from shortener.clicks.compaction import ROW_GROUP_ROWS
from shortener.clicks.export_files import sql_path

EVENTS_PREFIX = "events/"
# Enough for one more object (a day's object is tens of MB at most) before the worker stops.
SECONDS_PER_OBJECT = 60


@dataclass(frozen=True)
class ObjectErasure:
    kept: int
    erased: int


def erase_from_file(
    source: Path, target: Path, *, owner: str, codes: Sequence[str], before: datetime
) -> ObjectErasure:
    """The events of ``source`` (Parquet) written to ``target`` without the owner's clicks (of
    ``codes``, or of every link when empty) made up to ``before``; ``target`` is written only when
    there is something to erase."""
    import duckdb

    moment = before.astimezone(UTC).replace(tzinfo=None)
    chosen = "owner = $owner AND time <= $before" + (" AND list_contains($codes, code)" if codes else "")
    values: dict[str, Any] = {"owner": owner, "before": moment} | ({"codes": list(codes)} if codes else {})
    read = f"read_parquet('{sql_path(source)}')"
    connection = duckdb.connect()
    try:
        # The condition is fixed text; its values are parameters; the paths are the worker's own.
        counted = connection.execute(
            f"SELECT count(*) FILTER (WHERE {chosen}), count(*) FROM {read}",  # noqa: S608
            values,
        ).fetchone()
        erased, total = (int(counted[0]), int(counted[1])) if counted else (0, 0)
        if erased:
            connection.execute(
                f"COPY (SELECT * FROM {read} WHERE NOT coalesce({chosen}, false)) "  # noqa: S608
                # In the order read, in a compacted object's row groups (shortener.clicks.compaction).
                f"TO '{sql_path(target)}' "
                f"(FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE {ROW_GROUP_ROWS})",
                values,
            )
    finally:
        connection.close()
    return ObjectErasure(kept=total - erased, erased=erased)


class GoOn(Protocol):
    """Starts the next invocation of an erasure from ``after`` (the jobs worker's own)."""

    def __call__(
        self, *, owner: str, erasure: str, codes: Sequence[str], before: datetime, after: str
    ) -> None: ...


class ErasureRecords(Protocol):
    """``shortener.clicks.store_erasures.ErasureRecords``."""

    def progress(self, owner: str, erasure: str, *, checked: int, rewritten: int, erased: int) -> None: ...
    def finish(self, owner: str, erasure: str, finished_at: datetime) -> None: ...


@dataclass(frozen=True)
class ErasureOutcome:
    outcome: str  # "done" or "continued"
    checked: int
    rewritten: int
    erased: int
    after: str | None = None  # the last object done, where the next invocation starts


class EventEraser:
    """Walks the click events bucket's objects for one erasure (the jobs worker)."""

    def __init__(
        self,
        s3: Any,
        bucket: str,
        records: ErasureRecords,
        go_on: GoOn,
        *,
        folder: Callable[[], Any] = tempfile.TemporaryDirectory,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._s3 = s3
        self._bucket = bucket
        self._records = records
        self._go_on = go_on
        self._folder = folder
        self._now = now

    def erase(
        self,
        *,
        owner: str,
        erasure: str,
        codes: Sequence[str],
        before: datetime,
        after: str | None,
        seconds_left: Callable[[], float],
    ) -> ErasureOutcome:
        """Erase from the objects after ``after`` on, until done or until time runs low (then
        ``continued``: the next invocation goes on after the last object done)."""
        checked = rewritten = erased = 0
        last = after
        pages = self._s3.get_paginator("list_objects_v2").paginate(
            Bucket=self._bucket, Prefix=EVENTS_PREFIX, **({"StartAfter": after} if after else {})
        )
        with self._folder() as folder:
            for page in pages:
                for found in page.get("Contents", []):
                    if seconds_left() < SECONDS_PER_OBJECT:
                        self._records.progress(
                            owner, erasure, checked=checked, rewritten=rewritten, erased=erased
                        )
                        if last is not None:
                            self._go_on(owner=owner, erasure=erasure, codes=codes, before=before, after=last)
                        return ErasureOutcome("continued", checked, rewritten, erased, last)
                    taken = self._erase_object(Path(folder), found["Key"], owner, codes, before)
                    checked += 1
                    rewritten += 1 if taken else 0
                    erased += taken
                    last = found["Key"]
        self._records.progress(owner, erasure, checked=checked, rewritten=rewritten, erased=erased)
        self._records.finish(owner, erasure, self._now())
        return ErasureOutcome("done", checked, rewritten, erased)

    def _erase_object(
        self, folder: Path, key: str, owner: str, codes: Sequence[str], before: datetime
    ) -> int:
        """The events erased from one object, rewritten only if unchanged since it was read (read
        again and redone when another erasure replaced it meanwhile)."""
        source, target = folder / "events.parquet", folder / "kept.parquet"
        while True:
            try:
                answer = self._s3.get_object(Bucket=self._bucket, Key=key)
            except ClientError as exc:
                if aws.error_code(exc) == "NoSuchKey":
                    return 0  # compacted meanwhile: its events are in the compacted object, listed too
                raise
            source.write_bytes(answer["Body"].read())
            done = erase_from_file(source, target, owner=owner, codes=codes, before=before)
            if not done.erased:
                return 0
            try:
                self._s3.put_object(
                    Bucket=self._bucket, Key=key, Body=target.read_bytes(), IfMatch=answer["ETag"]
                )
            except ClientError as exc:
                if aws.error_code(exc) in {"PreconditionFailed", "ConditionalRequestConflict"}:
                    continue
                raise
            return done.erased
