"""``POST /links/bulk``: many links in one JSON call, one outcome per link in input order."""

from typing import Any

from pydantic import BaseModel, Field

from shortener.links.model import ShortenRequest
from shortener.request_model import RequestModel

# A synchronous call: 1,000 links and 1 MB in, so that every answer stays well under Lambda's 6 MB
# for a synchronous response (an answer carries normalised URLs, at most about 3x the input).
MAX_BULK_LINKS = 1_000
MAX_BULK_BYTES = 1_000_000


class BulkLinkItem(ShortenRequest):
    """One link: the fields of ``POST /`` (``url``; ``code``, ``title``, ``tags``, ``expires_at``,
    ``max_clicks`` optional). Another field is that link's 422 outcome, naming it."""


class BulkLinksRequest(RequestModel):
    """``POST /links/bulk``: up to 1,000 links (and 1 MB). Each link is checked on its own: one
    that is wrong is an outcome with its error, not a failed call."""

    links: list[BulkLinkItem] = Field(min_length=1, max_length=MAX_BULK_LINKS)


class BulkLinksEnvelope(RequestModel):
    """The body as first read: a list of links, each then read as a ``BulkLinkItem``."""

    links: list[Any] = Field(min_length=1)


class BulkLinkOutcome(BaseModel):
    """What became of one link, with the status ``POST /`` answers for it: 201 new, 200 an existing
    link (find-if-exists, or the same custom code for the same URL), 409 code taken, 400 invalid
    URL or code (or a blocked host), 422 a field missing or wrong; 503 when the table was busy
    for this link (send it again)."""

    status: int
    code: str | None = None
    short_url: str | None = None
    domain: str | None = None
    url: str | None = None
    error: str | None = None
    message: str | None = None


class BulkLinksResult(BaseModel):
    """The outcome of every link, in input order."""

    links: list[BulkLinkOutcome]
