"""The admin-managed blocklist of hosts: a blocked host refuses links to itself and its subdomains."""

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class BlockedHost(BaseModel):
    """One entry: a host in canonical form (lower case, punycode, no trailing dot)."""

    host: str
    created_at: datetime
    added_by: str = ""
    reason: str = ""


class BlockRequest(BaseModel):
    """``PUT /blocklist/{host}``: why (optional)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    reason: str = Field(default="", max_length=500)


class Blocklist(BaseModel):
    """``GET /blocklist``."""

    hosts: list[BlockedHost]
