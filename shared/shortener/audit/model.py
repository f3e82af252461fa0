"""The audit log's entries and pages (GET /audit)."""

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# What an entry records, named like the webhook events (docs/audit.md); a sign-in is an entry but
# no webhook event (it is a person's, not a link owner's).
AuditAction = Literal[
    "link.created",
    "link.updated",
    "link.deleted",
    "links.batch",
    "key.created",
    "key.revoked",
    "host.blocked",
    "host.unblocked",
    "webhook.created",
    "webhook.updated",
    "webhook.deleted",
    "webhook.disabled",
    "user.signed_in",
]
AUDIT_ACTIONS: tuple[str, ...] = AuditAction.__args__  # type: ignore[attr-defined]


class AuditEntry(BaseModel):
    """One change: when, who (a key's id; a signed-in person's username; ``anonymous`` on an open
    stack; ``cli:<identity>`` for the operator's command line), what (``action`` on ``target``: a
    link's code, a host, a key's id, a batch's id, a person's username), the fields before and
    after, and the caller's address."""

    model_config = ConfigDict(frozen=True)

    time: datetime
    actor: str
    action: AuditAction
    target: str
    before: dict[str, Any] | None = Field(description="The fields before the change; null for a creation.")
    after: dict[str, Any] | None = Field(description="The fields after the change; null for a deletion.")
    source_ip: str | None = Field(description="The caller's address; null from the command line.")


class AuditPage(BaseModel):
    """GET /audit: entries newest first, and where the next page starts."""

    entries: list[AuditEntry]
    next_cursor: str | None


class AuditQuery(BaseModel):
    """The query of ``GET /audit``."""

    from_: datetime | None = Field(
        default=None, alias="from", description="ISO 8601 date or time; default: 30 days before `to`."
    )
    to: datetime | None = Field(default=None, description="ISO 8601 date or time; default: now.")
    actor: str | None = Field(
        default=None, description="Only this actor's changes (a key's id, or a person's username)."
    )
    code: str | None = Field(
        default=None, description="Only changes of this link (or host, key, batch id, person's username)."
    )
    action: AuditAction | None = Field(default=None, description="Only this kind of change.")
    limit: int = Field(default=100, ge=1, le=100, description="Entries per page.")
    cursor: str | None = Field(default=None, description="next_cursor of the previous page.")
