"""Opaque cursors of listings: a position (a sort key value) wrapped so that clients treat it as
a token. A position only ever selects where a page starts inside the caller's own partition, so a
forged cursor shows nothing the caller could not list anyway; a malformed one is a 400."""

import base64
import binascii
import json
import re

from shortener.exceptions import InvalidRequestError

MAX_PAGE_SIZE = 100
# GET /links: 100 a page unless asked, up to 1,000 (an export of thousands of links in few calls).
LINKS_PAGE_SIZE = 100
MAX_LINKS_PAGE_SIZE = 1_000
# Creation time (ISO 8601) and a code or job id.
_POSITION = re.compile(r"\d{4}-\d\d-\d\dT[0-9:.+-]{8,40}#[A-Za-z0-9_-]{1,64}")


def encode_cursor(position: str) -> str:
    """An opaque cursor for a listing position."""
    return base64.urlsafe_b64encode(json.dumps({"before": position}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> str | None:
    """The listing position of ``cursor`` (None: the first page), or InvalidRequestError."""
    if not cursor:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        position = json.loads(text)["before"]
    except (binascii.Error, ValueError, TypeError, KeyError) as exc:
        raise InvalidRequestError("The cursor is not one this API gave out; start without it.") from exc
    if not isinstance(position, str) or not _POSITION.fullmatch(position):
        raise InvalidRequestError("The cursor is not one this API gave out; start without it.")
    return position


def page_size(limit: int, maximum: int = MAX_PAGE_SIZE) -> int:
    """``limit`` if it is a page size this API serves (1 to ``maximum``), else InvalidRequestError."""
    if not 1 <= limit <= maximum:
        raise InvalidRequestError(f"limit must be 1 to {maximum}.")
    return limit
