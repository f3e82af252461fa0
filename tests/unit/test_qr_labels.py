"""A job's QR labels ZIP: one decodable image per shortened row, named by row and code, written
as a stream in blocks, the same bytes every time."""

import io
import zipfile

import pytest
import zxingcpp
from PIL import Image

from shortener.logic import labels
from shortener.logic.labels import label_zip_blocks, row_width
from shortener.models.jobs import RowOutcome


def outcomes(count: int) -> list[RowOutcome]:
    return [
        RowOutcome(
            row=n,
            url=f"https://example.com/{n}",
            code=f"c{n:03d}" if n % 5 else "",
            error="" if n % 5 else "x",
        )
        for n in range(1, count + 1)
    ]


def test_one_image_per_shortened_row_named_by_zero_padded_row_and_code() -> None:
    blocks = list(label_zip_blocks(outcomes(12), "https://sho.rt/", "png", width=row_width(120), size=128))
    archive = zipfile.ZipFile(io.BytesIO(b"".join(blocks)))
    names = archive.namelist()
    assert names == [f"{n:03d}-c{n:03d}.png" for n in range(1, 13) if n % 5]
    for name in names:
        image = Image.open(io.BytesIO(archive.read(name)))
        code = name.split("-", 1)[1].removesuffix(".png")
        assert [found.text for found in zxingcpp.read_barcodes(image)] == [f"https://sho.rt/{code}"]
    assert archive.testzip() is None


def test_svg_labels_are_deflated_and_the_archive_is_the_same_every_time() -> None:
    first = b"".join(label_zip_blocks(outcomes(6), "https://sho.rt/", "svg", width=1))
    again = b"".join(label_zip_blocks(outcomes(6), "https://sho.rt/", "svg", width=1))
    assert first == again
    archive = zipfile.ZipFile(io.BytesIO(first))
    assert archive.namelist()[0] == "1-c001.svg"
    assert all(info.compress_type == zipfile.ZIP_DEFLATED for info in archive.infolist())
    assert archive.read("1-c001.svg").startswith(b"<svg")


def test_the_archive_streams_in_blocks_as_it_grows(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given blocks of about 1 kB instead of a megabyte (the same rule, cheaper to reach)
    monkeypatch.setattr(labels, "_PART_BYTES", 1000)
    blocks = list(label_zip_blocks(outcomes(12), "https://sho.rt/", "png", width=2, size=128))
    # Then the archive comes in several blocks, none much larger than one image past the mark
    assert len(blocks) > 3
    assert max(len(block) for block in blocks) < 2000
    assert zipfile.ZipFile(io.BytesIO(b"".join(blocks))).testzip() is None


def test_the_width_is_the_digits_of_the_last_row() -> None:
    assert [row_width(n) for n in (0, 9, 10, 999, 1000, 100_000)] == [1, 1, 2, 3, 4, 6]
