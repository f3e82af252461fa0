"""URL validation and normalisation with a WHATWG URL Standard parser (ada, as in Node.js)."""

import hashlib
from dataclasses import dataclass

import ada_url

from shortener.models.exceptions import InvalidUrlError

# Schemes the WHATWG standard calls "special": they always have a host.
_SPECIAL_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "file"})


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    """What may be shortened: the allowed schemes, a length cap, and hosts that are refused (the
    shortener's own, so short links cannot chain into loops)."""

    allowed_schemes: frozenset[str]
    max_length: int
    own_hosts: frozenset[str] = frozenset()

    def with_own_host(self, host: str | None) -> "UrlPolicy":
        """The same policy, also refusing ``host`` (the host a request arrived on)."""
        if not host:
            return self
        return UrlPolicy(self.allowed_schemes, self.max_length, self.own_hosts | {host.lower()})


def normalise_url(raw: str, policy: UrlPolicy) -> str:
    """The canonical form of ``raw`` (WHATWG serialisation: lower-case scheme and host, IDNA,
    default port dropped, dot segments resolved, percent-encoding applied), or InvalidUrlError
    saying what is wrong."""
    candidate = raw.strip()
    if not candidate:
        raise InvalidUrlError("The URL is empty.")
    if len(candidate) > policy.max_length:
        raise InvalidUrlError(f"The URL is longer than {policy.max_length} characters.")
    try:
        parsed = ada_url.URL(candidate)
    except ValueError as exc:
        raise InvalidUrlError(f"Not a valid absolute URL: {_shorten_for_message(candidate)}") from exc
    scheme = parsed.protocol.removesuffix(":")
    if scheme not in policy.allowed_schemes:
        allowed = ", ".join(sorted(policy.allowed_schemes))
        raise InvalidUrlError(f"The scheme '{scheme}' is not allowed; allowed: {allowed}.")
    # Each attribute of an ada URL is a call into the library and a new string (a bulk row's CPU
    # counts, make bench ARGS=cpu): the host is read once.
    hostname = parsed.hostname
    if scheme in _SPECIAL_SCHEMES and not hostname:
        raise InvalidUrlError("The URL has no host.")
    if hostname and hostname.lower() in policy.own_hosts:
        raise InvalidUrlError("Links to this shortener itself cannot be shortened.")
    normalised = parsed.href
    if len(normalised) > policy.max_length:
        raise InvalidUrlError(f"The normalised URL is longer than {policy.max_length} characters.")
    return normalised


def url_key(normalised_url: str) -> str:
    """A fixed-size key for a normalised URL (find-if-exists claims)."""
    return hashlib.sha256(normalised_url.encode()).hexdigest()


def _shorten_for_message(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
