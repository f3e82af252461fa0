"""Bulk logic without AWS: reading CSVs, packing rows into messages, the results CSV, and the compact
encodings the jobs table stores."""

import csv
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shortener.exceptions import InvalidCsvError, PayloadTooLargeError
from shortener.jobs.bulk import neutralise, pack_rows, parse_csv, read_upload, results_csv, results_page
from shortener.jobs.message_model import BulkRow
from shortener.jobs.model import RowOutcome
from shortener.jobs.store.chunk_records import (
    decode_id_ranges,
    decode_outcomes,
    encode_id_ranges,
    encode_outcomes,
)
from shortener.links.domains import ShortUrls
from shortener.loops.queue import SEND_BATCH_BYTES, SEND_BATCH_ENTRIES, batches_within_limits
from tests.support.bulk import BOUNDARY, multipart_body


def test_url_column_is_found_in_any_case_and_other_columns_are_ignored() -> None:
    rows = parse_csv("Name, URL ,CODE\nx,https://a.example/,promo\ny,https://b.example/\n", max_rows=10)
    assert rows == [
        BulkRow(url="https://a.example/", code="promo", row=1),
        BulkRow(url="https://b.example/", row=2),
    ]


def test_a_bom_is_tolerated() -> None:
    body = "\ufeffurl\nhttps://a.example/\n".encode()
    uploaded = read_upload(body, "text/csv", max_bytes=1000, max_rows=10)
    assert uploaded.rows == [BulkRow(url="https://a.example/", row=1)]


def test_quoted_commas_and_line_breaks_stay_inside_their_cell() -> None:
    rows = parse_csv(
        'note,url\n"a, b","https://a.example/?q=1,2"\n"line\r\nbreak",https://b.example/\n', max_rows=10
    )
    assert [row.url for row in rows] == ["https://a.example/?q=1,2", "https://b.example/"]


def test_more_rows_than_allowed_is_too_large() -> None:
    with pytest.raises(PayloadTooLargeError):
        parse_csv("url\n" + "https://a.example/\n" * 11, max_rows=10)


def test_a_multipart_upload_without_a_file_is_invalid() -> None:
    body = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n--{BOUNDARY}--\r\n'
    ).encode()
    with pytest.raises(InvalidCsvError):
        read_upload(body, f"multipart/form-data; boundary={BOUNDARY}", max_bytes=10_000, max_rows=10)


def test_a_multipart_file_keeps_its_bytes() -> None:
    body = multipart_body("url\nhttps://a.example/é\n".encode())
    uploaded = read_upload(body, f'multipart/form-data; boundary="{BOUNDARY}"', max_bytes=10_000, max_rows=10)
    assert uploaded.rows == [BulkRow(url="https://a.example/é", row=1)]
    assert uploaded.encoding.fallback_lines == 0


def test_a_multipart_file_keeps_its_name_and_a_body_has_none() -> None:
    body = multipart_body(b"url\nhttps://a.example/\n", filename="spring flyers.csv")
    named = read_upload(body, f"multipart/form-data; boundary={BOUNDARY}", max_bytes=10_000, max_rows=10)
    plain = read_upload(b"url\nhttps://a.example/\n", "text/csv", max_bytes=10_000, max_rows=10)
    assert (named.file_name, plain.file_name) == ("spring flyers.csv", None)


def test_rows_are_packed_by_count_and_by_size() -> None:
    rows = [BulkRow(url=f"https://example.com/{n}") for n in range(7)] + [
        BulkRow(url="https://x.example/" + "a" * 500)
    ]
    messages = pack_rows("j", rows, own_host=None, max_rows=3, max_bytes=400)
    assert [len(message.rows) for message in messages] == [3, 3, 1, 1]
    assert [message.first_row for message in messages] == [1, 4, 7, 8]
    assert [message.chunk for message in messages] == [0, 1, 2, 3]


@given(st.lists(st.integers(min_value=1, max_value=300_000), min_size=1, max_size=60))
def test_batches_respect_the_sqs_limits_and_keep_order(sizes: list[int]) -> None:
    bodies = ["x" * size for size in sizes]
    batches = list(batches_within_limits(bodies))
    assert [body for batch in batches for body in batch] == bodies
    for batch in batches:
        assert len(batch) <= SEND_BATCH_ENTRIES
        assert len(batch) == 1 or sum(len(body) for body in batch) <= SEND_BATCH_BYTES


@pytest.mark.parametrize(
    ("cell", "safe"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-dash", "'-dash"),
        ("@SUM(A1)", "'@SUM(A1)"),
        # Control characters never reach the file raw: they are percent-encoded, as in a URL.
        ("\tx", "%09x"),
        ("\rx", "%0Dx"),
        ("a\x00b\x1bc\x7f", "a%00b%1Bc%7F"),
        ("=\x00", "'=%00"),
        ("https://a.example/", "https://a.example/"),
        ("", ""),
    ],
)
def test_formula_cells_are_neutralised(cell: str, safe: str) -> None:
    assert neutralise(cell) == safe


def test_results_csv_has_the_contract_header_and_one_line_per_outcome() -> None:
    outcomes = [
        RowOutcome(row=1, url="https://a.example/", code="Ab3d"),
        RowOutcome(row=2, url="nope", error="invalid_url: Not a valid absolute URL: nope"),
    ]
    lines = list(csv.reader(io.StringIO(results_csv(outcomes, ShortUrls("https://sho.rt/")), newline="")))
    assert lines == [
        ["row", "url", "code", "short_url", "error"],
        ["1", "https://a.example/", "Ab3d", "https://sho.rt/Ab3d", ""],
        ["2", "nope", "", "", "invalid_url: Not a valid absolute URL: nope"],
    ]


@given(st.lists(st.integers(min_value=1, max_value=10**12), unique=True).map(sorted))
def test_id_ranges_round_trip(ids: list[int]) -> None:
    assert decode_id_ranges(encode_id_ranges(ids)) == ids


def test_a_counter_block_is_one_short_range() -> None:
    assert encode_id_ranges(list(range(1001, 1251))) == "1001-1250"


def test_outcomes_round_trip_and_stay_small() -> None:
    # 250 typical rows: the chunk item's size is what its transactional write costs
    outcomes = [
        RowOutcome(
            row=1 + n, url=f"https://shop.example.com/products/{n * 7919}?utm_source=sms", code=f"c{n:05d}"
        )
        for n in range(250)
    ] + [RowOutcome(row=251, url="bad", error="invalid_url: no")]
    blob = encode_outcomes(outcomes)
    assert decode_outcomes(1, blob) == outcomes
    assert len(blob) < 4_000


def test_results_stop_at_a_chunk_boundary_past_the_size_limit_and_say_where_to_go_on() -> None:
    chunks = [
        (n, [RowOutcome(row=n * 10 + i + 1, url=f"https://a.example/{n}/{i}", code="c") for i in range(10)])
        for n in range(5)
    ]
    first = results_page(chunks, ShortUrls("https://sho.rt/"), max_bytes=800)
    rows = [line["row"] for line in csv.DictReader(io.StringIO(first.text, newline=""))]
    assert first.next_chunk is not None
    assert rows == [str(row) for row in range(1, first.next_chunk * 10 + 1)]
    assert len(first.text.encode()) <= 800
    rest = results_page(chunks[first.next_chunk :], ShortUrls("https://sho.rt/"), max_bytes=None)
    assert rest.next_chunk is None
