"""URL validation and normalisation with a WHATWG URL Standard parser (ada, as in Node.js)."""

import hashlib
import ipaddress
from dataclasses import dataclass, replace

import ada_url

from shortener.exceptions import InvalidUrlError

# Schemes the WHATWG standard calls "special": they always have a host.
_SPECIAL_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "file"})
# What normalise_url reads of a parsed URL, in one call into the library (a bulk row's CPU counts,
# make bench ARGS=cpu: an ada URL object's attributes are a call each).
# The scheme is read off the href: a serialised URL starts with its scheme and a colon.
_READ_ATTRIBUTES = ("href", "hostname", "port", "username", "password")
_DEFAULT_PORTS = {"http": 80, "https": 443}


# Never shortened, even if an operator lists them in AllowedSchemes: a redirect to them runs script
# in (javascript), or serves content from (data), the page that follows the link, or reads the
# clicker's own disk (file).
NEVER_ALLOWED_SCHEMES = frozenset({"javascript", "data", "file"})


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    """What may be shortened: the allowed schemes, a length cap, and hosts that are refused (the
    shortener's own, in every spelling, so short links cannot chain into loops)."""

    allowed_schemes: frozenset[str]
    max_length: int
    own_hosts: frozenset[str] = frozenset()
    # Where the shortener itself listens on loopback (the local stack): the ports of those addresses,
    # None for one given without a port (then every loopback port is the shortener's). Another
    # service on the same machine, at another port, is not the shortener.
    own_loopback_ports: frozenset[int | None] = frozenset()
    # False where a cache keyed by the path alone answers GET /{code} (the prod stage's cache
    # without the edge): it would give every visitor the first one's answer.
    answers_each_visitor: bool = True

    def __post_init__(self) -> None:
        # Compared in one canonical form: 'SHO.RT.', 'sho.rt' and an IDN's Unicode and punycode
        # spellings are one host; every spelling of the loopback interface is one host too.
        hosts, loopback_ports = set(), set(self.own_loopback_ports)
        for text in self.own_hosts:
            host, port = _host_and_port(text)
            if host is None:
                continue
            if is_loopback(host):
                loopback_ports.add(port)
            else:
                hosts.add(host)
        object.__setattr__(self, "own_hosts", frozenset(hosts))
        object.__setattr__(self, "own_loopback_ports", frozenset(loopback_ports))
        object.__setattr__(self, "allowed_schemes", self.allowed_schemes - NEVER_ALLOWED_SCHEMES)

    def with_own_host(self, *hosts: str | None) -> "UrlPolicy":
        """The same policy, also refusing ``hosts`` (the host a request arrived on, the API's
        execute-api host, ...)."""
        added = frozenset(host for host in hosts if host)
        if not added:
            return self
        return replace(self, own_hosts=self.own_hosts | added)


def _host_and_port(text: str) -> tuple[str | None, int | None]:
    """A host as given (``sho.rt``, ``127.0.0.1:3000``, ``[::1]:3000``): its canonical name and its
    port, None when it names none (or the default port)."""
    host = canonical_host(text)
    if host is None:
        return None, None
    port = ada_url.URL(f"http://{text.strip()}/").port
    return host, int(port) if port else None


def canonical_host(host: str) -> str | None:
    """``host`` as the URL parser serialises it (lower case, IDNA punycode, percent-decoded), without
    a port or a trailing dot; None when it is not a host."""
    text = host.strip()
    if not text:
        return None
    try:
        hostname = ada_url.URL(f"http://{text}/").hostname
    except ValueError:
        return None
    return hostname.rstrip(".") or None


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
        parsed = ada_url.parse_url(candidate, attributes=_READ_ATTRIBUTES)
    except ValueError as exc:
        raise InvalidUrlError(
            f"Not a valid absolute URL: {_shorten_for_message(candidate)}{_did_you_mean(candidate)}"
        ) from exc
    normalised = parsed["href"]
    scheme = normalised[: normalised.index(":")]
    if scheme in NEVER_ALLOWED_SCHEMES:
        raise InvalidUrlError(
            f"The scheme '{scheme}' is not allowed, ever: a short link must not run script, serve content "
            "or open local files."
        )
    if scheme not in policy.allowed_schemes:
        allowed = ", ".join(sorted(policy.allowed_schemes))
        # 'example.com:8080/x' parses with the "scheme" example.com: it is a host without a scheme.
        hint = _did_you_mean(candidate) if "." in scheme else ""
        raise InvalidUrlError(f"The scheme '{scheme}' is not allowed; allowed: {allowed}.{hint}")
    hostname = parsed["hostname"]
    if scheme in _SPECIAL_SCHEMES and not hostname:
        raise InvalidUrlError("The URL has no host.")
    port = int(parsed["port"]) if parsed["port"] else _DEFAULT_PORTS.get(scheme)
    if hostname and _is_own_host(hostname.rstrip("."), port, policy):
        raise InvalidUrlError("Links to this shortener itself cannot be shortened.")
    if parsed["username"] or parsed["password"]:
        # 'https://user:pw@sho.rt@evil.example/' goes to evil.example while it reads as sho.rt:
        # a classic phishing disguise, and a password has no place in a link shared with others.
        raise InvalidUrlError(
            "The URL carries a user name or password before its host ('user:password@'), which "
            "disguises where it leads; links with user info are not accepted. Remove the part before '@'."
        )
    if len(normalised) > policy.max_length:
        raise InvalidUrlError(f"The normalised URL is longer than {policy.max_length} characters.")
    return normalised


def _is_own_host(host: str, port: int | None, policy: UrlPolicy) -> bool:
    """Whether ``host:port`` is the shortener: one of its hosts, or, when it listens on loopback
    (the local stack), any spelling of an address that reaches this machine (localhost,
    127.0.0.0/8, [::1], [::ffff:127.0.0.1], and the unspecified 0.0.0.0, [::], [::ffff:0.0.0.0],
    which a connection takes as the local host) at its port. The parser has already read every
    spelling of an IPv4 address ('0', '0x7f.1', '2130706433', '017700000001') as dotted decimal."""
    if host in policy.own_hosts:
        return True
    ports = policy.own_loopback_ports
    return bool(ports) and reaches_this_machine(host) and (None in ports or port in ports)


def is_loopback(host: str) -> bool:
    """``localhost`` (and names under it, RFC 6761), or a loopback IPv4 or IPv6 address, also an
    IPv4-mapped one; ``host`` as the URL parser serialises it (IPv6 in brackets)."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    return any(address.is_loopback for address in _addresses(host))


def reaches_this_machine(host: str) -> bool:
    """A loopback host (``is_loopback``), or an unspecified address (0.0.0.0, [::], also
    IPv4-mapped): connecting to one reaches the local host (Linux's ip(7), ipv6(7))."""
    return is_loopback(host) or any(address.is_unspecified for address in _addresses(host))


def _addresses(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The IP address ``host`` is (IPv6 in brackets), and the IPv4 address it maps, if any; none
    for a name."""
    try:
        address = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        return []
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return [address] if mapped is None else [address, mapped]


def url_key(normalised_url: str, owner: str | None = None) -> str:
    """A fixed-size key for a normalised URL (find-if-exists claims). Claims are per owner: one
    owner's link is never handed to another, who could not manage it (links made before owners
    existed keep their owner-less keys)."""
    text = normalised_url if owner is None else f"{owner}\n{normalised_url}"
    return hashlib.sha256(text.encode()).hexdigest()


def _did_you_mean(candidate: str) -> str:
    """' Did you mean https://...?' when ``candidate`` reads as a host and path without a scheme."""
    if "://" in candidate:
        return ""
    try:
        hostname = ada_url.URL(f"https://{candidate}").hostname
    except ValueError:
        return ""
    if "." not in hostname.strip(".") and hostname != "localhost":
        return ""
    return f" Did you mean https://{_shorten_for_message(candidate)}?"


def _shorten_for_message(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
