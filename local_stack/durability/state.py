"""The durable state of the embedded AWS: a journal of changes written before each answer leaves,
replayed on start after the last snapshot, and compacted into a new snapshot now and then.

Files in the data dir:
- ``journal-NNNNNN.dat``: the changes since the snapshot, in frames (``journal.py``); a new segment
  per start and per compaction. The first frame says which physical ids the run had.
- ``snapshot.dat``: the whole state at one moment, written to a temporary file, fsynced and renamed
  over the old one, so there is always one whole snapshot. Its header names the first segment that
  follows it; older segments are deleted once it is in place. Its last frame marks it complete.
- ``s3-bodies/``: S3 objects' bodies, one file each, named by the records (``s3.py``); those no
  object refers to are deleted after each snapshot.

Guarantees: a change is in the journal (in the OS page cache) before the request that made it is
answered, so it survives the process being killed (`kill -9`, a closed terminal). The journal is
fsynced every ``fsync_interval`` seconds, so a power loss or kernel crash loses at most the changes
of that last interval. A clean stop writes a snapshot and fsyncs it: nothing is lost."""

import fcntl
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_stack.durability.journal import (
    CorruptStateError,
    FrameReader,
    FrameWriter,
    Record,
    encode,
    sync_directory,
)
from local_stack.durability.service import ServiceState

log = logging.getLogger(__name__)

FORMAT = 1
SNAPSHOT_FILE = "snapshot.dat"
# What earlier versions saved on a clean stop (tables by logical id, messages without ids); read
# when there is nothing newer, so an upgrade keeps a developer's links.
LEGACY_SNAPSHOT_FILE = "snapshot.json"
_SEGMENT = re.compile(r"^journal-(\d{6,})\.dat$")
DEFAULT_FSYNC_INTERVAL = 1.0
# Compact once the journal outgrows both this and the snapshot: the cost of compaction (a pass over
# the whole state) then stays proportional to what was written, and a replay after a crash short.
DEFAULT_COMPACT_MIN_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class StateSummary:
    """What a restore found or a save wrote."""

    counts: Mapping[str, int] = field(default_factory=dict)
    journal_records: int = 0  # records replayed from the journal (changes since the last snapshot)
    torn_tails: int = 0  # journal segments that ended in a half-written frame (the process died)
    bytes: int = 0
    seconds: float = 0.0

    @property
    def items(self) -> int:
        return self.counts.get("items", 0)

    @property
    def messages(self) -> int:
        return self.counts.get("messages", 0)


class DataDirInUseError(Exception):
    """Another process keeps its state in the same data dir."""


def _take_lock_file(data_dir: Path) -> int:
    """An exclusive lock on the data dir for as long as this process holds the returned descriptor:
    two stacks journaling into one dir would each replay and delete the other's segments. The
    kernel drops the lock when the process dies, however it dies (flock(2))."""
    path = data_dir / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise DataDirInUseError(
            f"{data_dir} is in use by process {holder} (another local stack?); stop it, or give this "
            "one its own --data-dir"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def _segment_name(number: int) -> str:
    return f"journal-{number:06d}.dat"


class DurableState:
    """The state of the embedded AWS's services, kept in ``data_dir``.

    Use: ``restore()`` into the freshly created resources, ``start()`` to journal from then on (and
    have the embedded AWS call ``end_request()`` at the end of each request, before answering),
    ``close()`` on a clean stop."""

    def __init__(
        self,
        data_dir: Path,
        services: Sequence[ServiceState],
        names: Mapping[str, str],
        *,
        exclusive: Callable[[], AbstractContextManager[Any]] = nullcontext,
        fsync_interval: float = DEFAULT_FSYNC_INTERVAL,
        compact_min_bytes: int = DEFAULT_COMPACT_MIN_BYTES,
    ) -> None:
        """``names``: logical id -> physical id of this run (stored ids are renamed when one changed);
        ``exclusive``: holds off requests to the services that the embedded AWS serialises, so that
        a snapshot sees each of their requests whole."""
        self.data_dir = data_dir
        self._services = {service.service: service for service in services}
        self._names = dict(names)
        self._exclusive = exclusive
        self._fsync_interval = fsync_interval
        self._compact_min_bytes = compact_min_bytes
        self._lock = threading.RLock()  # the current segment, and each frame written to it
        self._compacting = threading.Lock()
        self._segment: FrameWriter | None = None
        self._next_segment = 1
        self._replayed_bytes = 0  # segments from before this start, still needed after the snapshot
        self._snapshot_bytes = 0
        self._records_since_snapshot = 0
        self._stopping = threading.Event()
        self._maintenance: threading.Thread | None = None
        self._unknown: set[str] = set()
        self._counts: dict[str, int] = {}  # as of the last snapshot or restore
        self._lock_file: int | None = None

    # ---- start ---------------------------------------------------------------------------------

    def restore(self) -> StateSummary | None:
        """Load the snapshot and replay the journal after it; None when the data dir holds no state.

        A segment that ends in a torn frame (the process died while writing it) is replayed up to
        it. A snapshot that is not whole raises CorruptStateError: it was renamed into place only
        after an fsync, so damage there is not a crash the journal can explain."""
        started = time.perf_counter()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock_file = _take_lock_file(self.data_dir)
        segments = self._segments()
        snapshot, legacy = self.data_dir / SNAPSHOT_FILE, self.data_dir / LEGACY_SNAPSHOT_FILE
        found = snapshot.is_file() or legacy.is_file() or bool(segments)
        replayed, torn = 0, 0
        with self._exclusive():
            if snapshot.is_file():
                self._next_segment = self._load_snapshot(snapshot)
                self._snapshot_bytes = snapshot.stat().st_size
            elif legacy.is_file():
                self._load_legacy_snapshot(legacy)
            for number, path in segments:
                if number < self._next_segment:
                    path.unlink()  # compacted into the snapshot; left by a crash before deleting it
                    continue
                count, was_torn = self._replay_segment(path)
                replayed += count
                torn += was_torn
                self._replayed_bytes += path.stat().st_size
                self._next_segment = number + 1
            counts = {service.kind: service.finish_restore() for service in self._services.values()}
        self._counts = counts
        if not found:
            return None
        self._records_since_snapshot += replayed
        total_bytes = self._snapshot_bytes + self._replayed_bytes
        return StateSummary(counts, replayed, torn, total_bytes, time.perf_counter() - started)

    def start(self) -> None:
        """Journal every change from now on, in a new segment; fsync and compact in the background."""
        with self._lock:
            self._segment = self._open_segment()
        for service in self._services.values():
            service.record_into(self)
        self._maintenance = threading.Thread(target=self._maintain, name="durable-state", daemon=True)
        self._maintenance.start()

    # ---- while running (the Sink that services journal into) ----------------------------------

    def append(self, records: list[Record]) -> None:
        """Journal ``records`` as one frame."""
        frame = encode(records)
        with self._lock:
            self._write(frame, len(records))

    @contextmanager
    def appending(self, records: list[Record]) -> Iterator[None]:
        """Journal ``records`` and hold the journal until the caller's change is visible."""
        frame = encode(records)
        with self._lock:
            self._write(frame, len(records))
            yield

    def end_request(self) -> None:
        """Called by the embedded AWS when a request ends, before its answer leaves."""
        for service in self._services.values():
            service.end_request()

    def compact(self) -> StateSummary:
        """Write a new snapshot of the whole state and drop the journal before it."""
        with self._compacting:
            started = time.perf_counter()
            with self._lock:
                sealed = self._segment
                self._segment = self._open_segment()
                first_kept = self._next_segment - 1  # the segment just opened
                self._records_since_snapshot = 0
            if sealed is not None:
                sealed.close()
            self._counts = self._write_snapshot(first_kept)
            for number, path in self._segments():
                if number < first_kept:
                    path.unlink()
            with self._exclusive():
                for service in self._services.values():
                    service.after_snapshot()
            self._replayed_bytes = 0
            return StateSummary(self._counts, 0, 0, self._snapshot_bytes, time.perf_counter() - started)

    # ---- stop ----------------------------------------------------------------------------------

    def close(self) -> StateSummary:
        """A clean stop: a final snapshot when anything changed since the last one, fsynced. When
        it cannot be written (a full disk), the journal stays, fsynced, for the next start."""
        self._stop_maintenance()
        started = time.perf_counter()
        summary = StateSummary(self._counts, 0, 0, self._snapshot_bytes)
        compacted = False
        try:
            changed = self._records_since_snapshot or self._replayed_bytes
            if changed or not (self.data_dir / SNAPSHOT_FILE).exists():
                summary = self.compact()
            compacted = True
        except OSError:
            log.exception("state: the last snapshot could not be written; the journal keeps every change")
        finally:
            segment = self._stop_journaling()
            if segment is not None and compacted and not self._records_since_snapshot:
                segment.path.unlink()  # nothing in it after the snapshot
            self._release_lock_file()
        return StateSummary(summary.counts, 0, 0, summary.bytes, time.perf_counter() - started)

    def abandon(self) -> None:
        """Stop journaling and save nothing more, as a killed process would: the journal as it is
        will be replayed (a start that failed half way; tests playing a crash)."""
        self._stop_maintenance()
        self._stop_journaling()
        self._release_lock_file()

    # ---- internals -----------------------------------------------------------------------------

    def _stop_journaling(self) -> FrameWriter | None:
        """Services stop recording; the segment is closed (fsynced) and returned."""
        for service in self._services.values():
            service.record_into(None)
        with self._lock:
            segment, self._segment = self._segment, None
        if segment is not None:
            segment.close()
        return segment

    def _release_lock_file(self) -> None:
        if self._lock_file is not None:
            os.close(self._lock_file)  # releases the lock
            self._lock_file = None

    def _write(self, frame: bytes, records: int) -> None:
        if self._segment is None:
            raise RuntimeError("the durable state is not journaling (not started, or closed)")
        self._segment.write_encoded(frame)
        self._records_since_snapshot += records

    def _open_segment(self) -> FrameWriter:
        path = self.data_dir / _segment_name(self._next_segment)
        self._next_segment += 1
        writer = FrameWriter(path, self._header("journal"))
        sync_directory(self.data_dir)
        return writer

    def _header(self, kind: str, **extra: Any) -> dict[str, Any]:
        return {"format": FORMAT, "kind": kind, "names": self._names, **extra}

    def _segments(self) -> list[tuple[int, Path]]:
        found = []
        for path in self.data_dir.iterdir():
            match = _SEGMENT.match(path.name)
            if match:
                found.append((int(match[1]), path))
        return sorted(found)

    def _load_snapshot(self, path: Path) -> int:
        reader = FrameReader(path)
        frames = iter(reader)
        header = next(frames, None)
        self._check_header(header, path)
        assert isinstance(header, dict)
        renames = self._renames(header)
        complete = False
        for frame in frames:
            if isinstance(frame, dict):
                complete = bool(frame.get("end"))
                break
            self._apply(frame, renames)
        if not complete:
            raise CorruptStateError(f"{path} is not whole; move it away to start without it")
        return int(header["next_segment"])

    def _load_legacy_snapshot(self, path: Path) -> None:
        saved = json.loads(path.read_text(encoding="utf-8"))
        names: dict[str, str] = saved.get("names", {})
        records: list[Record] = []
        for logical_id, items in saved.get("tables", {}).items():
            if logical_id in names:
                records.append(["dynamodb", "items", names[logical_id], items])
        for logical_id, messages in saved.get("queues", {}).items():
            if logical_id in names:
                converted = [
                    {
                        "id": str(uuid.uuid4()),
                        "body": message["body"],
                        "attributes": message.get("attributes", {}),
                    }
                    for message in messages
                ]
                records.append(["sqs", "messages", names[logical_id].rsplit("/", 1)[-1], converted])
        self._apply(records, self._renames(saved))
        self._records_since_snapshot += 1  # so that the next clean stop writes a snapshot of it
        log.info("state: imported %s, saved by an earlier version", path.name)

    def _replay_segment(self, path: Path) -> tuple[int, bool]:
        reader = FrameReader(path)
        frames = iter(reader)
        header = next(frames, None)
        if header is None:  # killed before its header was written: nothing in it
            return 0, reader.torn_at is not None
        self._check_header(header, path)
        renames = self._renames(header)
        count = 0
        for frame in frames:
            self._apply(frame, renames)
            count += len(frame)
        if reader.torn_at is not None:
            size = path.stat().st_size
            log.warning(
                "state: %s ends in a half-written change (%d bytes at offset %d), ignored: the "
                "process died while writing it, before answering the request",
                path.name,
                size - reader.torn_at,
                reader.torn_at,
            )
        return count, reader.torn_at is not None

    @staticmethod
    def _check_header(header: Any, path: Path) -> None:
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise CorruptStateError(f"{path} is not a state file of format {FORMAT}")

    def _renames(self, header: Mapping[str, Any]) -> dict[str, str]:
        # Only ids that are URLs (queue URLs, which hold the embedded AWS's port) are worth looking
        # for in stored values; others that differ between runs (subscription ARNs) never appear
        # there, and each entry would cost a walk of every restored item.
        stored: Mapping[str, str] = header.get("names", {})
        return {
            old: self._names[logical_id]
            for logical_id, old in stored.items()
            if logical_id in self._names and self._names[logical_id] != old and "://" in old
        }

    def _apply(self, records: list[Record], renames: Mapping[str, str]) -> None:
        for record in records:
            service = self._services.get(record[0])
            if service is not None:
                service.apply(record, renames)
            elif record[0] not in self._unknown:
                self._unknown.add(record[0])
                log.warning("state: records of %s are kept by no service here; skipped", record[0])

    def _write_snapshot(self, journal_segment: int) -> dict[str, int]:
        """The whole state into a new snapshot followed by ``journal_segment``; counts by kind."""
        partial = self.data_dir / f"{SNAPSHOT_FILE}.partial"
        writer = FrameWriter(partial, self._header("snapshot", next_segment=journal_segment))
        counts = {service.kind: 0 for service in self._services.values()}
        try:
            with self._exclusive():
                for service in self._services.values():
                    for batch in service.dump():
                        writer.write_frame(batch)
                        counts[service.kind] += sum(len(record[-1]) for record in batch)
            writer.write_frame({"end": True, "counts": counts})
        finally:
            writer.close()
        os.replace(partial, self.data_dir / SNAPSHOT_FILE)  # never a half-written snapshot
        sync_directory(self.data_dir)
        self._snapshot_bytes = (self.data_dir / SNAPSHOT_FILE).stat().st_size
        return counts

    def _maintain(self) -> None:
        while not self._stopping.wait(self._fsync_interval):
            try:
                with self._lock:
                    segment = self._segment
                if segment is not None:
                    segment.sync()
                journal_bytes = self._replayed_bytes + (segment.size if segment else 0)
                if journal_bytes > max(self._compact_min_bytes, self._snapshot_bytes):
                    summary = self.compact()
                    log.info(
                        "state: compacted %d bytes of journal into a snapshot of %d bytes in %.1f s",
                        journal_bytes,
                        summary.bytes,
                        summary.seconds,
                    )
            except Exception:  # the next round tries again; a failing disk shows in the log
                log.exception("state: background fsync or compaction failed")

    def _stop_maintenance(self) -> None:
        self._stopping.set()
        if self._maintenance is not None:
            self._maintenance.join()
            self._maintenance = None
