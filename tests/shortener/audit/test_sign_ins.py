"""Sign-ins in the audit log: a post-authentication event becomes a ``user.signed_in`` entry, and
nothing that stops the entry fails the sign-in (it is reported as SignInNotRecorded)."""

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from shortener.audit.model import AuditAction, AuditEntry
from shortener.audit.sign_ins import SignInAudit, SignInNotRecorded
from tests.support.cognito import post_authentication_event

MOMENT = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)


class RecordingTrail:
    """An audit trail that keeps its entries, or fails each write with ``failure``."""

    def __init__(self, failure: Exception | None = None) -> None:
        self.entries: list[AuditEntry] = []
        self.failure = failure

    def record(
        self,
        actor: str,
        action: AuditAction,
        target: str,
        *,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
        source_ip: str | None = None,
    ) -> AuditEntry:
        if self.failure is not None:
            raise self.failure
        entry = AuditEntry(
            time=MOMENT,
            actor=actor,
            action=action,
            target=target,
            before=before and dict(before),
            after=after and dict(after),
            source_ip=source_ip,
        )
        self.entries.append(entry)
        return entry


def test_a_sign_in_is_an_entry_of_the_person_with_their_sub_email_and_client() -> None:
    # Given the trail and Cognito's event for ada's sign-in through the page's client
    trail = RecordingTrail()
    # When it is recorded
    SignInAudit(trail).record(post_authentication_event())
    # Then the entry names ada (the owner id her token gives the API) as actor and target
    [entry] = trail.entries
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
    trail = RecordingTrail()
    event = post_authentication_event(request={"userAttributes": {"sub": "s-1"}})
    SignInAudit(trail).record(event)
    [entry] = trail.entries
    assert entry.after is not None
    assert (entry.after["email"], entry.after["sub"]) == (None, "s-1")
    assert "new_device_used" not in entry.after


def test_a_failed_write_is_reported_not_raised_as_itself() -> None:
    # Given a trail whose table refuses the write
    trail = RecordingTrail(failure=RuntimeError("table unreachable"))
    # When a sign-in is recorded, Then the failure is SignInNotRecorded, caused by the write's
    with pytest.raises(SignInNotRecorded, match="table unreachable") as raised:
        SignInAudit(trail).record(post_authentication_event())
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
    trail = RecordingTrail()
    with pytest.raises(SignInNotRecorded):
        SignInAudit(trail).record(event)
    assert trail.entries == []
