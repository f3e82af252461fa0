"""The signature of a delivery (docs/webhooks.md): ``Shortener-Signature: t=<unix seconds>,v1=<hex>``
where ``<hex>`` is the lowercase hex HMAC-SHA256 of ``"<t>.<raw body>"`` keyed with the UTF-8
bytes of the endpoint's secret as it was shown. A receiver recomputes it over the bytes it read
and refuses a ``t`` older than five minutes (a replayed capture)."""

import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"  # noqa: S105 - a prefix that tells people what the value is
TOLERANCE_SECONDS = 300


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    return f"t={timestamp},v1={_digest(secret, timestamp, body)}"


def verify(secret: str, header: str, body: bytes, now: float, tolerance: int = TOLERANCE_SECONDS) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` within ``tolerance`` seconds of ``now``:
    what a receiver does (the docs show the same in a few lines)."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(fields["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance:
        return False
    return hmac.compare_digest(fields.get("v1", ""), _digest(secret, timestamp, body))


def _digest(secret: str, timestamp: int, body: bytes) -> str:
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()
