"""The local stack's own AWS::StackId UUID. CloudFormation gives every stack a fresh one, and the
template derives secrets from it (the key of generated codes), so it must be neither a constant in
this repository nor different on every start: it is made once per data dir and kept there."""

import uuid
from pathlib import Path

STACK_ID_FILE = "stack-id"


def stack_uuid(data_dir: Path, *, persist: bool) -> str:
    """The data dir's stack UUID, created on first use (a fresh one each run without persistence)."""
    if not persist:
        return str(uuid.uuid4())
    path = data_dir / STACK_ID_FILE
    if path.is_file():
        stored = path.read_text(encoding="utf-8").strip()
        if stored:
            return str(uuid.UUID(stored))
    data_dir.mkdir(parents=True, exist_ok=True)
    created = str(uuid.uuid4())
    path.write_text(created + "\n", encoding="utf-8")
    return created
