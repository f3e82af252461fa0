"""Sign-ins in the audit log: Cognito's post-authentication trigger (docs/audit.md, "Sign-ins").

Cognito invokes the trigger synchronously after it checked a person's password and before it
issues their tokens, and fails the sign-in when the function fails or gives no answer within
5 seconds (AWS: "Post authentication Lambda trigger",
https://docs.aws.amazon.com/cognito/latest/developerguide/user-pool-lambda-post-authentication.html).
An entry that could not be written must not keep a person out (an audit outage would lock out the
admins who read the log too), so a failure here is reported as ``SignInNotRecorded`` for the
handler to log and count, and the sign-in goes on."""

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shortener.audit.model import AuditAction, AuditEntry
from shortener.audit.trail import AuditTrail

POST_AUTHENTICATION = "PostAuthentication_Authentication"
SIGNED_IN: AuditAction = "user.signed_in"


class _CognitoShape(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class CallerContext(_CognitoShape):
    aws_sdk_version: str = Field(default="", alias="awsSdkVersion")
    client_id: str = Field(default="", alias="clientId")


class PostAuthenticationRequest(_CognitoShape):
    user_attributes: dict[str, str] = Field(default_factory=dict, alias="userAttributes")
    # Set only where the pool remembers devices (this stack's does not).
    new_device_used: bool | None = Field(default=None, alias="newDeviceUsed")


class PostAuthenticationEvent(_CognitoShape):
    """What Cognito sends the trigger: the common fields of every user pool trigger and the
    post-authentication request (its ``clientMetadata`` is not recorded: the caller chooses it)."""

    version: str
    trigger_source: str = Field(alias="triggerSource")
    region: str
    user_pool_id: str = Field(alias="userPoolId")
    user_name: str = Field(alias="userName", min_length=1)
    caller_context: CallerContext = Field(alias="callerContext")
    request: PostAuthenticationRequest


class SignInNotRecorded(Exception):
    """A sign-in whose audit entry was not written; the sign-in itself goes on."""


def signed_in_details(sign_in: PostAuthenticationEvent) -> dict[str, Any]:
    """The entry's ``after``: who (username, ``sub``, email), through which app client."""
    attributes = sign_in.request.user_attributes
    details: dict[str, Any] = {
        "username": sign_in.user_name,
        "sub": attributes.get("sub"),
        "email": attributes.get("email"),
        "client_id": sign_in.caller_context.client_id or None,
        "user_pool_id": sign_in.user_pool_id,
    }
    if sign_in.request.new_device_used is not None:
        details["new_device_used"] = sign_in.request.new_device_used
    return details


class SignInAudit:
    """Writes a ``user.signed_in`` entry for each post-authentication event."""

    def __init__(self, trail: AuditTrail) -> None:
        self._trail = trail

    def record(self, event: Mapping[str, Any]) -> AuditEntry:
        """The entry of a sign-in: actor and target the person's username (the owner id their
        access token gives the API, so their sign-ins and their changes share an actor); no
        address, as the event carries none. ``SignInNotRecorded`` when it was not written."""
        try:
            sign_in = PostAuthenticationEvent.model_validate(event)
            if sign_in.trigger_source != POST_AUTHENTICATION:
                raise SignInNotRecorded(f"not a sign-in: triggerSource {sign_in.trigger_source!r}")
            return self._trail.record(
                sign_in.user_name, SIGNED_IN, sign_in.user_name, after=signed_in_details(sign_in)
            )
        except SignInNotRecorded:
            raise
        # Whatever stops the entry (an event of another shape, DynamoDB throttled, unreachable or
        # slow) must not fail the sign-in: Cognito would refuse the person.
        except Exception as exc:
            raise SignInNotRecorded(f"{type(exc).__name__}: {exc}") from exc
