"""The local stack's data folder is owner-only, and so is what it writes there."""

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_stack.durability.private_files import make_private


@pytest.fixture
def restored_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    os.umask(previous)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("restored_umask")
def test_the_data_folder_and_its_files_become_owner_only_and_new_ones_are_created_so(tmp_path: Path) -> None:
    # Given a data folder left world-readable by an earlier run (umask 022)
    os.umask(0o022)
    data = tmp_path / ".local-stack"
    (data / "s3").mkdir(parents=True)
    (data / "journal").write_bytes(b"x")
    (data / "s3" / "body").write_bytes(b"y")
    assert mode(data) == 0o755 and mode(data / "journal") == 0o644
    # When the stack starts with it
    make_private(data)
    # Then the folders are 0700 and the files 0600
    assert [mode(path) for path in (data, data / "s3")] == [0o700, 0o700]
    assert [mode(path) for path in (data / "journal", data / "s3" / "body")] == [0o600, 0o600]
    # And what it writes afterwards is created owner-only
    (data / "snapshot").write_bytes(b"z")
    (data / "new").mkdir()
    assert (mode(data / "snapshot"), mode(data / "new")) == (0o600, 0o700)
