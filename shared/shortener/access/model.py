"""Who is calling: the caller that the API's Lambda authorizer vouched for, and the API keys it
checks. Shared contract with the API function (owners, link management)."""

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Role = Literal["admin", "member", "anonymous"]
ANONYMOUS_OWNER = "anonymous"


class Caller(BaseModel):
    """The authorizer's context as the API function receives it (``requestContext.authorizer``):
    the key's owner and role, and which key it was (empty for an anonymous caller)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    owner_id: str
    role: Role
    key_id: str = ""
    key_name: str = ""
    # The domains this caller may make links on, comma-separated (the authorizer's context holds
    # strings only); empty: every domain of the stack.
    domains: str = ""

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def may_use_domain(self, domain: str) -> bool:
        """Whether this caller may make or move a link on ``domain`` (admins: any)."""
        allowed = {name.strip().lower() for name in self.domains.split(",") if name.strip()}
        return self.is_admin or not allowed or domain.lower() in allowed

    @classmethod
    def anonymous(cls) -> "Caller":
        """A caller without a key (the stack's Access parameter is ``open``)."""
        return cls(owner_id=ANONYMOUS_OWNER, role="anonymous")


KeyRole = Literal["admin", "member"]


class ApiKey(BaseModel):
    """One API key as the keys table holds it: never the key itself, only its SHA-256."""

    model_config = ConfigDict(frozen=True)

    key_id: str
    key_hash: str
    name: str
    owner_id: str
    role: KeyRole
    created_at: datetime
    # The value of the key's API Gateway API key: the usage plan's identifier of this key (not a
    # credential: API Gateway meters with it, our authorizer never accepts it as a key).
    usage_key: str
    revoked: bool = False
    revoked_at: datetime | None = None
    # The domains its calls may make links on, comma-separated ("": every one).
    domains: str = ""

    def caller(self) -> Caller:
        """The caller this key stands for."""
        return Caller(
            owner_id=self.owner_id,
            role=self.role,
            key_id=self.key_id,
            key_name=self.name,
            domains=self.domains,
        )


class NewKeyRequest(BaseModel):
    """``shortener keys create``: who the key is for."""

    model_config = ConfigDict(frozen=True, str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=100)
    owner_id: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._@+-]+$")
    role: KeyRole = "member"
    # The domains the key may make links on, comma-separated (empty: every one).
    domains: str = Field(default="", max_length=2048, pattern=r"^[a-z0-9.:,-]*$")

    @field_validator("owner_id")
    @classmethod
    def _not_the_anonymous_owner(cls, value: str) -> str:
        if value == ANONYMOUS_OWNER:
            raise ValueError(f"'{ANONYMOUS_OWNER}' is the owner of callers without a key")
        return value


class CreatedKey(BaseModel):
    """A key just made: the only moment its secret exists outside the caller's hands."""

    model_config = ConfigDict(frozen=True)

    record: ApiKey
    key: str
