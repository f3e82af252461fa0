"""Security headers on every answer of the API function: ``X-Content-Type-Options: nosniff``
everywhere; a strict Content-Security-Policy and a Referrer-Policy on HTML pages; HSTS on the
custom domain. No AWS calls.

The pages' only script and style are inline blocks, allowed by their SHA-256 hashes (computed from
the page being answered, so an edited page stays allowed and nothing else inline runs)."""

import base64
import hashlib
import re
from collections.abc import Iterable, MutableMapping
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

NOSNIFF = ("X-Content-Type-Options", "nosniff")
REFERRER_POLICY = ("Referrer-Policy", "strict-origin-when-cross-origin")
# Two years, subdomains included: the custom domain is served over HTTPS only (API Gateway).
HSTS = ("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
# Presigned uploads go from the page straight to S3 (a file above 4 MB).
_S3_ORIGINS = ("https://*.amazonaws.com",)
_INLINE = re.compile(r"<(script|style)(?:\s[^>]*)?>(.*?)</\1>", re.DOTALL | re.IGNORECASE)


def content_security_policy(html: str, connect_origins: Iterable[str] = ()) -> str:
    """The policy of ``html``: nothing but its own hashed inline script and style, same-origin
    fetches and form posts (and ``connect_origins``), never framed."""
    return _policy(html, tuple(connect_origins))


@lru_cache(maxsize=8)
def _policy(html: str, connect_origins: tuple[str, ...]) -> str:
    hashes: dict[str, list[str]] = {"script": [], "style": []}
    for kind, body in _INLINE.findall(html):
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        hashes[kind.lower()].append(f"'sha256-{digest}'")
    directives = [
        "default-src 'none'",
        "script-src " + (" ".join(hashes["script"]) or "'none'"),
        "style-src " + (" ".join(hashes["style"]) or "'none'"),
        # blob: the QR codes the page fetches with the key and shows (URL.createObjectURL).
        "img-src 'self' data: blob:",
        # blob: reading back what the page made itself (a QR code's image, a results file).
        "connect-src " + " ".join(("'self'", "blob:", *connect_origins)),
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
    return "; ".join(directives)


def upload_origins(*endpoints: str) -> tuple[str, ...]:
    """Where the page's presigned uploads go: S3 in AWS, or the endpoint boto3 was pointed at."""
    origins = list(_S3_ORIGINS)
    for endpoint in endpoints:
        if endpoint:
            parts = urlsplit(endpoint)
            origins.append(f"{parts.scheme}://{parts.netloc}")
    return tuple(dict.fromkeys(origins))


def secure(answer: dict[str, Any], *, hsts: bool, connect_origins: Iterable[str] = ()) -> dict[str, Any]:
    """``answer`` (a proxy integration's answer) with the security headers added."""
    added = [NOSNIFF]
    if hsts:
        added.append(HSTS)
    content_type = _header(answer, "content-type") or ""
    if content_type.startswith("text/html") and isinstance(answer.get("body"), str) and answer["body"]:
        added.append(("Content-Security-Policy", content_security_policy(answer["body"], connect_origins)))
        added.append(REFERRER_POLICY)
    multi: MutableMapping[str, list[str]] | None = answer.get("multiValueHeaders")
    for name, value in added:
        if multi is not None:
            multi[name] = [value]
        else:
            answer.setdefault("headers", {})[name] = value
    return answer


def _header(answer: dict[str, Any], name: str) -> str | None:
    for key, value in (answer.get("headers") or {}).items():
        if key.lower() == name:
            return str(value)
    for key, values in (answer.get("multiValueHeaders") or {}).items():
        if key.lower() == name and values:
            return str(values[0])
    return None
