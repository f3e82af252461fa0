"""Where a delivery may go, and sending it there.

A webhook's URL is the owner's, but the request comes from inside the stack's account: a URL that
reaches a private, link-local or loopback address would let an owner read or poke what only the
stack can reach (the instance metadata service, other services in the VPC). So a destination must
be ``https`` on a public address, checked when it is registered and again at every delivery,
connecting to the very address that was checked (a name may resolve elsewhere later). The local
stack lives on loopback: there (``allow_loopback``) plain ``http`` to a loopback address is taken
too, so that tests and a developer's own tools can listen."""

import http.client
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass

import ada_url

from shortener.exceptions import InvalidFieldsError

TIMEOUT_SECONDS = 10.0
# Only so much of an answer is read: its status decides.
_ANSWER_BYTES = 4096
USER_AGENT = "Shortener-Webhooks/1"

type Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Destination:
    scheme: str
    host: str
    port: int
    target: str  # path and query

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


@dataclass(frozen=True)
class Answer:
    """What a delivery attempt got: the receiver's status, or why there was none."""

    status: int | None
    error: str | None
    duration_ms: int

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class RefusedDestinationError(Exception):
    """The URL reaches an address a delivery may not go to."""


def parse_destination(url: str, allow_loopback: bool) -> Destination:
    """``url`` as a destination, or InvalidFieldsError (422) saying what is wrong with it. Its
    addresses are checked too (``addresses``)."""
    try:
        parsed = ada_url.URL(url.strip())
    except ValueError as exc:
        raise _invalid(f"url is not a URL: {url[:100]!r}.") from exc
    scheme = parsed.protocol.rstrip(":")
    if scheme not in ("https", "http"):
        raise _invalid("url must start with https://.")
    if parsed.username or parsed.password:
        raise _invalid("url must not carry a user name or password; the signature proves the sender.")
    host = parsed.hostname.removeprefix("[").removesuffix("]")
    port = int(parsed.port) if parsed.port else (443 if scheme == "https" else 80)
    destination = Destination(scheme, host, port, (parsed.pathname or "/") + parsed.search)
    try:
        found = addresses(destination, allow_loopback)
    except RefusedDestinationError as exc:
        raise _invalid(f"url {exc}") from exc
    if scheme == "http" and not all(address.is_loopback for address in found):
        raise _invalid("url must start with https:// (plain http is taken only for loopback receivers).")
    return destination


def addresses(destination: Destination, allow_loopback: bool) -> list[Address]:
    """Every address ``destination``'s host resolves to, or RefusedDestinationError when it does
    not resolve or any of them is not a public one (a loopback one is taken under
    ``allow_loopback``)."""
    try:
        found = socket.getaddrinfo(destination.host, destination.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise RefusedDestinationError(f"names a host that does not resolve ({destination.host}).") from exc
    result: list[Address] = []
    for *_, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        checked = mapped or address
        if checked.is_loopback and allow_loopback:
            result.append(address)
        elif not checked.is_global or checked.is_multicast:
            raise RefusedDestinationError(
                f"reaches {checked}, a private, loopback or link-local address: deliveries go only "
                "to public addresses."
            )
        else:
            result.append(address)
    return result


def post(destination: Destination, body: bytes, headers: dict[str, str], allow_loopback: bool) -> Answer:
    """POST ``body`` to the destination's checked address, within TIMEOUT_SECONDS; redirects are
    not followed (a 3xx is a failed attempt)."""
    started = time.monotonic()

    def answer(status: int | None, error: str | None) -> Answer:
        return Answer(status, error, int((time.monotonic() - started) * 1000))

    try:
        address = addresses(destination, allow_loopback)[0]
    except RefusedDestinationError as exc:
        return answer(None, f"The url {exc}")
    connection = _connection(destination, str(address))
    try:
        connection.request(
            "POST",
            destination.target,
            body=body,
            headers={
                "Host": destination.host_header,
                "Content-Type": "application/json",
                "User-Agent": USER_AGENT,
                **headers,
            },
        )
        response = connection.getresponse()
        response.read(_ANSWER_BYTES)
        status = response.status
    except (OSError, http.client.HTTPException) as exc:
        return answer(None, f"{type(exc).__name__}: {exc}"[:300])
    finally:
        connection.close()
    return answer(status, None if 200 <= status < 300 else f"The receiver answered {status}.")


def _connection(destination: Destination, address: str) -> http.client.HTTPConnection:
    if destination.scheme == "http":
        return http.client.HTTPConnection(address, destination.port, timeout=TIMEOUT_SECONDS)
    return _PinnedHTTPSConnection(address, destination.port, destination.host)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """TLS to an address already checked, with the certificate verified for the host name."""

    def __init__(self, address: str, port: int, server_name: str) -> None:
        super().__init__(address, port, timeout=TIMEOUT_SECONDS, context=ssl.create_default_context())
        self._server_name = server_name

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self._server_name)  # type: ignore[attr-defined]


def _invalid(message: str) -> InvalidFieldsError:
    return InvalidFieldsError(message)
