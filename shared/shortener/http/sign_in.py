"""The page's sign-in: where people sign in (the user pool's hosted sign-in) and as which app client,
told to the page in a meta element of its head. No AWS calls.

The page reads ``<meta name="shortener-sign-in" content='{"url": ..., "client_id": ...}'>``; an
empty content means sign-in is off and the page asks for an API key only."""

import json
from html import escape
from urllib.parse import urlsplit

# The element as index.html carries it (sign-in off); the API function fills it in.
META_OFF = '<meta name="shortener-sign-in" content="">'


def sign_in_meta(url: str, client_id: str) -> str:
    """The meta element that tells the page where people sign in ("off" unless both are set)."""
    if not (url and client_id):
        return META_OFF
    config = json.dumps({"url": url.rstrip("/"), "client_id": client_id}, separators=(",", ":"))
    # quote=True escapes both quote characters: the JSON stays one attribute value whatever it holds.
    return f'<meta name="shortener-sign-in" content="{escape(config, quote=True)}">'


def with_sign_in(page: str, url: str, client_id: str) -> str:
    """``page`` with its sign-in meta element filled in."""
    if META_OFF not in page:
        raise ValueError("the page has no sign-in meta element to fill in")
    return page.replace(META_OFF, sign_in_meta(url, client_id), 1)


def sign_in_origins(url: str) -> tuple[str, ...]:
    """Where the page posts to the hosted sign-in (its token and revoke endpoints): the origin of
    ``url``, for the page's connect-src (none without a ``url``)."""
    if not url:
        return ()
    parts = urlsplit(url)
    return (f"{parts.scheme}://{parts.netloc}",)
