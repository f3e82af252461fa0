"""The local stack's data folder is the developer's alone: it holds every table, queue message and
uploaded file, and the stack's admin API key. The folder and its subfolders are 0700, its files
0600, and everything the process writes from now on is created so (umask 077), whatever the
developer's own umask."""

import os
import stat
from pathlib import Path

PRIVATE_UMASK = 0o077


def make_private(data_dir: Path) -> None:
    """Create ``data_dir`` if needed, make it and what it holds owner-only, and set the process's
    umask so that new files and folders are too."""
    os.umask(PRIVATE_UMASK)
    data_dir.mkdir(parents=True, exist_ok=True)
    data_dir.chmod(0o700)
    for root, folders, files in os.walk(data_dir):
        for name in folders:
            (Path(root) / name).chmod(0o700)
        for name in files:
            path = Path(root) / name
            if not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) & 0o077:
                path.chmod(0o600)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` readable by its owner only (it holds a key or a secret), whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(partial, path)
