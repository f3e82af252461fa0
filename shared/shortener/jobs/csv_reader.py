"""Reading bulk files as people have them: a CSV (or ``;``, tab or ``|`` separated) with a header
that names the URL column the way other tools export it (``url``, ``link``, ``Long URL``,
``original_url``, ``destination``, ...), or a plain list of URLs with no header at all.

The reader works on a stream of bytes and keeps its position (byte offset, data rows and lines
read), so a large file is read block by block with flat memory, and reading can stop at a row
boundary and continue from there in another invocation."""

import csv
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from email.parser import BytesParser
from email.policy import HTTP

from shortener.exceptions import InvalidCsvError, PayloadTooLargeError, UnsupportedMediaTypeError
from shortener.jobs.message_model import BulkRow
from shortener.jobs.model import CsvFormat, FileEncoding, ReadPosition
from shortener.links.model import ATTRIBUTE_COLUMNS

# Media types a CSV file arrives with from browsers, spreadsheets and scripts.
_CSV_MEDIA_TYPES = frozenset(
    {"", "text/csv", "application/csv", "text/plain", "application/vnd.ms-excel", "application/octet-stream"}
)
# Cells longer than any URL the settings allow are errors anyway; capping them keeps every message
# and chunk item far below the SQS and DynamoDB size limits.
MAX_URL_CELL = 33_000
MAX_CODE_CELL = 300
# Longer than any valid title or list of tags: the row is an error, the cell is not carried whole.
MAX_ATTRIBUTE_CELL = 1000
# A longer line is not a row of URLs: it is a row error, skipped without being kept in memory.
MAX_LINE_BYTES = 1024 * 1024
# A quoted cell may hold line breaks (a note column); one still open after this many lines was
# never closed, and only its first line is a row error (as is one still open at the end of the
# file, or at a line that cannot be read).
MAX_RECORD_LINES = 100
# What a line that is not UTF-8 is decoded with: Excel on Windows saves "CSV" in the system's ANSI
# code page, cp1252 in Western locales (a superset of Latin-1's printable characters).
DEFAULT_FALLBACK = "cp1252"
# Python's csv module refuses a field over 128 KiB by default ("field larger than field limit"):
# a quoted field may be as long as a line may be. (A process-wide setting, only ever raised.)
csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))
_BOM = b"\xef\xbb\xbf"
_SEPARATORS = (",", ";", "\t", "|")
_SEPARATOR_NAMES = {",": "commas", ";": "semicolons", "\t": "tabs", "|": "bars"}

# A form upload carries the file and perhaps a few fields; nothing legitimate has more parts.
MAX_MULTIPART_PARTS = 16
_MULTIPART_BOUNDARY = re.compile(
    r'boundary=(?:"(?P<quoted>[^"]{1,200})"|(?P<plain>[^\s;]{1,200}))', re.IGNORECASE
)


def _header_key(name: str) -> str:
    """A header cell reduced to what tells names apart: "Long URL", "long_url" and "LongUrl" are one."""
    return re.sub(r"[\s_\-.]+", "", name.strip().strip("\"'").lower())


# Header names of the URL column as shorteners, spreadsheets and marketing tools export them.
URL_HEADERS = frozenset(
    _header_key(name)
    for name in (
        "url", "urls", "link", "links", "long url", "long link", "original url", "original link",
        "destination", "destination url", "destination link", "target", "target url", "href",
        "website", "web address", "full url", "source url", "landing page", "landing page url",
        "redirect url", "uri",
    )
)  # fmt: skip
# Header names of the custom code column (Bitly "back-half", Rebrandly "slashtag", Dub "key", ...).
CODE_HEADERS = frozenset(
    _header_key(name)
    for name in (
        "code", "short code", "custom code", "slug", "alias", "custom alias", "keyword", "back half",
        "slashtag", "key", "short key",
    )
)  # fmt: skip
# Other header names of link attribute columns; every attribute's own name is one too.
_ATTRIBUTE_ALIASES = {
    "expires_at": frozenset(
        _header_key(name)
        for name in (
            "expires at",
            "expires",
            "expiry",
            "expiry date",
            "expiration",
            "expiration date",
            "valid until",
        )
    ),
    "max_clicks": frozenset(_header_key(name) for name in ("max clicks", "click limit", "max visits")),
    "tags": frozenset({"tags", "tag"}),
}
# Header names of the link attribute columns (shortener.links.model.ATTRIBUTE_COLUMNS).
ATTRIBUTE_HEADERS = {
    name: _ATTRIBUTE_ALIASES.get(name, frozenset({_header_key(name)})) for name in ATTRIBUTE_COLUMNS
}
_SHOWN_URL_HEADERS = "url (or link, long url, original_url, destination, target, href)"
# A header's columns read for nothing, as a job shows them: the first few, each cut short (a file
# may have thousands of columns).
MAX_IGNORED_COLUMNS = 20
MAX_IGNORED_COLUMN_NAME = 100
_LOOKS_LIKE_URL = re.compile(r"^(?:[a-z][a-z0-9+.\-]*://|www\.)\S", re.IGNORECASE)


def detect_format(first_line: str) -> CsvFormat:
    """How a file is laid out, from its first non-blank line: the separator and the URL (and
    code) column of a header row, or no header when the line itself starts with a URL.
    InvalidCsvError saying what the line holds and what is expected otherwise."""
    line = first_line.rstrip("\r\n")
    # The separator whose cells name a URL column wins; most cells first, so "a;b,c" splits on ";"
    # when it has more semicolons.
    for separator in sorted(_SEPARATORS, key=line.count, reverse=True):
        cells = _cells(line, separator)
        keys = [_header_key(cell) for cell in cells]
        url_column = next((index for index, key in enumerate(keys) if key in URL_HEADERS), None)
        if url_column is not None:
            code_column = next((index for index, key in enumerate(keys) if key in CODE_HEADERS), None)
            attribute_columns = {
                name: column
                for name, headers in ATTRIBUTE_HEADERS.items()
                if (column := next((index for index, key in enumerate(keys) if key in headers), None))
                is not None
            }
            used = {url_column, code_column, *attribute_columns.values()}
            ignored = [
                printable(cell.strip())[:MAX_IGNORED_COLUMN_NAME]
                for index, cell in enumerate(cells)
                if index not in used and cell.strip()
            ]
            return CsvFormat(
                separator=separator,
                has_header=True,
                url_column=url_column,
                code_column=code_column,
                attribute_columns=attribute_columns,
                ignored_columns=tuple(ignored[:MAX_IGNORED_COLUMNS]),
            )
    # No header: a plain list of URLs, one per line; the URL ends at a tab (a tab-separated export
    # keeps its URL first). Commas and semicolons are kept: a URL may contain them.
    first_cell = _cells(line, "\t")[0]
    if _LOOKS_LIKE_URL.match(first_cell.strip()):
        return CsvFormat(separator="\t", has_header=False, url_column=0)
    raise InvalidCsvError(_unreadable_first_line(line))


def _cells(line: str, separator: str) -> list[str]:
    try:
        return next(csv.reader([line], delimiter=separator)) or [""]
    except csv.Error:
        return line.split(separator)


def _unreadable_first_line(line: str) -> str:
    shown = printable(line[:120]) + ("..." if len(line) > 120 else "")
    separator = max(_SEPARATORS, key=line.count)
    cells = _cells(line, separator) if line.count(separator) else [line]
    if len(cells) > 1:
        names = ", ".join(f"'{printable(cell.strip()[:40])}'" for cell in cells[:8])
        found = f"the columns {names} (separated by {_SEPARATOR_NAMES[separator]})"
    else:
        found = f"'{shown}'"
    return (
        f"The first line holds {found}, which is neither a header naming the URL column nor a URL. "
        f"Expected a header row with a column named {_SHOWN_URL_HEADERS} and optionally code, "
        "or a list of URLs with one URL per line."
    )


def printable(text: str) -> str:
    """``text`` with control characters written as ``\\xNN`` (for messages about file content)."""
    return "".join(char if char.isprintable() else f"\\x{ord(char):02x}" for char in text)


class CsvRows:
    """The data rows of a bulk file, read from a stream of byte blocks as ``BulkRow`` values. Their
    ``attributes`` are the link attribute cells that are not empty (None: none).

    ``start`` continues a file from a row boundary read before (with the ``file_format`` found
    then); from offset 0 the format is detected from the first line and a header row is skipped.
    ``position`` is, after each row, where the next row starts.

    Nothing is dropped without a word: each line is decoded as UTF-8, and a line that is not with
    the format's fallback encoding (cp1252, what Excel on Windows saves); a line that still cannot
    be decoded, broken quoting, or a line longer than ``max_line_bytes`` is a row with a
    ``problem``, and reading goes on after it. A quote that is never closed (within
    ``max_record_lines``, before the end of the file or before a line that cannot be read) is a
    row error on the line it opened on, and the lines after it are read again as rows. Lines end
    with LF, CRLF or CR alone (classic Mac), mixed in any way. Rows are numbered by data line from
    1 (blank lines counted, though they give no row; a quoted cell over several lines is one), so
    ``row + 1`` is a spreadsheet's row number for a file with a header. InvalidCsvError only for a
    file that is not text at all, or a first line that is neither a header nor a URL."""

    def __init__(
        self,
        blocks: Iterable[bytes],
        *,
        start: ReadPosition | None = None,
        file_format: CsvFormat | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        max_record_lines: int = MAX_RECORD_LINES,
    ) -> None:
        start = start or ReadPosition()
        self.format = file_format
        self._source = _LineSource(
            _lines(blocks, max_line_bytes),
            offset=start.offset,
            lines=start.lines,
            fallback=file_format.fallback if file_format else DEFAULT_FALLBACK,
            fallback_lines=start.fallback_lines,
            max_line_bytes=max_line_bytes,
            max_record_lines=max_record_lines,
        )
        self._rows, self._number = start.rows, start.last_row_number
        self._mark = start
        if start.offset and file_format is None:
            raise ValueError("continuing a file needs the format found at its start")

    @property
    def position(self) -> ReadPosition:
        """Where the row after the last one handed out starts (a row boundary)."""
        return self._mark

    @property
    def fallback_lines(self) -> int:
        """The lines decoded with the fallback encoding, up to ``position``."""
        return self._mark.fallback_lines

    def _set_mark(self) -> None:
        source = self._source
        self._mark = ReadPosition(
            offset=source.offset,
            rows=self._rows,
            lines=source.lines,
            numbered=self._number,
            fallback_lines=source.fallback_lines,
        )

    def __iter__(self) -> Iterator[BulkRow]:
        if self.format is None:
            self.format = self._detect()
        yield from self._records(self.format)

    def _detect(self) -> CsvFormat:
        """The format, from the first non-blank line; leading blank lines are numbered rows."""
        source = self._source
        blank = 0
        while True:
            source.new_record()
            try:
                line = next(source)
            except StopIteration:
                raise InvalidCsvError(
                    f"The file is empty; expected a header row with a column named {_SHOWN_URL_HEADERS}, "
                    "or one URL per line."
                ) from None
            except _BadLine as bad:
                raise InvalidCsvError(f"The first line cannot be read: {bad.reason}") from None
            if line.strip():
                break
            blank += 1
        file_format = detect_format(line)
        if not file_format.has_header:
            # The first line is the first row: it is read again as one.
            source.push_back_record_from(len(source.record) - 1)
        source.new_record()
        self._number = blank
        self._set_mark()
        return file_format

    def _records(self, file_format: CsvFormat) -> Iterator[BulkRow]:
        url_column, code_column = file_format.url_column, file_format.code_column
        attribute_columns = file_format.attribute_columns.items()
        source = self._source
        while True:
            source.new_record()
            reader = csv.reader(source, delimiter=file_format.separator, strict=True)
            try:
                for record in reader:
                    self._number += 1
                    source.new_record()
                    if not any(cell.strip() for cell in record):
                        continue
                    url = record[url_column].strip()[:MAX_URL_CELL] if url_column < len(record) else ""
                    code = ""
                    if code_column is not None and code_column < len(record):
                        code = record[code_column].strip()[:MAX_CODE_CELL]
                    attributes = None
                    if attribute_columns:
                        attributes = {
                            name: cell
                            for name, column in attribute_columns
                            if column < len(record) and (cell := record[column].strip()[:MAX_ATTRIBUTE_CELL])
                        } or None
                    yield self._row(url, code, attributes)
                return
            except _BadLine as bad:
                # The line is one row error; reading goes on after it.
                self._number += 1
                shown, reason = bad.shown, bad.reason
            except csv.Error as exc:
                # Broken quoting; when a quoted cell ran over several lines before it broke, only
                # the line it opened on is the bad row, and the lines after it are read again.
                self._number += 1
                first_line, last_line = source.record_first_line, source.lines
                source.push_back_record_from(1)
                shown = source.record_text()
                where = f" (in line {last_line:,})" if last_line > first_line else ""
                reason = f"line {first_line:,} is not valid CSV: {exc}{where}."
            except _RunawayRecord as runaway:
                # A quote opened and never closed: only the line it opened on is the bad row, the
                # lines after it are read again as rows of their own.
                self._number += 1
                first_line = source.record_first_line
                source.push_back_record_from(1)
                shown = source.record_text()
                reason = f"line {first_line:,} opens a quoted cell that is not closed {runaway.where}."
            source.new_record()
            yield self._row(shown, "", problem=reason)

    def _row(
        self, url: str, code: str, attributes: dict[str, str] | None = None, *, problem: str = ""
    ) -> BulkRow:
        self._rows += 1
        self._set_mark()
        return BulkRow(url=url, code=code, row=self._number, problem=problem, attributes=attributes)


class _BadLine(Exception):
    def __init__(self, shown: str, reason: str) -> None:
        super().__init__(reason)
        self.shown, self.reason = shown, reason


class _RunawayRecord(Exception):
    """A quoted cell still open where it has to end (``where``: within the limits, by the end of
    the file, before a line that cannot be read)."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


@dataclass(frozen=True, slots=True)
class _Unreadable:
    """A line that is a row error by itself (not decodable, or too long), with its size in bytes."""

    shown: str
    reason: str
    size: int


class _LineSource:
    """Decoded lines for ``csv.reader``, keeping the byte offset, line count and fallback count,
    and the lines of the record being read so that they can be read again. A line that cannot be
    decoded raises _BadLine from ``__next__`` (the source stays usable: reading goes on after it).

    ``csv.reader`` asks for a line while a record is under way (``record`` not empty) only inside
    a quoted cell: such a cell that would run past the limits, the end of the file or a line that
    cannot be read raises _RunawayRecord (that line, kept, is read after the record's lines)."""

    def __init__(
        self,
        raw_lines: Iterator[bytes | int],
        *,
        offset: int,
        lines: int,
        fallback: str,
        fallback_lines: int,
        max_line_bytes: int,
        max_record_lines: int,
    ) -> None:
        self._raw = raw_lines
        self._max_record_lines = max_record_lines
        self._max_record_bytes = max_line_bytes
        self._fallback = fallback
        self._max_line_bytes = max_line_bytes
        self.offset, self.lines, self.fallback_lines = offset, lines, fallback_lines
        # (text, bytes, used the fallback) of each line of the current record, and lines to read again
        # (last first).
        self.record: list[tuple[str, int, bool]] = []
        self._again: list[tuple[str, int, bool] | _Unreadable] = []
        self.record_first_line = lines + 1

    def __iter__(self) -> "_LineSource":
        return self

    def __next__(self) -> str:
        if self.record and (
            len(self.record) >= self._max_record_lines
            or sum(size for _, size, _ in self.record) > self._max_record_bytes
        ):
            raise _RunawayRecord(f"within {self._max_record_lines} lines or {self._max_record_bytes:,} bytes")
        if self._again:
            line = self._again.pop()
        else:
            try:
                line = self._decode(next(self._raw))
            except StopIteration:
                if self.record:
                    raise _RunawayRecord("by the end of the file") from None
                raise
        if isinstance(line, _Unreadable):
            if self.record:
                self._again.append(line)
                raise _RunawayRecord(f"before line {self.lines + 1:,}, which cannot be read")
            self.offset += line.size
            self.lines += 1
            raise _BadLine(line.shown, line.reason)
        text, size, used_fallback = line
        self.offset += size
        self.lines += 1
        self.fallback_lines += used_fallback
        self.record.append(line)
        return text

    def _decode(self, raw: bytes | int) -> tuple[str, int, bool] | _Unreadable:
        number = self.lines + 1
        if isinstance(raw, int):
            return _Unreadable("", f"line {number:,} is longer than {self._max_line_bytes:,} bytes.", raw)
        text = raw[len(_BOM) :] if self.offset == 0 and raw.startswith(_BOM) else raw
        if self.offset == 0:
            _check_text(text)
        try:
            return text.decode("utf-8"), len(raw), False
        except UnicodeDecodeError:
            pass
        try:
            return text.decode(self._fallback), len(raw), True
        except UnicodeDecodeError as exc:
            shown = printable(text.decode("utf-8", "backslashreplace").rstrip("\r\n"))[:200]
            byte = self.offset + len(raw) - len(text) + exc.start
            return _Unreadable(
                shown, f"line {number:,} is neither UTF-8 nor {self._fallback} (byte {byte:,}).", len(raw)
            )

    def new_record(self) -> None:
        self.record = []
        self.record_first_line = self.lines + 1

    def record_text(self) -> str:
        return printable("".join(text for text, _, _ in self.record).rstrip("\r\n"))[:200]

    def push_back_record_from(self, index: int) -> None:
        """Read the current record's lines from ``index`` on again, as if not read yet."""
        again = self.record[index:]
        del self.record[index:]
        for _, size, used_fallback in again:
            self.offset -= size
            self.lines -= 1
            self.fallback_lines -= used_fallback
        self._again.extend(reversed(again))


def _check_text(first_line: bytes) -> None:
    """InvalidCsvError when a file's first line shows it is not text at all (a workbook, an image,
    UTF-16): every text encoding a CSV comes in, but UTF-16, is free of NUL bytes."""
    head = first_line[:4096]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InvalidCsvError(
            'The file is UTF-16 text (Excel\'s "Unicode text"); save it as CSV UTF-8 and upload it again.'
        )
    if head.startswith(b"PK\x03\x04"):
        raise InvalidCsvError(
            "The file is a workbook or a zip archive, not text; save it as CSV UTF-8 and upload it again."
        )
    if b"\x00" in head:
        raise InvalidCsvError("The file is not text (it holds NUL bytes); upload a CSV or a list of URLs.")


def _lines(blocks: Iterable[bytes], max_line_bytes: int) -> Iterator[bytes | int]:
    """Lines (with their ending: LF, CRLF, or CR alone as classic Mac files have it) of a stream of
    byte blocks; a line longer than ``max_line_bytes`` is skipped without being kept, and given as
    its length. Neither byte occurs inside a multi-byte UTF-8 character (nor in cp1252), so
    splitting bytes on them is safe before decoding."""
    pending = b""
    skipping = 0  # bytes of a long line skipped so far
    for block in _crlf_kept_whole(blocks):
        start = 0
        # Most files end lines with LF or CRLF: one find per line. A lone CR (CR-only or mixed
        # endings) takes a regular expression, block by block.
        lone_cr = b"\r" in block and block.count(b"\r") != block.count(b"\r\n")
        while True:
            if lone_cr:
                match = _LINE_END.search(block, start)
                if match is None:
                    break
                end = match.end()
            elif (end := block.find(b"\n", start) + 1) == 0:
                break
            piece = block[start:end]
            start = end
            if skipping:
                yield skipping + len(piece)
                skipping = 0
                continue
            line = pending + piece if pending else piece
            pending = b""
            yield len(line) if len(line) > max_line_bytes else line
        if skipping:
            skipping += len(block) - start
            continue
        pending += block[start:]
        if len(pending) > max_line_bytes:
            skipping, pending = len(pending), b""
    if skipping:
        yield skipping
    elif pending:
        yield len(pending) if len(pending) > max_line_bytes else pending


_LINE_END = re.compile(rb"\r\n?|\n")


def _crlf_kept_whole(blocks: Iterable[bytes]) -> Iterator[bytes]:
    """The blocks, a CR that ends one moved to the start of the next: whether it ends a line alone
    or with the LF after it, one block then tells."""
    carried = b""
    for received in blocks:
        block = carried + received if carried else received
        carried = b"\r" if block.endswith(b"\r") else b""
        if carried:
            block = block[:-1]
        if block:
            yield block
    if carried:
        yield carried


# ---- a file in a request body ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UploadedFile:
    """The rows of a small file, how its text was decoded, its header's columns read for nothing
    (``CsvFormat.ignored_columns``), and its name when the upload gave one (a multipart file
    field's ``filename``)."""

    rows: list[BulkRow]
    encoding: FileEncoding
    file_name: str | None = None
    ignored_columns: tuple[str, ...] = ()


def read_upload(raw: bytes, content_type: str, *, max_bytes: int, max_rows: int) -> UploadedFile:
    """The data rows of an uploaded CSV (a ``text/csv`` body or a file field of a multipart form).
    PayloadTooLargeError above ``max_bytes`` or ``max_rows``; InvalidCsvError for a file that is
    not text, a first line that names no URL column and is no URL, or no rows. Lines that cannot
    be read are rows with a ``problem`` (see ``CsvRows``)."""
    if len(raw) > max_bytes:
        raise PayloadTooLargeError(
            f"The upload is larger than {max_bytes:,} bytes; upload it directly with POST /bulk/uploads."
        )
    media_type = content_type.split(";", 1)[0].strip().lower()
    file_name = None
    if media_type == "multipart/form-data":
        raw, file_name = _file_from_multipart(raw, content_type)
    elif media_type not in _CSV_MEDIA_TYPES:
        raise UnsupportedMediaTypeError(
            f"Content type '{media_type}' is not accepted; send text/csv or a multipart/form-data upload."
        )
    uploaded = read_file([raw], max_rows=max_rows)
    return replace(uploaded, file_name=file_name) if file_name else uploaded


def parse_csv(text: str, *, max_rows: int) -> list[BulkRow]:
    """The rows of a file's text (see ``CsvRows``)."""
    return read_file([text.encode()], max_rows=max_rows).rows


def read_file(blocks: Iterable[bytes], *, max_rows: int) -> UploadedFile:
    """Every row of a small file, at most ``max_rows`` (PayloadTooLargeError beyond)."""
    rows: list[BulkRow] = []
    reader = CsvRows(blocks)
    for row in reader:
        if len(rows) == max_rows:
            raise PayloadTooLargeError(
                f"The file has more than {max_rows:,} rows; upload it directly with POST /bulk/uploads."
            )
        rows.append(row)
    if not rows:
        raise InvalidCsvError("The file has a header but no rows.")
    assert reader.format is not None
    encoding = FileEncoding(fallback=reader.format.fallback, fallback_lines=reader.fallback_lines)
    return UploadedFile(rows=rows, encoding=encoding, ignored_columns=reader.format.ignored_columns)


def _file_from_multipart(raw: bytes, content_type: str) -> tuple[bytes, str | None]:
    """The file field's bytes, and its file name (None when the form gave none)."""
    boundary = _MULTIPART_BOUNDARY.search(content_type)
    if boundary is None:
        raise InvalidCsvError("The multipart upload has no boundary in its Content-Type.")
    # The email parser spends CPU on every part (seconds for tens of thousands of tiny ones, all
    # within the size limit): count the delimiters first, which costs one pass over the bytes.
    delimiter = b"--" + (boundary["quoted"] or boundary["plain"]).encode("latin-1", "replace")
    if raw.count(delimiter) > MAX_MULTIPART_PARTS + 1:
        raise InvalidCsvError(
            f"The multipart upload has more than {MAX_MULTIPART_PARTS} parts; send the CSV as one file field."
        )
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1", "replace") + b"\r\n\r\n" + raw
    )
    if not message.is_multipart():
        raise InvalidCsvError("The multipart upload could not be read (is its boundary right?).")
    parts = list(message.iter_parts())
    chosen = next((part for part in parts if part.get_filename()), None) or next(
        (part for part in parts if part.get_param("name", header="content-disposition") in ("file", "csv")),
        None,
    )
    if chosen is None:
        raise InvalidCsvError("The upload has no file field.")
    payload = chosen.get_payload(decode=True)
    return (payload if isinstance(payload, bytes) else b""), chosen.get_filename() or None
