"""Who is calling: the caller that the API's Lambda authorizer vouched for, and the API keys it
checks. Shared contract with the API function (owners, link management)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict

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

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @classmethod
    def anonymous(cls) -> "Caller":
        """A caller without a key (the stack's Access parameter is ``open``)."""
        return cls(owner_id=ANONYMOUS_OWNER, role="anonymous")
