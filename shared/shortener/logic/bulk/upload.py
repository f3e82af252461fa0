"""Reading bulk files as people have them: a CSV (or ``;``, tab or ``|`` separated) with a header
that names the URL column the way other tools export it (``url``, ``link``, ``Long URL``,
``original_url``, ``destination``, ...), or a plain list of URLs with no header at all.

The reader works on a stream of bytes and keeps its position (byte offset, data rows and lines
read), so a large file is read block by block with flat memory, and reading can stop at a row
boundary and continue from there in another invocation."""

import csv
import re
from collections.abc import Iterable, Iterator
from email.parser import BytesParser
from email.policy import HTTP

from shortener.models.exceptions import InvalidCsvError, PayloadTooLargeError, UnsupportedMediaTypeError
from shortener.models.jobs import BulkRow, CsvFormat, ReadPosition
from shortener.models.links import ATTRIBUTE_COLUMNS

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
# A longer line is not a row of URLs; refusing it keeps a reader's memory bounded.
MAX_LINE_BYTES = 1024 * 1024
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
# Header names of the link attribute columns.
ATTRIBUTE_HEADERS = {
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
    "title": frozenset({"title"}),
    "tags": frozenset({"tags", "tag"}),
}
assert set(ATTRIBUTE_HEADERS) == set(ATTRIBUTE_COLUMNS)
_SHOWN_URL_HEADERS = "url (or link, long url, original_url, destination, target, href)"
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
            return CsvFormat(
                separator=separator,
                has_header=True,
                url_column=url_column,
                code_column=code_column,
                attribute_columns=attribute_columns,
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
    """The data rows of a bulk file, read from a stream of byte blocks as ``(url, code,
    attributes)``: the attribute cells that are not empty, or None.

    ``start`` continues a file from a row boundary read before (with the ``file_format`` found
    then); from offset 0 the format is detected from the first line and a header row is skipped.
    ``position`` is, after each row, where the next row starts. Blank lines are skipped and not
    counted as rows. InvalidCsvError for text that is not UTF-8, broken quoting, or a first line
    that is neither a header nor a URL."""

    def __init__(
        self,
        blocks: Iterable[bytes],
        *,
        start: ReadPosition | None = None,
        file_format: CsvFormat | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        start = start or ReadPosition()
        self.format = file_format
        self._blocks = blocks
        self._max_line_bytes = max_line_bytes
        self._offset, self._rows, self._lines = start.offset, start.rows, start.lines
        # Where the next row starts: (offset, rows, lines) as of the last row handed out.
        self._mark = (start.offset, start.rows, start.lines)
        if start.offset and file_format is None:
            raise ValueError("continuing a file needs the format found at its start")

    @property
    def position(self) -> ReadPosition:
        """Where the row after the last one handed out starts (a row boundary)."""
        offset, rows, lines = self._mark
        return ReadPosition(offset=offset, rows=rows, lines=lines)

    def __iter__(self) -> Iterator[tuple[str, str, dict[str, str] | None]]:
        text = self._text_lines()
        try:
            if self.format is None:
                first = next((line for line in text if line.strip()), None)
                if first is None:
                    raise InvalidCsvError(
                        f"The file is empty; expected a header row with a column named {_SHOWN_URL_HEADERS}, "
                        "or one URL per line."
                    )
                self.format = detect_format(first)
                if self.format.has_header:
                    self._mark = (self._offset, 0, self._lines)
                else:
                    text = _prepend(first, text)
            yield from self._records(text, self.format)
        except csv.Error as exc:
            raise InvalidCsvError(f"Line {self._lines} is not valid CSV: {exc}.") from exc

    def _records(
        self, text: Iterator[str], file_format: CsvFormat
    ) -> Iterator[tuple[str, str, dict[str, str] | None]]:
        url_column, code_column = file_format.url_column, file_format.code_column
        attribute_columns = file_format.attribute_columns.items()
        for record in csv.reader(text, delimiter=file_format.separator, strict=True):
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
            self._rows += 1
            self._mark = (self._offset, self._rows, self._lines)
            yield url, code, attributes

    def _text_lines(self) -> Iterator[str]:
        for raw in _lines(self._blocks, self._max_line_bytes, self._lines):
            start = self._offset
            self._offset += len(raw)
            self._lines += 1
            text = raw[len(_BOM) :] if start == 0 and raw.startswith(_BOM) else raw
            try:
                yield text.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidCsvError(
                    f"The file is not UTF-8 text: line {self._lines} (byte {start + exc.start:,}) "
                    "cannot be decoded. Save it as CSV UTF-8."
                ) from exc


def _prepend(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest


def _lines(blocks: Iterable[bytes], max_line_bytes: int, lines_before: int) -> Iterator[bytes]:
    """Lines (with their ending) of a stream of byte blocks. A "\\n" byte never occurs inside a
    multi-byte UTF-8 character, so splitting bytes on it is safe before decoding."""
    pending = b""
    count = lines_before
    for block in blocks:
        start = 0
        while (end := block.find(b"\n", start)) >= 0:
            line = pending + block[start : end + 1] if pending else block[start : end + 1]
            pending = b""
            count += 1
            if len(line) > max_line_bytes:
                raise InvalidCsvError(f"Line {count:,} is longer than {max_line_bytes:,} bytes.")
            yield line
            start = end + 1
        pending += block[start:]
        if len(pending) > max_line_bytes:
            raise InvalidCsvError(f"Line {count + 1:,} is longer than {max_line_bytes:,} bytes.")
    if pending:
        yield pending


# ---- a file in a request body ---------------------------------------------------------------------


def read_upload(raw: bytes, content_type: str, *, max_bytes: int, max_rows: int) -> list[BulkRow]:
    """The data rows of an uploaded CSV (a ``text/csv`` body or a file field of a multipart form).
    PayloadTooLargeError above ``max_bytes`` or ``max_rows``; InvalidCsvError for undecodable
    text, a first line that names no URL column and is no URL, or no rows."""
    if len(raw) > max_bytes:
        raise PayloadTooLargeError(
            f"The upload is larger than {max_bytes:,} bytes; upload it directly with POST /bulk/uploads."
        )
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == "multipart/form-data":
        raw = _file_from_multipart(raw, content_type)
    elif media_type not in _CSV_MEDIA_TYPES:
        raise UnsupportedMediaTypeError(
            f"Content type '{media_type}' is not accepted; send text/csv or a multipart/form-data upload."
        )
    return read_rows([raw], max_rows=max_rows)


def parse_csv(text: str, *, max_rows: int) -> list[BulkRow]:
    """The rows of a file's text (see ``CsvRows``)."""
    return read_rows([text.encode()], max_rows=max_rows)


def read_rows(blocks: Iterable[bytes], *, max_rows: int) -> list[BulkRow]:
    """Every row of a small file, at most ``max_rows`` (PayloadTooLargeError beyond)."""
    rows: list[BulkRow] = []
    for url, code, attributes in CsvRows(blocks):
        if len(rows) == max_rows:
            raise PayloadTooLargeError(
                f"The file has more than {max_rows:,} rows; upload it directly with POST /bulk/uploads."
            )
        rows.append(BulkRow(url=url, code=code, attributes=attributes))
    if not rows:
        raise InvalidCsvError("The file has a header but no rows.")
    return rows


def _file_from_multipart(raw: bytes, content_type: str) -> bytes:
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
    return payload if isinstance(payload, bytes) else b""
