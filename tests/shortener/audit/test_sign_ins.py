"""Sign-ins in the audit log: a post-authentication event becomes a ``user.signed_in`` entry, and
nothing that stops the entry fails the sign-in (it is reported as SignInNotRecorded)."""

from datetime import UTC, datetime
from typing import Any

import pytest

from shortener.audit.model import AuditEntry
from shortener.audit.sign_ins import SignInAudit, SignInNotRecorded
from shortener.audit.store import AuditSelection
from shortener.audit.trail import AuditTrail
from tests.support.cognito import post_authentication_event

MOMENT = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)


class RecordingEntries:
    """The audit table's entries in a list, or a write that fails with ``failure``."""

    def __init__(self, failure: Exception | None = None) -> None:
        self.entries: list[AuditEntry] = []
        self.failure = failure

    def put(self, entry: AuditEntry, expires_at: datetime) -> None:
        if self.failure is not None:
            raise self.failure
        self.entries.append(entry)

    def page(self, selection: AuditSelection, limit: int) -> tuple[list[AuditEntry], str | None]:
        return self.entries[:limit], None


def audit(entries: RecordingEntries) -> SignInAudit:
    return SignInAudit(AuditTrail(entries, retention_days=400, now=lambda: MOMENT))


def test_a_sign_in_is_an_entry_of_the_person_with_their_sub_email_and_client() -> None:
    # Given the audit table and Cognito's event for ada's sign-in through the page's client
    entries = RecordingEntries()
    # When it is recorded
    audit(entries).record(post_authentication_event())
    # Then the entry names ada (the owner id her token gives the API) as actor and target
    [entry] = entries.entries
    assert (entry.actor, entry.action, entry.target) == (
        "ada@example.com",
        "user.signed_in",
        "ada@example.com",
    )
    assert entry.before is None and entry.source_ip is None
    assert entry.after == {
        "username": "ada@example.com",
        "sub": "9a5f2c1e-0b7d-4c8e-9f21-3d4e5f6a7b8c",
        "email": "ada@example.com",
        "client_id": "4example0client0id0abcdefgh",
        "user_pool_id": "us-east-1_Example12",
        "new_device_used": False,
    }


def test_a_person_without_an_email_is_recorded_without_one() -> None:
    entries = RecordingEntries()
    event = post_authentication_event(request={"userAttributes": {"sub": "s-1"}})
    audit(entries).record(event)
    [entry] = entries.entries
    assert entry.after is not None
    assert (entry.after["email"], entry.after["sub"]) == (None, "s-1")
    assert "new_device_used" not in entry.after


def test_a_failed_write_is_reported_not_raised_as_itself() -> None:
    # Given an audit table that refuses the write
    entries = RecordingEntries(failure=RuntimeError("table unreachable"))
    # When a sign-in is recorded, Then the failure is SignInNotRecorded, caused by the write's
    with pytest.raises(SignInNotRecorded, match="table unreachable") as raised:
        audit(entries).record(post_authentication_event())
    assert isinstance(raised.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    "event",
    [
        post_authentication_event(triggerSource="PreAuthentication_Authentication"),
        post_authentication_event(userName=""),
        {"triggerSource": "PostAuthentication_Authentication"},
    ],
    ids=["another trigger", "no username", "not Cognito's shape"],
)
def test_an_event_that_is_no_sign_in_is_reported_and_writes_nothing(event: dict[str, Any]) -> None:
    entries = RecordingEntries()
    with pytest.raises(SignInNotRecorded):
        audit(entries).record(event)
    assert entries.entries == []
