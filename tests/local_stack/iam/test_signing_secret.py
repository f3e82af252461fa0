"""The secret of the functions' signing keys (local_stack/iam/signing_secret.py): random, made once
per data folder and kept there for its owner only, new on every start without persistence."""

import stat
from pathlib import Path

from local_stack.iam.signing_secret import SECRET_FILE, function_secret


def test_a_data_folder_keeps_its_secret_for_its_owner_only(tmp_path: Path) -> None:
    # Given a data folder of an earlier version, with no secret in it
    (tmp_path / "snapshot-000001.dat").write_bytes(b"")
    # When the stack starts twice on it
    first = function_secret(tmp_path, persist=True)
    second = function_secret(tmp_path, persist=True)
    # Then the secret is made once, random, kept, and readable by its owner only
    assert first == second and first != "local" and len(first) >= 32
    assert stat.S_IMODE((tmp_path / SECRET_FILE).stat().st_mode) == 0o600


def test_two_data_folders_have_two_secrets(tmp_path: Path) -> None:
    assert function_secret(tmp_path / "a", persist=True) != function_secret(tmp_path / "b", persist=True)


def test_without_persistence_every_start_has_a_new_secret_and_keeps_none(tmp_path: Path) -> None:
    assert function_secret(tmp_path, persist=False) != function_secret(tmp_path, persist=False)
    assert not (tmp_path / SECRET_FILE).exists()
