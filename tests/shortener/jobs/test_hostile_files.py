"""Any bytes as a bulk file: rows (some of them row errors) or a clear 4xx, never an exception that
would be a 5xx; and every data line of a text file has exactly one row."""

import csv
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from shortener.exceptions import InvalidCsvError, ShortenerError
from shortener.jobs.csv_reader import DEFAULT_FALLBACK, CsvRows, read_upload
from shortener.jobs.message_model import BulkRow

_BOM = b"\xef\xbb\xbf"

_LINES = st.sampled_from(
    [
        b"https://example.com/a", b"https://example.com/caf\xe9", b"https://example.com/\x81", b"",
        b'"https://example.com/q"x', b'"open', b"close\"", b"\xef\xbb\xbf", b"\x00", b"a,b,c", b" ",
        b"https://example.com/\xe2\x82", b"\r",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=300), content_type=st.sampled_from(["text/csv", "multipart/form-data"]))
def test_any_bytes_are_rows_or_a_4xx(body: bytes, content_type: str) -> None:
    try:
        uploaded = read_upload(body, content_type + "; boundary=x", max_bytes=10_000, max_rows=1_000)
    except ShortenerError as exc:
        assert 400 <= exc.status_code < 500
    else:
        assert uploaded.rows


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_LINES, max_size=30), block=st.integers(1, 50))
def test_every_data_line_after_a_url_header_is_one_row_or_blank(lines: list[bytes], block: int) -> None:
    # Given a header and any lines, in blocks of any size
    data = b"url\n" + b"\n".join(lines) + b"\n"
    rows = list(CsvRows([data[i : i + block] for i in range(0, len(data), block)], max_record_lines=3))
    # Then the rows are numbered upwards, never past the file's data lines, and no data line is lost:
    # every line with content before the last row is covered by a row (a quoted cell may span lines)
    numbers = [row.row for row in rows]
    assert numbers == sorted(set(numbers))
    assert all(1 <= number <= len(lines) for number in numbers)
    content = [number for number, line in enumerate(lines, 1) if line.strip(b" \r")]
    if not any(b'"' in line for line in lines):
        # Without quotes each line is a record: exactly the lines with content are rows
        assert numbers == content
    elif content:
        assert rows


# ---- every data line is one row: generated malformed files ------------------------------------------
#
# Each line with content carries a marker (#<n>#) that no fuzz piece can make or break, in the URL
# cell or where a quote swallowed it; a row's markers say which lines it holds. The invariant
# (docs/security.md, "Bulk files: encodings and row numbers"): every data line with content is
# exactly one row, numbered by its data line from 1 (blank lines counted, the header not; a quoted
# cell over several lines is one row, holding consecutive lines, and the lines after it count on
# from its number), in input order; or the file is refused whole (InvalidCsvError: the split ends
# the job early with it as the reason) and then only because its first line is no header and no
# URL. Fuzz pieces: quotes, separators of other files, spaces, UTF-8, Latin-1 and broken UTF-8
# characters, a byte neither UTF-8 nor cp1252, NUL, a BOM; never the file's own separator (a
# marker pushed into a column the reader does not carry would look lost).
_MARKER = re.compile(r"#(\d+)#")
_ENDING = re.compile(rb"\r\n|\r|\n")
_FUZZ = [
    b'"',
    b'""',
    b" ",
    b"x",
    b";",
    b"|",
    b"\t",
    b"\xc3\xa9",
    b"\xe9",
    b"\xe2\x82",
    b"\x81",
    b"\x00",
    _BOM,
]
_ENDINGS = {"LF": [b"\n"], "CRLF": [b"\r\n"], "CR": [b"\r"], "mixed": [b"\n", b"\r\n", b"\r"]}
# (header, separator): a header with a second column a quote may open in, one with the URL only,
# none (a list of URLs, whose separator is the tab).
_LAYOUTS = [(b"url,title", b","), (b"Long URL", b","), (None, b"\t")]


@st.composite
def _files(draw: st.DrawFn, max_lines: int = 30) -> tuple[bytes, bool]:
    """A file of marked lines with fuzz at the start of each cell and around the marker, and
    whether it has a header."""
    header, separator = draw(st.sampled_from(_LAYOUTS))
    pieces = [piece for piece in _FUZZ if piece != separator]
    fuzz = st.lists(st.sampled_from(pieces), max_size=2).map(b"".join)
    # A list of URLs is told by its first line: a URL as it is.
    lines = [header] if header else [b"https://e.example/#1#"]
    for number in range(1 if header else 2, draw(st.integers(1, max_lines)) + 1):
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from([b"", b" "])))
            continue
        line = draw(fuzz) + b"https://e.example/" + draw(fuzz) + b"#%d#" % number + draw(fuzz)
        if header == b"url,title" and draw(st.booleans()):
            line += b"," + draw(fuzz) + b"t" + draw(fuzz)
        lines.append(line)
    endings = _ENDINGS[draw(st.sampled_from(sorted(_ENDINGS)))]
    ends = [draw(st.sampled_from(endings)) for _ in lines]
    if draw(st.booleans()):
        ends[-1] = b""  # no ending after the last line
    data = b"".join(line + end for line, end in zip(lines, ends, strict=True))
    return (_BOM if draw(st.booleans()) else b"") + data, header is not None


def _markers(row: BulkRow) -> list[int]:
    text = " ".join([row.url, row.code, *(row.attributes or {}).values()])
    return [int(marker) for marker in _MARKER.findall(text)]


def _blank(line: bytes, separator: str) -> bool:
    """A line the reader skips (its number counted): every cell empty once stripped."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        try:
            text = line.decode(DEFAULT_FALLBACK)
        except UnicodeDecodeError:
            return False
    try:
        return not any(
            cell.strip() for cell in next(csv.reader([text], delimiter=separator, strict=True), [])
        )
    except csv.Error:
        return False


def _assert_every_data_line_is_one_row(
    data: bytes, has_header: bool, reader: CsvRows, separator: str
) -> None:
    """Reads ``reader`` to its end, checking each row against the lines it holds: from the line
    after the previous row's (blank lines skipped) to where its ``position`` says it ended."""
    lines = _ENDING.split(data.removeprefix(_BOM))
    if lines[-1] == b"":
        lines.pop()
    data_lines = lines[1:] if has_header else lines
    line_of = {
        int(marker): number
        for number, line in enumerate(data_lines, 1)
        for marker in _MARKER.findall(line.decode("latin-1"))
    }
    previous_end, merged = 0, 0
    for row in reader:
        end = reader.position.lines - has_header
        first = previous_end + 1
        while first < end and _blank(data_lines[first - 1], separator):
            first += 1
        # The row holds its lines: their markers, and only theirs
        assert sorted(_markers(row)) == sorted(m for m, at in line_of.items() if first <= at <= end), row
        # A row of several lines is a quoted cell over them, not an error
        assert end == first or not row.problem, row
        # Numbered by its data line, each row of several lines before it counting as one
        assert row.row == first - merged, row
        merged += end - first
        previous_end = end
    # And no line with content is left after the last row
    assert all(_blank(line, separator) for line in data_lines[previous_end:])


def _read(data: bytes, block: int) -> CsvRows:
    return CsvRows([data[i : i + block] for i in range(0, len(data), block)], max_record_lines=8)


@settings(max_examples=150, deadline=None)
@given(file=_files(), block=st.integers(1, 64), stop=st.integers(0, 40))
def test_every_data_line_of_a_malformed_file_is_exactly_one_row(
    file: tuple[bytes, bool], block: int, stop: int
) -> None:
    # Given a file of fuzzed lines (quotes, encodings, NULs, line endings), read in blocks of any size
    data, has_header = file
    separator = "," if has_header else "\t"
    # Then every data line with content is exactly one row, numbered as the docs say
    _assert_every_data_line_is_one_row(data, has_header, _read(data, block), separator)
    rows = list(_read(data, len(data)))
    assert list(_read(data, block)) == rows
    # And reading on from a saved position (another invocation) gives the same rows
    first = CsvRows([data], max_record_lines=8)
    taken = []
    for row in first:
        taken.append(row)
        if len(taken) > stop % max(len(rows), 1):
            break
    rest = CsvRows(
        [data[first.position.offset :]], start=first.position, file_format=first.format, max_record_lines=8
    )
    assert taken + list(rest) == rows


@settings(max_examples=20, deadline=None)
@given(file=_files(max_lines=8))
def test_a_malformed_file_cut_at_any_byte_loses_no_line(file: tuple[bytes, bool]) -> None:
    # Given a small fuzzed file
    data, has_header = file
    first_line = next((line for line in _ENDING.split(data.removeprefix(_BOM)) if line.strip()), b"")
    for end in range(len(data) + 1):
        # When it is cut at any byte (a transfer that stopped, a file saved half-way)
        cut = data[:end]
        separator = "," if has_header else "\t"
        try:
            _assert_every_data_line_is_one_row(cut, has_header, _read(cut, 7), separator)
        except InvalidCsvError:
            # Then it is refused whole only when its first line was cut (no header, no URL left)
            cut_first = next((line for line in _ENDING.split(cut.removeprefix(_BOM)) if line.strip()), b"")
            assert cut_first != first_line or not cut_first
