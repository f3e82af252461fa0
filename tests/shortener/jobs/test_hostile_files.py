"""Any bytes as a bulk file: rows (some of them row errors) or a clear 4xx, never an exception that
would be a 5xx; and every data line of a text file has exactly one row."""

from hypothesis import given, settings
from hypothesis import strategies as st

from shortener.exceptions import ShortenerError
from shortener.jobs.csv_reader import CsvRows, read_upload

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
