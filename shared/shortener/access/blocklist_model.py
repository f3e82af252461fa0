"""The admin-managed blocklist of hosts: a blocked host refuses links to itself and its subdomains."""

from datetime import datetime

from pydantic import BaseModel, Field

from shortener.request_model import RequestModel


class BlockedHost(BaseModel):
    """One entry: a host in canonical form (lower case, punycode, no trailing dot)."""

    host: str
    created_at: datetime
    added_by: str = ""
    reason: str = ""


class BlockAnswer(BlockedHost):
    """What ``PUT /blocklist/{host}`` answers: the entry, and the takedown of the host's links
    (``stage_cache_refreshed`` is None when the stage has no cache; ``scan_complete`` False when
    the links table was too large to scan in the request's time: cache entries not refreshed
    then expire within the cache's TTL)."""

    links_taken_down: int = 0
    stage_cache_refreshed: int | None = None
    scan_complete: bool = True
    # The host was blocked already (in this or another spelling): the entry shown is the first
    # one, its reason kept (unblock, then block, to change it).
    already_blocked: bool = False


class BlockRequest(RequestModel):
    """``PUT /blocklist/{host}``: why (optional)."""

    reason: str = Field(default="", max_length=500)


class Blocklist(BaseModel):
    """``GET /blocklist``."""

    hosts: list[BlockedHost]
