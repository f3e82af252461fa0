"""The key manager of one stack, from its outputs: the one wiring that `shortener keys` (any stack)
and the local stack's admin key (local_stack/apigateway/admin_key.py) both use."""

from collections.abc import Mapping
from typing import Any

from shortener.access.keys import KeyAudit, KeyManager
from shortener.access.store_keys import KeysStore
from shortener.access.usage_plans import ApiGatewayUsagePlan
from shortener.audit.store import AuditStore
from shortener.audit.trail import AuditTrail

# The stack outputs the key manager needs (template.yaml declares them).
NEEDED_OUTPUTS = ("KeysTableName", "UsagePlanId", "RestApiId", "ApiStageName")


def missing_outputs(outputs: Mapping[str, str]) -> list[str]:
    """The needed outputs that ``outputs`` lacks (none: the stack has keys)."""
    return [name for name in NEEDED_OUTPUTS if not outputs.get(name)]


def key_manager(
    outputs: Mapping[str, str], stack_name: str, apigateway: Any, dynamodb: Any, actor: str = "cli"
) -> KeyManager:
    """The key logic over the keys table and usage plan that the stack's ``outputs`` name, through
    the given boto3 clients; keys are named with ``stack_name``, and made or revoked by ``actor``
    in the stack's audit log where it keeps one. The needed outputs must all be there
    (:func:`missing_outputs`)."""
    plan = ApiGatewayUsagePlan(
        apigateway, outputs["UsagePlanId"], outputs["RestApiId"], outputs["ApiStageName"]
    )
    store = KeysStore(outputs["KeysTableName"], dynamodb)
    audit = None
    if outputs.get("AuditTableName"):
        days = int(outputs.get("AuditRetentionDays") or 400)
        trail = AuditTrail(AuditStore(outputs["AuditTableName"], dynamodb), days)
        audit = KeyAudit(trail, actor)
    return KeyManager(store, plan, name_prefix=stack_name, audit=audit)
