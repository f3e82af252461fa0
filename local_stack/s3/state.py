"""S3's part of the durable state: every object write S3 answered (PutObject, a presigned PUT or
POST, CompleteMultipartUpload, CopyObject, DeleteObject(s)), and the event notifications that were
sent for an object but whose invocation had not finished.

Bodies are files of their own in ``<data dir>/s3-bodies/``, one per write (a fresh name each time,
so a name once unreferenced is never referenced again), written and fsynced before the record that
names them is journaled: a record in the journal always names a whole body, after ``kill -9`` and
after a power loss alike. Records hold the object's metadata only (content type, user metadata,
ETag, ...). Bodies no longer referenced by any object are deleted after a snapshot is in place
(``after_snapshot``), never before: until then the previous snapshot or journal may name them.

S3 requests are serialised by the embedded AWS, like DynamoDB's: a request notes which keys it
wrote (hooks on moto's ``S3Backend.put_object``, which CopyObject and CompleteMultipartUpload also
go through, and ``S3Backend.delete_object``, which DeleteObjects goes through); when it ends, each
key's current object (or a tombstone) is journaled in one frame, after the response layer has set
its metadata. Only an object's current version is kept (the template's buckets are not versioned).

Notifications: restoring puts objects back without moto's notifications, so no restored object is
announced twice. An event S3 sent but whose asynchronous invocation had not finished when the stack
stopped (an upload answered 200 whose split had not started: the job is still ``awaiting_upload``
and would wait forever) is kept with its object and delivered again after the start, as Lambda's
event queue would have delivered it (S3 notifications are delivered at least once: "Amazon S3
Event Notifications", S3 User Guide; Lambda keeps asynchronous events in its queue: "How Lambda
handles errors and retries with asynchronous invocation"). The splitter takes a duplicate for what
it is (its lease and offset checks), so an event delivered again never splits a file twice.

Records: ``["s3", "put", bucket, key, object]``, ``["s3", "del", bucket, key]``,
``["s3", "delivered", bucket, key, event id]``, and in snapshots
``["s3", "objects", bucket, [object, ...]]``; ``bucket`` is the bucket's logical id in the template
(its physical name for a bucket not in the template), so that a renamed bucket keeps its objects."""

import functools
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

from moto.s3.models import FakeBucket, FakeKey, S3Backend, s3_backends
from moto.utilities.utils import LowercaseDict

from local_stack.durability.journal import Record, sync_directory
from local_stack.durability.service import Sink

log = logging.getLogger(__name__)

SERVICE = "s3"
BODIES_DIR = "s3-bodies"
_SNAPSHOT_BATCH = 1000
_COPY_CHUNK = 8 * 1024 * 1024
# (bucket name, key) of the objects the current request wrote, per request thread.
_changes = threading.local()
_recording: "S3State | None" = None
_hooks_lock = threading.Lock()
# Attributes the state keeps on moto's FakeKey: the body file's name, and the events sent for it
# whose invocation has not finished (event id -> [function ARN, event]).
_BODY = "_durable_body"
_PENDING = "_durable_pending_events"

# Function ARN, event, and what to call once its invocation is over (success or retries exhausted).
Redeliver = Callable[[str, dict[str, Any], Callable[[], None]], object]


def body_path(key: FakeKey) -> Path | None:
    """The file that holds an object's body, where the durable state keeps one (the local Athena
    reads Parquet objects there rather than copying them)."""
    body = getattr(key, _BODY, None)
    return _recording.bodies / body if _recording is not None and body else None


class S3State:
    """The objects of every bucket of one account, with their bodies in ``data_dir``."""

    service = SERVICE
    kind = "objects"

    def __init__(self, account_id: str, data_dir: Path, buckets: Mapping[str, str]) -> None:
        """``buckets``: logical id -> this run's bucket name, for the template's buckets."""
        self.account_id = account_id
        self.bodies = data_dir / BODIES_DIR
        self._logical = {name: logical_id for logical_id, name in buckets.items()}
        self._physical = dict(buckets)
        self._sink: Sink | None = None
        self._lock = threading.Lock()  # the pending events of every key
        self._missing: set[str] = set()
        # While restoring: bucket name -> key -> stored object; event ids delivered before their
        # object's record was journaled (an invocation quicker than the end of the request).
        self._restored: dict[str, dict[str, dict[str, Any]]] = {}
        self._delivered: set[str] = set()

    @property
    def backend(self) -> S3Backend:
        # S3 is global: moto keeps its buckets under the partition, not a region.
        return s3_backends[self.account_id]["aws"]

    def record_into(self, sink: Sink | None) -> None:
        """Journal every change into ``sink`` from now on; None stops recording."""
        global _recording  # noqa: PLW0603 - moto's classes are global, so is what their hooks report to
        _install_hooks()
        self._sink = sink
        _recording = self if sink is not None else None

    def covers(self, backend: S3Backend) -> bool:
        return backend.account_id == self.account_id

    def end_request(self) -> None:
        """Journal the objects this thread's request wrote, their bodies first."""
        changed: dict[tuple[str, str], None] | None = getattr(_changes, "keys", None)
        if not changed:
            return
        _changes.keys = {}
        sink = self._sink
        if sink is None:
            return
        records: list[Record] = []
        for bucket_name, key_name in changed:
            bucket = self.backend.buckets.get(bucket_name)
            if bucket is None:
                continue
            key = bucket.keys.get(key_name)
            if isinstance(key, FakeKey):
                records.append([SERVICE, "put", self._bucket_id(bucket_name), key_name, self._stored(key)])
            else:
                records.append([SERVICE, "del", self._bucket_id(bucket_name), key_name])
        if records:
            sink.append(records)

    def dump(self) -> Iterator[list[Record]]:
        """Every object, in batches of records (called with S3 requests held off)."""
        for bucket in list(self.backend.buckets.values()):
            batch: list[dict[str, Any]] = []
            for key in _objects(bucket):
                batch.append({"key": key.name, **self._stored(key)})
                if len(batch) == _SNAPSHOT_BATCH:
                    yield [[SERVICE, "objects", self._bucket_id(bucket.name), batch]]
                    batch = []
            if batch:
                yield [[SERVICE, "objects", self._bucket_id(bucket.name), batch]]

    def after_snapshot(self) -> None:
        """Delete the bodies that no object refers to (called with S3 requests held off, once the
        snapshot is in place: no state file names them any more)."""
        if not self.bodies.is_dir():
            return
        referenced = {
            getattr(key, _BODY, None) for bucket in self.backend.buckets.values() for key in _objects(bucket)
        }
        removed = 0
        for path in self.bodies.iterdir():
            if path.name not in referenced:
                path.unlink(missing_ok=True)
                removed += 1
        if removed:
            log.debug("state: %d S3 bodies no longer referenced were deleted", removed)

    def apply(self, record: Record, renames: Mapping[str, str]) -> None:
        """Replay one record; bodies are read only for the objects still there at the end."""
        operation, bucket_id = record[1], record[2]
        objects = self._restored.setdefault(self._bucket_name(bucket_id), {})
        if operation == "put":
            objects[record[3]] = dict(record[4])
            self._drop_delivered(objects[record[3]])
        elif operation == "objects":
            for stored in record[3]:
                objects[stored["key"]] = stored
        elif operation == "del":
            objects.pop(record[3], None)
        elif operation == "delivered":
            stored = objects.get(record[3])
            self._delivered.add(record[4])
            if stored is not None:
                self._drop_delivered(stored)
        else:
            log.warning("state: unknown S3 record %r is skipped", operation)

    def finish_restore(self) -> int:
        """Put the restored objects into their buckets (without notifications); how many."""
        total = 0
        for bucket_name, objects in self._restored.items():
            bucket = self.backend.buckets.get(bucket_name)
            if bucket is None:
                if objects and bucket_name not in self._missing:
                    self._missing.add(bucket_name)
                    log.warning(
                        "state: bucket %s no longer exists; its saved objects are dropped", bucket_name
                    )
                continue
            for key_name, stored in objects.items():
                key = self._restore_key(bucket, key_name, stored)
                if key is not None:
                    bucket.keys.setlist(key_name, [key])
                    total += 1
        self._restored.clear()
        self._delivered.clear()
        return total

    # ---- notifications -------------------------------------------------------------------------

    def event_sent(self, event: dict[str, Any], function_arn: str) -> Callable[[], None]:
        """Note an event S3 sent for an object (before the request that wrote it is answered, so
        it is journaled with the object); returns what to call once its invocation is over."""
        record = (event.get("Records") or [{}])[0].get("s3", {})
        bucket_name = record.get("bucket", {}).get("name", "")
        key_name = _unquoted(record.get("object", {}).get("key", ""))
        bucket = self.backend.buckets.get(bucket_name)
        key = bucket.keys.get(key_name) if bucket is not None else None
        if not isinstance(key, FakeKey):
            return _nothing
        event_id = uuid.uuid4().hex
        with self._lock:
            pending = dict(getattr(key, _PENDING, None) or {})
            pending[event_id] = [function_arn, event]
            setattr(key, _PENDING, pending)
        return functools.partial(self._event_done, bucket_name, key, event_id)

    def redeliver(self, deliver: Redeliver) -> int:
        """Deliver again the events whose invocation had not finished when the state was saved;
        how many. Called once after the restore, with the functions running."""
        count = 0
        for bucket in list(self.backend.buckets.values()):
            for key in _objects(bucket):
                with self._lock:
                    pending = dict(getattr(key, _PENDING, None) or {})
                for event_id, (function_arn, event) in pending.items():
                    deliver(
                        function_arn,
                        event,
                        functools.partial(self._event_done, bucket.name, key, event_id),
                    )
                    count += 1
        return count

    def _event_done(self, bucket_name: str, key: FakeKey, event_id: str) -> None:
        with self._lock:
            pending = dict(getattr(key, _PENDING, None) or {})
            if pending.pop(event_id, None) is None:
                return
            setattr(key, _PENDING, pending)
        sink = self._sink
        if sink is not None:
            sink.append([[SERVICE, "delivered", self._bucket_id(bucket_name), key.name, event_id]])

    def _drop_delivered(self, stored: dict[str, Any]) -> None:
        events = stored.get("events")
        if events:
            stored["events"] = {
                event_id: event for event_id, event in events.items() if event_id not in self._delivered
            }

    # ---- objects and their bodies --------------------------------------------------------------

    def _stored(self, key: FakeKey) -> dict[str, Any]:
        """What the journal keeps of an object: its metadata and the name of its body file, which
        is written (and fsynced) here if the object has none yet."""
        body = getattr(key, _BODY, None)
        if body is None:
            body = self._write_body(key)
            setattr(key, _BODY, body)
        with self._lock:
            events = dict(getattr(key, _PENDING, None) or {})
        stored: dict[str, Any] = {
            "body": body,
            "size": key.size,
            "etag": key.etag[1:-1],  # moto quotes it when asked; FakeKey takes it bare
            "last_modified": key.last_modified.isoformat(),
            "metadata": dict(key.metadata),
            "storage_class": key.storage_class,
        }
        optional = {
            "encryption": key.encryption,
            "kms_key_id": key.kms_key_id,
            "bucket_key_enabled": key.bucket_key_enabled,
            "checksum_algorithm": key.checksum_algorithm,
            "checksum_value": key.checksum_value,
            "checksum_type": key.checksum_type,
            "website_redirect_location": key.website_redirect_location,
            "events": events,
        }
        stored.update({name: value for name, value in optional.items() if value})
        return stored

    def _write_body(self, key: FakeKey) -> str:
        """The object's body in a new file, fsynced (before any record names it)."""
        if not self.bodies.is_dir():
            self.bodies.mkdir(parents=True, exist_ok=True)
            sync_directory(self.bodies.parent)
        name = uuid.uuid4().hex
        path = self.bodies / name
        with path.open("wb") as out, key.lock:
            key._value_buffer.seek(0)
            shutil.copyfileobj(key._value_buffer, out, _COPY_CHUNK)
            out.flush()
            os.fsync(out.fileno())
        sync_directory(self.bodies)
        return name

    def _restore_key(self, bucket: FakeBucket, key_name: str, stored: dict[str, Any]) -> FakeKey | None:
        path = self.bodies / stored["body"]
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            size = -1
        if size != stored["size"]:
            log.warning(
                "state: the body of s3://%s/%s is missing or incomplete (%s); the object is dropped",
                bucket.name,
                key_name,
                path,
            )
            return None
        key = FakeKey(
            name=key_name,
            value=b"",
            account_id=self.account_id,
            region_name=bucket.region_name,
            storage=stored.get("storage_class"),
            etag=stored["etag"],
            bucket_name=bucket.name,
            encryption=stored.get("encryption"),
            kms_key_id=stored.get("kms_key_id"),
            bucket_key_enabled=stored.get("bucket_key_enabled"),
            checksum_value=stored.get("checksum_value"),
            checksum_type=stored.get("checksum_type"),
        )
        with path.open("rb") as source:
            shutil.copyfileobj(source, key._value_buffer, _COPY_CHUNK)
        key.contentsize = size
        key.last_modified = datetime.fromisoformat(stored["last_modified"])
        key._metadata = LowercaseDict(stored.get("metadata", {}))
        key.checksum_algorithm = stored.get("checksum_algorithm")
        key.website_redirect_location = stored.get("website_redirect_location")
        setattr(key, _BODY, stored["body"])
        if stored.get("events"):
            setattr(key, _PENDING, dict(stored["events"]))
        return key

    def _bucket_id(self, bucket_name: str) -> str:
        return self._logical.get(bucket_name, bucket_name)

    def _bucket_name(self, bucket_id: str) -> str:
        return self._physical.get(bucket_id, bucket_id)


def _objects(bucket: FakeBucket) -> Iterator[FakeKey]:
    """The current object of each key (no delete markers, no older versions)."""
    for key in bucket.keys.values():
        if isinstance(key, FakeKey):
            yield key


def _unquoted(key: str) -> str:
    # S3 event keys are URL-encoded, spaces as '+' (Event message structure, S3 User Guide).
    return unquote_plus(key)


def _nothing() -> None:
    return None


def _changed(backend: S3Backend, bucket_name: str, key_name: str) -> None:
    state = _recording
    if state is None or not state.covers(backend):
        return
    keys = getattr(_changes, "keys", None)
    if keys is None:
        keys = _changes.keys = {}
    keys[(bucket_name, key_name)] = None


def _install_hooks() -> None:
    """Wrap moto's object writers once per process; they report to whichever state is recording."""
    with _hooks_lock:
        if getattr(S3Backend.put_object, "_durable", False):
            return
        put_object, delete_object = S3Backend.put_object, S3Backend.delete_object

        def recorded_put_object(
            self: S3Backend, bucket_name: str, key_name: str, *args: Any, **kwargs: Any
        ) -> FakeKey:
            key = put_object(self, bucket_name, key_name, *args, **kwargs)
            _changed(self, bucket_name, key_name)
            return key

        def recorded_delete_object(
            self: S3Backend, bucket_name: str, key_name: str, *args: Any, **kwargs: Any
        ) -> tuple[bool, dict[str, Any]]:
            answer = delete_object(self, bucket_name, key_name, *args, **kwargs)
            _changed(self, bucket_name, key_name)
            return answer

        recorded_put_object._durable = True  # type: ignore[attr-defined]
        S3Backend.put_object = recorded_put_object  # type: ignore[method-assign]
        S3Backend.delete_object = recorded_delete_object  # type: ignore[method-assign]
