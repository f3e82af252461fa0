"""Reading bulk files as people have them, without AWS: separators, header names other tools
export, plain lists of URLs, clear errors, and reading on from a saved position."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shortener.exceptions import InvalidCsvError
from shortener.jobs.cost import cost_line
from shortener.jobs.csv_reader import CsvRows, detect_format, parse_csv, read_upload
from shortener.jobs.message_model import BulkRow
from shortener.jobs.model import Job, JobUsage, ReadPosition, SplitState, UploadSource
from shortener.jobs.packing import MessagePacker
from shortener.jobs.status import stalled_work


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        # A spreadsheet saved in a locale whose lists use semicolons, with an exporter's names.
        (
            "Name;Long URL;Short code\nx;https://a.example/?q=1,2;promo\n",
            [("https://a.example/?q=1,2", "promo")],
        ),
        ("link\thits\nhttps://a.example/\t3\n", [("https://a.example/", "")]),
        ("original_url,alias\nhttps://a.example/,sale\n", [("https://a.example/", "sale")]),
        ("Destination|Slashtag\nhttps://a.example/|x1\n", [("https://a.example/", "x1")]),
        ('"Long URL","Back-half"\n"https://a.example/","spring"\n', [("https://a.example/", "spring")]),
        ("URL,Code\nhttps://a.example/,\n", [("https://a.example/", "")]),
    ],
)
def test_the_url_column_is_found_under_the_names_other_tools_export(text: str, rows: list[tuple]) -> None:
    assert [(row.url, row.code) for row in parse_csv(text, max_rows=10)] == rows


def test_columns_the_reader_does_not_know_are_named_in_the_files_order() -> None:
    # Given a header with a typo ("titel"), another tool's column, an empty cell and a second URL column
    file_format = detect_format("Notes;url;titel;;Title;code;link\r\n")
    # Then those read for nothing are named, as the header spells them; the empty cell is no column
    assert file_format.ignored_columns == ("Notes", "titel", "link")
    assert detect_format("url,code,title,tags\n").ignored_columns == ()


def test_only_the_first_columns_read_for_nothing_are_named_and_each_cut_short() -> None:
    header = "url," + ",".join(f"c{n}" for n in range(50)) + "," + "x" * 500
    ignored = detect_format(header).ignored_columns
    assert ignored == tuple(f"c{n}" for n in range(20))
    assert detect_format("url," + "x" * 500).ignored_columns == ("x" * 100,)


def test_a_plain_list_of_urls_needs_no_header() -> None:
    # Given a list of URLs as pasted from a browser, one of them with commas and semicolons
    text = "https://a.example/\nhttps://b.example/?x=1,2;y\n\nwww.c.example/path\n"
    # When it is read
    rows = parse_csv(text, max_rows=10)
    # Then every line is a row, the URL whole
    assert [row.url for row in rows] == [
        "https://a.example/",
        "https://b.example/?x=1,2;y",
        "www.c.example/path",
    ]


def test_a_first_line_that_is_neither_header_nor_url_says_what_it_holds_and_what_is_expected() -> None:
    with pytest.raises(InvalidCsvError) as raised:
        detect_format("Name;Address;Phone\r\n")
    message = raised.value.message
    assert "'Name', 'Address', 'Phone'" in message and "semicolons" in message
    assert "column named url (or link, long url" in message and "one URL per line" in message


def test_control_characters_in_an_unreadable_first_line_are_shown_escaped() -> None:
    with pytest.raises(InvalidCsvError) as raised:
        detect_format("\x00\x01garbage")
    assert "\\x00\\x01garbage" in raised.value.message


def test_a_line_neither_utf8_nor_cp1252_is_a_row_error_naming_its_line_and_byte() -> None:
    rows = list(CsvRows([b"url\nhttps://a.example/\nhttps://b.example/\x81\nhttps://c.example/\n"]))
    assert [row.problem for row in rows] == ["", "line 3 is neither UTF-8 nor cp1252 (byte 41).", ""]
    assert rows[1].url == "https://b.example/\\x81" and [row.row for row in rows] == [1, 2, 3]


def test_a_line_longer_than_the_limit_is_a_row_error_skipped_without_reading_it_all() -> None:
    blocks = iter([b"url\n", b"https://a.example/" + b"a" * 600, b"a" * 600, b"\nhttps://b.example/\n"])
    rows = list(CsvRows(blocks, max_line_bytes=1000))
    assert [(row.row, row.url, row.problem) for row in rows] == [
        (1, "", "line 2 is longer than 1,000 bytes."),
        (2, "https://b.example/", ""),
    ]


def test_a_quote_left_open_50_lines_before_the_end_is_one_row_error_and_every_line_a_row() -> None:
    # Given the report's file: 200 URLs, the 150th opening a quote that is never closed
    lines = [f"https://example.com/{number}" for number in range(1, 201)]
    lines[149] = '"' + lines[149]
    data = ("url\n" + "\n".join(lines) + "\n").encode()
    # When it is read
    rows = read_upload(data, "text/csv", max_bytes=100_000, max_rows=1_000).rows
    # Then every line is one row, numbered by its line; only the line with the quote is an error
    assert [row.row for row in rows] == list(range(1, 201))
    assert [row.url for row in rows] == lines
    assert [row.row for row in rows if row.problem] == [150]
    assert rows[149].problem == "line 151 opens a quoted cell that is not closed by the end of the file."


def test_a_quote_left_open_before_a_line_that_cannot_be_read_is_an_error_on_its_own_line() -> None:
    # Given a quote opened on the first row and, two lines on, a line neither UTF-8 nor cp1252
    data = b'url\n"https://a.example/\nhttps://b.example/\nhttps://c.example/\x81\nhttps://d.example/\n'
    rows = list(CsvRows([data]))
    # Then each line is its own row, in order, the two bad ones errors that say why
    assert [(row.row, row.url) for row in rows] == [
        (1, '"https://a.example/'),
        (2, "https://b.example/"),
        (3, "https://c.example/\\x81"),
        (4, "https://d.example/"),
    ]
    assert rows[0].problem == (
        "line 2 opens a quoted cell that is not closed before line 4, which cannot be read."
    )
    assert rows[2].problem == "line 4 is neither UTF-8 nor cp1252 (byte 61)."
    assert not rows[1].problem and not rows[3].problem


def test_quoting_that_breaks_lines_after_it_opened_is_an_error_on_its_first_line_only() -> None:
    rows = list(CsvRows([b'url\n"https://a.example/\nhttps://b.example/"x\nhttps://c.example/\n']))
    assert [(row.row, row.url, row.problem) for row in rows] == [
        (1, '"https://a.example/', "line 2 is not valid CSV: ',' expected after '\"' (in line 3)."),
        (2, 'https://b.example/"x', ""),
        (3, "https://c.example/", ""),
    ]


@pytest.mark.parametrize("ending", ["\r", "\n", "\r\n"])
def test_lines_ending_in_cr_alone_lf_or_crlf_are_read_alike_in_blocks_of_any_size(ending: str) -> None:
    # Given a classic Mac file (CR alone), a Unix one and a Windows one, with a quoted line break
    text = ending.join(["url,note", "https://a.example/,x", "", 'https://b.example/,"two', 'lines"', ""])
    data = text.encode()
    for block in range(1, len(data) + 1):
        # When it is read in blocks of any size (a CR may end one block and its LF start the next)
        rows = list(CsvRows([data[i : i + block] for i in range(0, len(data), block)]))
        # Then the rows are the same whatever the ending, numbered alike
        assert [(row.row, row.url, row.problem) for row in rows] == [
            (1, "https://a.example/", ""),
            (3, "https://b.example/", ""),
        ]


def test_mixed_line_endings_are_each_a_line() -> None:
    data = b"url\rhttps://a.example/\r\nhttps://b.example/\nhttps://c.example/\r\rhttps://d.example/"
    rows = list(CsvRows([data]))
    assert [(row.row, row.url) for row in rows] == [
        (1, "https://a.example/"),
        (2, "https://b.example/"),
        (3, "https://c.example/"),
        (5, "https://d.example/"),
    ]


def test_positions_are_row_boundaries_and_count_rows_and_lines() -> None:
    # Given a file with a BOM, CRLF endings, a blank line and a quoted line break
    data = '\ufeffurl,note\r\nhttps://a.example/,x\r\n\r\nhttps://b.example/,"two\r\nlines"\r\n'.encode()
    reader = CsvRows([data])
    # When it is read row by row
    positions = []
    for _ in reader:
        positions.append(reader.position)
    # Then each position is where the next row starts, and the blank line has a number too
    first_end = len("\ufeffurl,note\r\nhttps://a.example/,x\r\n".encode())
    assert positions == [
        ReadPosition(offset=first_end, rows=1, lines=2, numbered=1),
        ReadPosition(offset=len(data), rows=2, lines=5, numbered=3),
    ]


@given(
    urls=st.lists(
        st.from_regex(r"https://[a-z]{1,8}\.example/[a-z0-9]{0,12}", fullmatch=True)
        # Blank lines, a line that is Latin-1, a line that is neither UTF-8 nor cp1252.
        | st.sampled_from(["", "https://l.example/caf\udce9", "https://x.example/\udc81"]),
        min_size=1,
        max_size=40,
    ).filter(lambda urls: urls[0].isascii() and bool(urls[0])),
    header=st.sampled_from(["url", "Long URL", "link;code", "destination\tslug", None]),
    block=st.integers(1, 64),
    stop=st.integers(0, 39),
)
def test_reading_on_from_any_saved_position_gives_the_same_rows(
    urls: list[str], header: str | None, block: int, stop: int
) -> None:
    # Given a file in any layout, delivered in blocks of any size
    separator = ";" if header and ";" in header else "\t" if header and "\t" in header else ","
    lines = ([header] if header else []) + [
        url + (separator if header and separator != "," else "") for url in urls
    ]
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
    whole = list(CsvRows([data[i : i + block] for i in range(0, len(data), block)]))
    # When reading stops after some row and a new reader continues from the saved position
    first = CsvRows([data])
    taken = []
    for row in first:
        taken.append(row)
        if len(taken) > stop % len(whole):
            break
    position = first.position
    rest = CsvRows([data[position.offset :]], start=position, file_format=first.format)
    # Then the two parts are the whole file, each row once, and the counts carry on
    assert taken + list(rest) == whole
    assert rest.position.rows == len(whole)
    assert rest.position.fallback_lines == sum("\udce9" in url for url in urls)
    # And every line but the blank ones is a row, numbered by its line
    assert [row.row for row in whole] == [number for number, url in enumerate(urls, 1) if url]
    assert [row.url for row in whole if not row.problem] == [
        url.replace("\udce9", "\u00e9") for url in urls if url and "\udc81" not in url
    ]
    assert [bool(row.problem) for row in whole] == ["\udc81" in url for url in urls if url]


def test_packing_again_from_a_message_boundary_gives_the_same_messages() -> None:
    rows = [(f"https://example.com/{n}" + "x" * (n % 7) * 30, "") for n in range(100)]

    def pack(start_chunk: int, start_row: int, part: list[tuple[str, str]]) -> list:
        packer = MessagePacker(
            "j", own_host=None, max_rows=9, max_bytes=400, first_chunk=start_chunk, first_row=start_row
        )
        messages = [message for url, code in part if (message := packer.add(url, code))]
        return [*messages, packer.flush()]

    whole = pack(0, 1, rows)
    # When packing restarts after the third message, from the row it starts with
    restart = whole[3]
    again = pack(restart.chunk, restart.first_row, rows[restart.first_row - 1 :])
    assert again == whole[3:]


def _upload_job(**changes: object) -> Job:
    job = Job(
        job_id="a" * 32,
        total=10,
        chunks=1,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        kind="upload",
        split_done=False,
        upload=UploadSource(key="uploads/x.csv", file_name="x.csv", size=100, etag="e"),
        split=SplitState(),
    )
    return job.model_copy(update=changes)


NOW = datetime(2026, 1, 1, 1, tzinfo=UTC)


def test_a_split_whose_lease_ran_out_is_stalled_and_a_held_one_is_not() -> None:
    epoch = int(NOW.timestamp())
    assert stalled_work(_upload_job(split=SplitState(owner="a", lease_until=epoch - 1)), NOW) == "split"
    assert stalled_work(_upload_job(split=SplitState(owner="a", lease_until=epoch + 60)), NOW) is None
    # A file that has not arrived is not stalled work: the client has not uploaded it yet.
    waiting = _upload_job(upload=UploadSource(key="uploads/x.csv", file_name="x.csv", size=100))
    assert stalled_work(waiting, NOW) is None


def test_a_complete_job_without_results_is_stalled_once_nobody_claimed_them_in_time() -> None:
    done = _upload_job(split_done=True, succeeded=10, split=None, bucket="b")
    assert stalled_work(done.model_copy(update={"updated_at": NOW - timedelta(seconds=5)}), NOW) is None
    assert stalled_work(done.model_copy(update={"updated_at": NOW - timedelta(minutes=5)}), NOW) == "results"
    held = done.model_copy(update={"results_lease_until": int(NOW.timestamp()) + 60})
    assert stalled_work(held, NOW) is None
    # A job from before results files (no bucket) has nothing to write.
    old = done.model_copy(update={"bucket": "", "updated_at": NOW - timedelta(minutes=5)})
    assert stalled_work(old, NOW) is None


def test_the_cost_line_prices_what_was_counted() -> None:
    line = cost_line(JobUsage(dynamodb_requests=3, write_units=1_000_000, sqs_requests=1_000_000))
    assert line.requests == {"dynamodb": 3, "sqs": 1_000_000, "lambda": 0, "s3": 0}
    assert line.usd == pytest.approx(0.625 + 0.40)
    assert "us-east-1" in line.prices and "2025-06-01" in line.prices


def test_body_rows_keep_their_old_shape() -> None:
    assert parse_csv("url\nhttps://a.example/\n", max_rows=1) == [BulkRow(url="https://a.example/", row=1)]


def test_a_field_over_128_kib_in_a_line_under_the_limit_is_read() -> None:
    # Given a row whose quoted note is 200 KB (Python's csv refuses fields over 128 KiB by
    # default), on a line well under the 1 MB line limit
    data = b'url,note\nhttps://a.example/,"' + b"n" * 200_000 + b'"\nhttps://b.example/,short\n'
    # When the file is read
    rows = list(CsvRows([data]))
    # Then both rows are there, not a CSV error
    assert [row.url for row in rows] == ["https://a.example/", "https://b.example/"]
