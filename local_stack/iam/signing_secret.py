"""The secret of the functions' signing keys: random, never a constant.

Each function's execution environments get an access key id that names the function and a secret
access key (principals.function_credentials). The embedded AWS checks the signature of every
presigned URL against that secret, and a browser may send a presigned request only when a function
signed it (embedded/local_only.py). A constant secret would let any web page that knows a bucket
name and a job id sign such a request itself; so the secret is random, made once per data folder
and kept in it (readable by its owner only, as the admin key is), or made anew on every start with
``--no-persist``. Lambda gives each function's role session credentials of its own
("Lambda execution role", https://docs.aws.amazon.com/lambda/latest/dg/lambda-intro-execution-role.html)."""

import secrets
from pathlib import Path

from local_stack.durability.private_files import write_private

SECRET_FILE = "function-signing-secret"  # noqa: S105 - the file's name


def function_secret(data_dir: Path, persist: bool) -> str:
    """The secret kept in ``data_dir`` (made and stored on the first start, so a data folder of an
    earlier version gets one), or a new one for this run when nothing is kept."""
    path = data_dir / SECRET_FILE
    if persist and path.is_file():
        kept = path.read_text(encoding="utf-8").strip()
        if kept:
            return kept
    secret = secrets.token_urlsafe(32)
    if persist:
        write_private(path, secret + "\n")
    return secret
