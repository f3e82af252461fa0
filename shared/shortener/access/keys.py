"""API keys: how they look, how the Lambda authorizer judges one, and how keys are made, listed
and revoked.

A key reads ``shk_<key id>_<secret>``. The key id (public, the keys table's partition key) lets the
authorizer find the record with one GetItem and lets an operator revoke a key by id; only the
SHA-256 of the whole key is stored, compared in constant time.

The authorizer's answer is cached by API Gateway per key (the identity source) for the stage's
TTL, and the cached policy is then evaluated for *every* method the key calls: so an Allow covers
the whole stage, not the method that happened to be called first (a policy naming one method would
make the key's next call to another method a 403 until the cache expires). A Deny is cached too,
which costs a wrong key nothing but keeps it off DynamoDB."""

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from shortener import clock
from shortener.access import sign_in
from shortener.access.model import ApiKey, Caller, CreatedKey, NewKeyRequest
from shortener.exceptions import InvalidKeyRequestError, KeyNotFoundError, UsagePlanError
from shortener.request_model import problems

AccessMode = Literal["keys", "open"]

KEY_PREFIX = "shk"
# The refusals a Decision explains to API Gateway's ACCESS_DENIED response (template.yaml).
_MISSING_KEY = ("missing_api_key", "This route needs an API key: send it in the X-Api-Key header.")
_INVALID_KEY = ("invalid_api_key", "The API key in X-Api-Key is not valid, or it was revoked.")
_INVALID_TOKEN = (
    "invalid_api_key",
    "The sign-in token in X-Api-Key is not valid, expired or was revoked: sign in again.",
)
_KEY_ID_BYTES = 6  # 12 hex characters: unique enough for the keys of one deployment
_SECRET_BYTES = 32  # 256 bits of secret
_USAGE_KEY_BYTES = 30  # API Gateway API key values need at least 20 characters
_KEY_PATTERN = re.compile(
    rf"^{KEY_PREFIX}_(?P<key_id>[0-9a-f]{{{_KEY_ID_BYTES * 2}}})_[A-Za-z0-9_-]{{20,128}}$"
)
# Callers without a key (Access=open) may shorten and follow their jobs; listing or changing links
# and the admin routes need a key. ``*`` in a policy resource matches across "/" (IAM wildcards).
ANONYMOUS_ROUTES = ("POST/", "POST/bulk", "POST/bulk/*", "GET/jobs/*")


def key_hash(key: str) -> str:
    """The SHA-256 (hex) of a key: what the keys table stores instead of the key."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_id_of(key: str) -> str | None:
    """The key id inside a well-formed key, or None for anything else."""
    found = _KEY_PATTERN.match(key)
    return found["key_id"] if found else None


def new_key() -> tuple[str, str]:
    """(key id, key): a fresh key of the form ``shk_<key id>_<secret>``."""
    key_id = secrets.token_hex(_KEY_ID_BYTES)
    return key_id, f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(_SECRET_BYTES)}"


def new_usage_key() -> str:
    """A fresh value for a key's API Gateway API key (its usage plan identifier)."""
    return secrets.token_urlsafe(_USAGE_KEY_BYTES)


# ---- the authorizer ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MethodArn:
    """``arn:<partition>:execute-api:<region>:<account>:<api id>/<stage>/<verb>/<path>``: the method
    a request calls, as API Gateway hands it to an authorizer."""

    prefix: str  # arn:<partition>:execute-api:<region>:<account>
    api_id: str
    stage: str
    rest: str  # <verb>/<path>

    @classmethod
    def parse(cls, arn: str) -> "MethodArn":
        """The parts of a method ARN; ValueError when it is not one."""
        parts = arn.split(":", 5)
        if len(parts) != 6 or parts[2] != "execute-api" or parts[5].count("/") < 2:
            raise ValueError(f"not an execute-api method ARN: {arn!r}")
        api_id, stage, rest = parts[5].split("/", 2)
        return cls(":".join(parts[:5]), api_id, stage, rest)

    def stage_resource(self, route: str = "*") -> str:
        """The ARN of ``route`` (``<verb>/<path>``, wildcards allowed) in this API stage."""
        return f"{self.prefix}:{self.api_id}/{self.stage}/{route}"


class KeyLookup(Protocol):
    def get_key(self, key_id: str) -> ApiKey | None: ...


class PeopleJudge(Protocol):
    """shortener.access.sign_in.TokenJudge: the caller of a signed-in person's access token."""

    def caller(self, token: str) -> Caller: ...


@dataclass(frozen=True)
class Decision:
    """The authorizer's verdict on one request, before it becomes API Gateway's output format."""

    allow: bool
    principal_id: str
    resources: tuple[str, ...]
    caller: Caller | None = None
    usage_key: str = ""
    reason: str = ""

    def response(self) -> dict[str, Any]:
        """The Lambda authorizer output API Gateway expects (principalId, policyDocument, and for an
        Allow the context the API function reads and the usage plan's identifier)."""
        output: dict[str, Any] = {
            "principalId": self.principal_id,
            "policyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Action": "execute-api:Invoke",
                        "Effect": "Allow" if self.allow else "Deny",
                        "Resource": list(self.resources),
                    }
                ],
            },
        }
        if self.allow and self.caller is not None:
            # Context values must be strings, numbers or booleans; the API reads them with
            # shortener.http.web.caller_from_event.
            output["context"] = self.caller.model_dump()
        # Why API Gateway refuses a route this answer does not allow: its ACCESS_DENIED gateway
        # response reads these ($context.authorizer.<key>, AWS: "Output from an API Gateway Lambda
        # authorizer", https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-lambda-authorizer-output.html).
        # The anonymous caller of Access=open reaching a keyed route sent no key at all.
        anonymous = self.allow and self.caller is not None and self.caller.role == "anonymous"
        if not self.allow or anonymous:
            error, message = _MISSING_KEY if anonymous else _INVALID_KEY
            if self.principal_id == "token":
                error, message = _INVALID_TOKEN
            output["context"] = {**output.get("context", {}), "refusal": error, "refusal_message": message}
        if self.allow and self.usage_key:
            output["usageIdentifierKey"] = self.usage_key
        return output


def authorize(
    presented: str | None,
    method_arn: str,
    keys: KeyLookup,
    *,
    access: AccessMode,
    anonymous_usage_key: str = "",
    people: PeopleJudge | None = None,
    people_usage_key: str = "",
) -> Decision:
    """Judge the key a request presented (None or "" when it sent none).

    Access=keys: only a known, unrevoked key whose hash matches is allowed, on the whole stage.
    Access=open: no key is an anonymous caller, allowed on the shortening routes only; a key that
    is sent is judged as in keys mode (a typo in a key must be loud, not silently anonymous).
    With sign-in on (``people``), a JWT in place of a key is a signed-in person's access token
    (shortener.access.sign_in), metered by ``people_usage_key``."""
    arn = MethodArn.parse(method_arn)
    everything = (arn.stage_resource(),)
    if not presented:
        if access == "open":
            anonymous = tuple(arn.stage_resource(route) for route in ANONYMOUS_ROUTES)
            return Decision(
                True, Caller.anonymous().owner_id, anonymous, Caller.anonymous(), anonymous_usage_key
            )
        return Decision(False, "none", everything, reason="no key")
    key_id = key_id_of(presented)
    if key_id is None and people is not None and sign_in.looks_like_token(presented):
        return _judge_person(presented, people, everything, people_usage_key)
    if key_id is None:
        return Decision(False, "invalid", everything, reason="malformed key")
    return _judge_key(presented, key_id, keys, everything)


def _judge_key(presented: str, key_id: str, keys: KeyLookup, everything: tuple[str, ...]) -> Decision:
    record = keys.get_key(key_id)
    if record is None or not hmac.compare_digest(record.key_hash, key_hash(presented)):
        return Decision(False, key_id, everything, reason="unknown key")
    if record.revoked:
        return Decision(False, key_id, everything, reason="revoked key")
    return Decision(True, key_id, everything, record.caller(), record.usage_key)


def _judge_person(token: str, people: PeopleJudge, everything: tuple[str, ...], usage_key: str) -> Decision:
    try:
        person = people.caller(token)
    except sign_in.TokenRefused as exc:
        return Decision(False, "token", everything, reason=f"token refused: {exc}")
    return Decision(True, f"person:{person.owner_id}", everything, person, usage_key)


# ---- making, listing and revoking keys --------------------------------------------------------


class KeyStore(Protocol):
    def get_key(self, key_id: str) -> ApiKey | None: ...

    def put_new(self, record: ApiKey) -> None: ...

    def list_keys(self) -> list[ApiKey]: ...

    def mark_revoked(self, key_id: str, at: datetime) -> ApiKey: ...


class UsagePlan(Protocol):
    """API Gateway's side of the keys: each key's API key in the usage plan, and the stage's
    authorizer cache."""

    def add_key(self, name: str, usage_key: str) -> None: ...

    def has_key(self, usage_key: str) -> bool: ...

    def disable_key(self, name: str, usage_key: str) -> None: ...

    def flush_authorizer_cache(self) -> None: ...


class AuditRecords(Protocol):
    """``shortener.audit.trail.AuditTrail``."""

    def record(
        self,
        actor: str,
        action: Any,
        target: str,
        *,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
        source_ip: str | None = None,
    ) -> Any: ...


@dataclass(frozen=True)
class KeyAudit:
    """Where a key's creation and revocation are recorded, and who made them."""

    trail: AuditRecords
    actor: str

    def record(self, action: str, record: ApiKey, before: Mapping[str, Any] | None = None) -> None:
        view = record.model_dump(mode="json", include={"key_id", "name", "owner_id", "role", "revoked"})
        self.trail.record(self.actor, action, record.key_id, before=before, after=view)


class KeyManager:
    """`shortener keys create|list|revoke` against one deployment (or the local stack)."""

    def __init__(
        self,
        store: KeyStore,
        plan: UsagePlan,
        *,
        name_prefix: str,
        now: Callable[[], datetime] = clock.now,
        audit: KeyAudit | None = None,
    ) -> None:
        self._store = store
        self._plan = plan
        self._name_prefix = name_prefix
        self._now = now
        # The stack's audit log (never the key, nor its hash).
        self._audit = audit

    def create(self, name: str, owner_id: str, role: str = "member") -> CreatedKey:
        """Make a key: its API Gateway API key joins the usage plan first, then the record is
        written, so a key can never be valid without being metered."""
        try:
            request = NewKeyRequest.model_validate({"name": name, "owner_id": owner_id, "role": role})
        except ValidationError as exc:
            raise InvalidKeyRequestError(problems(exc)) from exc
        key_id, key = new_key()
        record = ApiKey(
            key_id=key_id,
            key_hash=key_hash(key),
            name=request.name,
            owner_id=request.owner_id,
            role=request.role,
            created_at=self._now(),
            usage_key=new_usage_key(),
        )
        self._plan.add_key(self.usage_key_name(record), record.usage_key)
        self._store.put_new(record)
        if self._audit is not None:
            self._audit.record("key.created", record)
        return CreatedKey(record=record, key=key)

    def list(self) -> list[ApiKey]:
        """Every key (revoked ones too), newest first."""
        return sorted(self._store.list_keys(), key=lambda record: record.created_at, reverse=True)

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key at once: the record says revoked (what the authorizer reads), then the
        stage's authorizer cache is flushed so no cached Allow outlives the revocation, then the
        key's API Gateway API key is disabled (usage stops being metered to it)."""
        if self._store.get_key(key_id) is None:
            raise KeyNotFoundError(f"No key has the id '{key_id[:64]}'.")
        record = self._store.mark_revoked(key_id, self._now())
        if self._audit is not None:
            self._audit.record("key.revoked", record, before={"key_id": key_id, "revoked": False})
        # Both API Gateway steps are tried even if one fails; the first failure is then raised
        # (the revocation itself is stored and the authorizer already refuses the key).
        failures: list[UsagePlanError] = []
        for step in (
            self._plan.flush_authorizer_cache,
            lambda: self._plan.disable_key(self.usage_key_name(record), record.usage_key),
        ):
            try:
                step()
            except UsagePlanError as exc:
                failures.append(exc)
        if failures:
            raise failures[0]
        return record

    def is_active(self, key: str) -> bool:
        """Whether ``key`` would be allowed (known, hash matches, not revoked, metered)."""
        key_id = key_id_of(key)
        record = self._store.get_key(key_id) if key_id else None
        return (
            record is not None
            and not record.revoked
            and hmac.compare_digest(record.key_hash, key_hash(key))
            and self._plan.has_key(record.usage_key)
        )

    def usage_key_name(self, record: ApiKey) -> str:
        """The name of a key's API Gateway API key: the stack's prefix and the key id."""
        return f"{self._name_prefix}-{record.key_id}"
