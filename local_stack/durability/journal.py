"""Files of framed records: the journal's segments and the snapshots.

A frame is an 8-byte header, the payload's length and its CRC-32 (both big-endian), then the
payload: UTF-8 JSON, a list of records. The first frame of every file is a header object. A process
killed in the middle of a write() leaves a frame that is short or fails its checksum; reading stops
there (the torn tail) and keeps every frame before it, which were all complete when the process
answered anything.

A write() to a file reaches the operating system's page cache before it returns, so a frame survives
`kill -9` of the process as soon as write() has returned; only fsync() makes it survive a power
loss or a kernel crash (Linux's write(2) and fsync(2) manual pages)."""

import base64
import json
import os
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_HEADER = struct.Struct(">II")
# A length above this is a torn or foreign header, not a frame: no record batch comes near it.
_MAX_FRAME_BYTES = 1 << 30

Record = list[Any]


class CorruptStateError(Exception):
    """A file that must be whole (a snapshot) is not: the state cannot be trusted."""


def encode(payload: Any) -> bytes:
    """One frame holding ``payload``: anything JSON can write, and bytes, written as base64 text
    (as binary values travel in AWS's JSON protocols; the reader of a record knows where)."""
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, default=_base64).encode("utf-8")
    return _HEADER.pack(len(data), zlib.crc32(data)) + data


def _base64(value: Any) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} cannot be journaled")


@dataclass
class FrameReader:
    """The frames of one file, in order; ``torn_at`` is the offset of a torn tail, if one was met."""

    path: Path
    torn_at: int | None = None

    def __iter__(self) -> Iterator[Any]:
        data = self.path.read_bytes()
        offset = 0
        while offset < len(data):
            header = data[offset : offset + _HEADER.size]
            if len(header) < _HEADER.size:
                self.torn_at = offset
                return
            length, checksum = _HEADER.unpack(header)
            start = offset + _HEADER.size
            payload = data[start : start + length]
            if length > _MAX_FRAME_BYTES or len(payload) < length or zlib.crc32(payload) != checksum:
                self.torn_at = offset
                return
            try:
                value = json.loads(payload)
            except ValueError:  # a checksum collision on garbage: as torn as a short frame
                self.torn_at = offset
                return
            yield value
            offset = start + length


class FrameWriter:
    """An open file that frames are appended to, each with one write() under a lock, so that the
    frames of concurrent writers never interleave."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        self.lock = threading.RLock()
        self.size = 0
        self._unsynced = False
        self.write_frame(header)

    def write_frame(self, payload: Any) -> None:
        """Append one frame; it is in the page cache when this returns."""
        self.write_encoded(encode(payload))

    def write_encoded(self, frame: bytes) -> None:
        """Append a frame made by encode()."""
        with self.lock:
            view = memoryview(frame)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            self.size += len(frame)
            self._unsynced = True

    def sync(self) -> None:
        """fsync() if anything was written since the last one."""
        with self.lock:
            if not self._unsynced:
                return
            self._unsynced = False
            fd = self._fd
        os.fsync(fd)

    def close(self) -> None:
        """fsync() and close."""
        with self.lock:
            if self._fd < 0:
                return
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1


def sync_directory(directory: Path) -> None:
    """fsync() a directory, so that a rename or a new file in it survives a power loss."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
