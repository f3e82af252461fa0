"""The sign-in audit function's service: the audit trail, written with a DynamoDB client bounded
well inside Cognito's 5-second wait for its trigger."""

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from shortener import aws
from shortener.audit.model import AuditEntry
from shortener.audit.sign_ins import SignInAudit
from shortener.audit.store import AuditStore
from shortener.audit.trail import AuditTrail
from shortener.settings import sign_in_audit_settings


@lru_cache(maxsize=1)
def sign_in_audit() -> SignInAudit:
    settings = sign_in_audit_settings()
    store = AuditStore(settings.AUDIT_TABLE, aws.dynamodb_on_sign_in_path())
    return SignInAudit(AuditTrail(store, settings.AUDIT_RETENTION_DAYS))


def record_sign_in(event: Mapping[str, Any]) -> AuditEntry:
    """The ``user.signed_in`` entry of a post-authentication event (``SignInNotRecorded`` if it
    was not written)."""
    return sign_in_audit().record(event)
