"""Bucket policies with conditions, as S3 evaluates them for the local stack's requests.

moto evaluates a bucket policy's statements without their Condition blocks, so a conditional Deny
is a blanket one. The template's bulk bucket denies every request made without TLS (its "HttpsOnly"
statement: `Deny s3:* when aws:SecureTransport is false`, the control AWS Security Hub's S3.5
asks for): under moto that denies every object request, from any tool. Requests reaching the
embedded AWS stand for the HTTPS requests AWS receives (the functions' principals carry
aws:SecureTransport true, ``iam/principals.py``), so here a statement whose only condition is
`aws:SecureTransport` is evaluated with it true: the HttpsOnly Deny does not apply, as on AWS for
every SDK and CLI request. Other statements are evaluated as moto does."""

import json
from typing import Any

from moto.s3.models import FakeBucket

_SECURE_TRANSPORT = "aws:securetransport"


def install() -> None:
    """Patch moto's FakeBucket (idempotent)."""
    if getattr(FakeBucket.get_permission, "_secure_transport", False):
        return
    original = FakeBucket.get_permission

    def get_permission(self: FakeBucket, action: str, resource: str) -> Any:
        if self.policy is None:
            return original(self, action, resource)
        kept = self.policy
        try:
            self.policy = _over_https(self.policy)
            return original(self, action, resource)
        finally:
            self.policy = kept

    get_permission._secure_transport = True  # type: ignore[attr-defined]
    FakeBucket.get_permission = get_permission  # type: ignore[method-assign]


def _over_https(policy: bytes) -> bytes:
    """``policy`` without the statements that apply only to requests without TLS."""
    try:
        document = json.loads(policy)
    except ValueError:
        return policy
    statements = document.get("Statement", [])
    if isinstance(statements, dict):
        statements = [statements]
    kept = [statement for statement in statements if not _only_without_tls(statement)]
    return json.dumps({**document, "Statement": kept}).encode()


def _only_without_tls(statement: dict[str, Any]) -> bool:
    condition = statement.get("Condition")
    if not isinstance(condition, dict) or list(condition) != ["Bool"]:
        return False
    values = {key.lower(): value for key, value in condition["Bool"].items()}
    if list(values) != [_SECURE_TRANSPORT]:
        return False
    wanted = values[_SECURE_TRANSPORT]
    wanted = wanted if isinstance(wanted, list) else [wanted]
    # The statement applies when SecureTransport is false; requests here are over HTTPS.
    return [str(value).lower() for value in wanted] == ["false"]
