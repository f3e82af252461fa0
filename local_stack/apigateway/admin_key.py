"""The local stack's admin API key: made on first start with the product's own key logic (the
one place the local stack knows about the shortener), kept in the data dir so it survives
restarts, shown in the banner and the READY line.

It finds the keys table and usage plan through the template's Outputs (KeysTableName,
UsagePlanId, RestApiId, ApiStageName), the same ones `shortener keys --stack` reads from
CloudFormation; a template without them has no keys, and no key is made."""

import logging
from collections.abc import Mapping
from pathlib import Path

from local_stack.durability.private_files import write_private
from local_stack.embedded.client import aws_client
from shortener.access.keys import KeyManager
from shortener.services import keys as stack_keys

log = logging.getLogger(__name__)

ADMIN_KEY_FILE = "admin-api-key"


def key_manager(
    outputs: Mapping[str, str], stack_name: str, aws_endpoint: str, region: str
) -> KeyManager | None:
    """The key logic over the embedded AWS, or None when the template declares no keys."""
    if stack_keys.missing_outputs(outputs):
        return None
    return stack_keys.key_manager(
        outputs,
        stack_name,
        aws_client("apigateway", aws_endpoint, region),
        aws_client("dynamodb", aws_endpoint, region),
        # The stack's own admin key, made when a data folder has none (the audit log's actor).
        actor="local-stack",
    )


def ensure_admin_key(manager: KeyManager, data_dir: Path, persist: bool) -> str:
    """The admin key kept in ``data_dir`` if it still works (known, not revoked, in the usage plan),
    else a new one (stored there when ``persist``)."""
    path = data_dir / ADMIN_KEY_FILE
    if path.is_file():
        kept = path.read_text(encoding="utf-8").strip()
        if manager.is_active(kept):
            return kept
        log.warning("The admin key in %s no longer works (revoked or lost); making a new one", path)
    created = manager.create("local admin", "local-admin", "admin")
    if persist:
        write_private(path, created.key + "\n")
    return created.key
