"""A ZIP archive written as a stream of any size, its central directory kept out of memory.

Python's zipfile keeps one ``ZipInfo`` per entry until it writes the central directory at the
end (about 1 kB an entry). Here each entry gives two byte strings as it is added: its local
header and data (the archive's next bytes) and its central directory record, which the caller
spills wherever it likes (S3 objects, a file) and hands back, in order, after the last entry.
The writer itself holds only counters, so its state is a few numbers that a build can save and
resume from in another process.

Entries are whole in memory when added (a QR image), so their CRC and sizes go in the local
header and no data descriptor is needed. ZIP64 (APPNOTE 6.3.10, sections 4.3.14-4.3.16 and
4.5.3) is used only where a field would overflow: an entry whose local header starts at or past
4 GiB gets a ZIP64 extra field in its central record, and an archive of 65,535 entries or more,
or whose central directory starts or ends past 4 GiB, gets the ZIP64 end records. The limits
are parameters so tests can cross them with a small archive."""

import struct
import zlib
from dataclasses import dataclass

# Fields of 16 and 32 bits hold at most these; a value at the limit means "see the ZIP64 record".
MAX_16 = 0xFFFF
MAX_32 = 0xFFFFFFFF
# MS-DOS date and time of 1980-01-01 00:00:00: the same bytes every time an archive is built.
_DOS_DATE = (1 << 5) | 1
_DOS_TIME = 0
_STORED, _DEFLATED = 0, 8
# Made by Unix (3) with version 4.5 features at most; regular files, rw-r--r--.
_MADE_BY = (3 << 8) | 45
_EXTERNAL_ATTRIBUTES = 0o100644 << 16
_LOCAL = struct.Struct("<4sHHHHHLLLHH")
_CENTRAL = struct.Struct("<4sHHHHHHLLLHHHHHLL")
_END = struct.Struct("<4sHHHHLLH")
_END64 = struct.Struct("<4sQHHLLQQQQ")
_LOCATOR64 = struct.Struct("<4sLQL")


@dataclass(frozen=True, slots=True)
class ZipLimits:
    """Where ZIP64 starts: the format's own limits unless a test lowers them."""

    offset: int = MAX_32
    entries: int = MAX_16


@dataclass(frozen=True, slots=True)
class ZipEntry:
    """One added entry: the archive's next bytes, and its central directory record."""

    data: bytes
    directory_record: bytes


class ZipStreamWriter:
    """Adds entries to an archive whose bytes the caller writes in order (see the module
    docstring). ``offset`` and ``entries`` resume a writer that had written that many bytes and
    entries before."""

    def __init__(self, *, offset: int = 0, entries: int = 0, limits: ZipLimits | None = None) -> None:
        self.offset = offset
        self.entries = entries
        self._limits = limits or ZipLimits()

    def add(self, name: str, content: bytes, *, deflate: bool) -> ZipEntry:
        """The local header and data of ``content`` as entry ``name``, and its central record."""
        encoded = name.encode("ascii")
        crc = zlib.crc32(content)
        if deflate:
            compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
            stored = compressor.compress(content) + compressor.flush()
            method = _DEFLATED
        else:
            stored, method = content, _STORED
        if len(content) >= MAX_32 or len(stored) >= MAX_32:
            raise ValueError(f"{name}: entries of 4 GiB or more are not written")
        local = _LOCAL.pack(
            b"PK\x03\x04",
            20,
            0,
            method,
            _DOS_TIME,
            _DOS_DATE,
            crc,
            len(stored),
            len(content),
            len(encoded),
            0,
        )
        header_offset = self.offset
        zip64 = header_offset >= self._limits.offset
        extra = struct.pack("<HHQ", 0x0001, 8, header_offset) if zip64 else b""
        record = _CENTRAL.pack(
            b"PK\x01\x02",
            _MADE_BY,
            45 if zip64 else 20,
            0,
            method,
            _DOS_TIME,
            _DOS_DATE,
            crc,
            len(stored),
            len(content),
            len(encoded),
            len(extra),
            0,
            0,
            0,
            _EXTERNAL_ATTRIBUTES,
            MAX_32 if zip64 else header_offset,
        )
        data = local + encoded + stored
        self.offset += len(data)
        self.entries += 1
        return ZipEntry(data, record + encoded + extra)

    def end(self, directory_size: int) -> bytes:
        """The end records, written after the central directory (``directory_size`` bytes, the
        records of every entry in order, starting at the offset where the last entry ended)."""
        start = self.offset
        limits = self._limits
        zip64 = (
            self.entries >= limits.entries
            or start >= limits.offset
            or start + directory_size >= limits.offset
        )
        records = b""
        if zip64:
            end64_at = start + directory_size
            records += _END64.pack(
                b"PK\x06\x06",
                _END64.size - 12,
                _MADE_BY,
                45,
                0,
                0,
                self.entries,
                self.entries,
                directory_size,
                start,
            )
            records += _LOCATOR64.pack(b"PK\x06\x07", 0, end64_at, 1)
        count = MAX_16 if zip64 else self.entries
        records += _END.pack(
            b"PK\x05\x06",
            0,
            0,
            count,
            count,
            MAX_32 if zip64 else directory_size,
            MAX_32 if zip64 else start,
            0,
        )
        return records
