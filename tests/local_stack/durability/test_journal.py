"""The journal's frames: what a process killed in the middle of a write leaves is ignored, and
everything before it is read back."""

from pathlib import Path

import pytest

from local_stack.durability.journal import FrameReader, FrameWriter, encode


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """A file with a header and two frames of records."""
    writer = FrameWriter(tmp_path / "journal.dat", {"format": 1})
    writer.write_frame([["dynamodb", "put", "t", {"code": {"S": "a"}}]])
    writer.write_frame([["sqs", "add", "q", {"id": "m", "body": "b", "blob": b"\x00\xff"}]])
    writer.close()
    return tmp_path / "journal.dat"


def frames(path: Path) -> tuple[list[object], int | None]:
    reader = FrameReader(path)
    return list(reader), reader.torn_at


def test_frames_are_read_back_in_order_with_bytes_as_base64(written: Path) -> None:
    found, torn_at = frames(written)
    assert found == [
        {"format": 1},
        [["dynamodb", "put", "t", {"code": {"S": "a"}}]],
        [["sqs", "add", "q", {"id": "m", "body": "b", "blob": "AP8="}]],
    ]
    assert torn_at is None


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param(encode([["x"]])[:5], id="half a header"),
        pytest.param(encode([["x", "y" * 100]])[:50], id="half a payload"),
        pytest.param(encode([["x"]])[:-2] + b"zz", id="a payload that fails its checksum"),
    ],
)
def test_a_torn_last_frame_is_ignored(written: Path, tail: bytes) -> None:
    # Given a file whose last frame was cut short or garbled when the process died
    whole = written.stat().st_size
    with written.open("ab") as file:
        file.write(tail)
    # When it is read, then the frames before it come back and the reader says where it stopped
    found, torn_at = frames(written)
    assert len(found) == 3
    assert torn_at == whole


def test_an_empty_file_has_no_frames(tmp_path: Path) -> None:
    (tmp_path / "empty.dat").write_bytes(b"")
    assert frames(tmp_path / "empty.dat") == ([], None)
