"""The streamed ZIP writer: entries written as they come, the central directory handed out per
entry and appended at the end, ZIP64 where a count or an offset passes its limit. Read back with
Python's zipfile and with Info-ZIP's `unzip -t`."""

import io
import shutil
import struct
import subprocess
import zipfile
from pathlib import Path

import pytest

from shortener.jobs.zip_stream import ZipLimits, ZipStreamWriter


def build(contents: list[tuple[str, bytes]], *, deflate: bool, limits: ZipLimits | None = None) -> bytes:
    """An archive as a build writes it: entries, then the records kept aside, then the end."""
    writer = ZipStreamWriter(limits=limits)
    data, directory = bytearray(), bytearray()
    for name, content in contents:
        entry = writer.add(name, content, deflate=deflate)
        data += entry.data
        directory += entry.directory_record
    return bytes(data + directory + writer.end(len(directory)))


def unzip_test(archive: bytes, tmp_path: Path) -> str:
    path = tmp_path / "labels.zip"
    path.write_bytes(archive)
    answer = subprocess.run(["unzip", "-t", str(path)], capture_output=True, text=True, check=False)
    assert answer.returncode == 0, answer.stdout + answer.stderr
    return answer.stdout


needs_unzip = pytest.mark.skipif(shutil.which("unzip") is None, reason="Info-ZIP unzip is not installed")


@needs_unzip
def test_many_entries_read_back_whole_with_zipfile_and_unzip(tmp_path: Path) -> None:
    # Given 3,000 entries of varied sizes, deflated
    contents = [(f"{n:05d}-c{n}.svg", (b"<svg>%d</svg>" % n) * (n % 7 + 1)) for n in range(3000)]
    archive = build(contents, deflate=True)
    # Then zipfile finds every entry, in order, with its bytes and a good CRC
    opened = zipfile.ZipFile(io.BytesIO(archive))
    assert opened.namelist() == [name for name, _ in contents]
    assert opened.testzip() is None
    assert all(opened.read(name) == content for name, content in contents[::97])
    assert {info.compress_type for info in opened.infolist()} == {zipfile.ZIP_DEFLATED}
    assert {info.date_time for info in opened.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    # And unzip tests every entry without an error
    assert "No errors detected" in unzip_test(archive, tmp_path)


@needs_unzip
def test_past_the_zip64_limits_offsets_and_counts_go_in_zip64_records(tmp_path: Path) -> None:
    # Given limits low enough that a small archive crosses both: offsets past 300 bytes, 5 entries
    contents = [(f"{n:02d}-x.png", bytes([n]) * 100) for n in range(12)]
    archive = build(contents, deflate=False, limits=ZipLimits(offset=300, entries=5))
    # Then the end has the ZIP64 end record and locator before the classic end record
    assert archive[-22 - 20 : -22][:4] == b"PK\x06\x07"
    assert struct.unpack("<H", archive[-12:-10])[0] == 0xFFFF
    # And the entries past 300 bytes name their offsets in a ZIP64 extra field
    opened = zipfile.ZipFile(io.BytesIO(archive))
    offsets = [info.header_offset for info in opened.infolist()]
    assert offsets == [n * (30 + len("00-x.png") + 100) for n in range(12)]
    assert [info.extra != b"" for info in opened.infolist()] == [offset >= 300 for offset in offsets]
    assert [opened.read(name) for name, _ in contents] == [content for _, content in contents]
    assert opened.testzip() is None
    assert "No errors detected" in unzip_test(archive, tmp_path)


def test_below_the_limits_there_are_no_zip64_records() -> None:
    archive = build([("1-a.png", b"x" * 10)], deflate=False)
    assert b"PK\x06\x06" not in archive and b"PK\x06\x07" not in archive
    assert zipfile.ZipFile(io.BytesIO(archive)).read("1-a.png") == b"x" * 10


def test_a_writer_resumed_from_its_counters_continues_the_same_archive() -> None:
    # Given a writer that stopped after two entries, and a new one made from its offset and count
    first = ZipStreamWriter()
    entries = [first.add(f"{n}-c.svg", b"<svg/>" * n, deflate=True) for n in (1, 2)]
    resumed = ZipStreamWriter(offset=first.offset, entries=first.entries)
    entries.append(resumed.add("3-c.svg", b"<svg/>" * 3, deflate=True))
    directory = b"".join(entry.directory_record for entry in entries)
    archive = b"".join(entry.data for entry in entries) + directory + resumed.end(len(directory))
    # Then the archive is one whole, as if one writer had written it
    assert archive == build([(f"{n}-c.svg", b"<svg/>" * n) for n in (1, 2, 3)], deflate=True)
    assert zipfile.ZipFile(io.BytesIO(archive)).testzip() is None


def test_an_empty_archive_is_a_valid_zip() -> None:
    assert zipfile.ZipFile(io.BytesIO(build([], deflate=False))).namelist() == []
