"""How every listener of the local stack (the API, the embedded AWS, the Lambda endpoint) reads a
request: within a bounded time, with a bounded number of connections, and with its body framed as
HTTP/1.1 frames it (RFC 9112 section 6). One code path for the three; each answers a refusal in
its own error shape (``BoundedRequestHandler.refusal_answer``).

- A connection that sends nothing for ``IDLE_SECONDS`` (a fresh one, or a kept-alive one between
  two requests) is closed without an answer, as a server closes an idle keep-alive connection:
  clients that reuse connections (urllib3, boto3) see the close before they reuse it and open a new
  one.
- A request must be whole within ``REQUEST_SECONDS`` of its first byte (its headers), and its body
  within ``REQUEST_SECONDS`` more, plus a second per ``MIN_BODY_RATE`` bytes it announced: a
  request that stalls (headers never finished, a body shorter than its Content-Length, a chunk
  never sent) is answered ``408`` and its connection closed.
- ``Transfer-Encoding: chunked`` bodies are read as RFC 9112 section 7.1 says (extensions and
  trailer fields read and dropped); any other transfer coding, or ``chunked`` not last, or
  together with a Content-Length, is a ``400`` and the connection is closed (RFC 9112 sections 6.1
  and 6.3), so no byte of a body is ever read as the next request.
- At most ``MAX_CONNECTIONS`` connections are served at once per listener (a thread each); one more
  is closed at once, so a flood of half-sent connections costs a bounded number of threads, each
  for a bounded time.
"""

import io
import re
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any

IDLE_SECONDS = 10.0
REQUEST_SECONDS = 10.0
MIN_BODY_RATE = 1024 * 1024  # bytes a second a body may arrive at, at the slowest, past its first 10 s
MAX_CONNECTIONS = 512
# A refused body is read and thrown away up to this much, for at most DRAIN_SECONDS, so the client
# sees the answer rather than a reset; beyond it the connection is just closed after the answer.
DRAIN_LIMIT_BYTES = 64 * 1024 * 1024
DRAIN_SECONDS = 5.0
_LINE_LIMIT = 64 * 1024  # a chunk-size line or a trailer field
_TRAILER_LIMIT = 100
_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(r"[0-9A-Fa-f]+")


class ReadRefused(Exception):
    """A request the listener refuses while reading it; the connection is closed after the answer.
    ``error`` is the API's machine word, ``aws_type`` the exception name AWS services use."""

    def __init__(self, status: int, error: str, aws_type: str, message: str, *, drain: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.aws_type = aws_type
        self.message = message
        self.drain = drain  # body bytes to read and drop before answering (a refused length)


class ClientGone(Exception):
    """The client closed the connection in the middle of a request: nothing can be answered."""


def timed_out() -> ReadRefused:
    return ReadRefused(
        HTTPStatus.REQUEST_TIMEOUT,
        "request_timeout",
        "RequestTimeoutException",
        f"The request was not sent whole within {REQUEST_SECONDS:.0f} seconds.",
    )


def content_length(values: Sequence[str] | None, limit: int | None) -> int:
    """The body's length from the request's Content-Length header(s), or ReadRefused."""
    if not values:
        return 0
    texts = {value.strip() for value in values}
    if len(texts) != 1 or not _DIGITS.fullmatch(text := texts.pop()):
        raise ReadRefused(
            HTTPStatus.BAD_REQUEST,
            "invalid_content_length",
            "InvalidRequestException",
            "The Content-Length header must be one non-negative whole number of bytes.",
        )
    length = int(text)
    if limit is not None and length > limit:
        raise too_large(length, limit, drain=length)
    return length


def too_large(length: int, limit: int, *, drain: int = 0) -> ReadRefused:
    return ReadRefused(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        "payload_too_large",
        "RequestTooLargeException",
        f"The request body is {length:,} bytes; at most {limit:,} are accepted here.",
        drain=drain,
    )


def _bad_framing(message: str) -> ReadRefused:
    return ReadRefused(HTTPStatus.BAD_REQUEST, "invalid_framing", "InvalidRequestException", message)


class DeadlineReader(io.RawIOBase):
    """The connection's bytes, each read bounded by the phase it is in: waiting for a request (an
    idle timeout: a quiet close), or reading one (a deadline: ``ReadRefused`` 408). Writes are not
    bounded here: the socket is blocking again after each read, as it was."""

    def __init__(self, connection: socket.socket) -> None:
        super().__init__()
        self._connection = connection
        self.deadline: float | None = None  # None: between requests
        self.ended = False  # nothing more is read on this connection: reads are an end of file

    def readable(self) -> bool:
        return True

    def await_request(self) -> None:
        self.deadline = None
        self.ended = False

    def allow(self, seconds: float) -> None:
        """Give the rest of the current request ``seconds`` from now."""
        self.deadline = time.monotonic() + seconds

    def readinto(self, buffer: Any) -> int:
        if self.ended:
            return 0
        idle = self.deadline is None
        timeout = IDLE_SECONDS if self.deadline is None else self.deadline - time.monotonic()
        if timeout <= 0:
            raise timed_out()
        self._connection.settimeout(timeout)
        try:
            count = self._connection.recv_into(buffer)
        except TimeoutError:
            if idle:
                return 0  # read as a close: the connection is closed without an answer
            raise timed_out() from None
        finally:
            self._connection.settimeout(None)
        if idle and count:
            self.allow(REQUEST_SECONDS)
        return count


class BoundedRequestHandler(BaseHTTPRequestHandler):
    """A ``BaseHTTPRequestHandler`` that reads as the module docstring says. Subclasses read the
    body with ``read_body`` and answer refusals in their shape with ``refusal_answer``."""

    protocol_version = "HTTP/1.1"
    # The headers and the body go out in two writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK of the headers (about 40 ms on Linux), which made every answer with a
    # body (a 410, a 404) several times slower than an empty 301 on a kept-alive connection.
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the plain file StreamRequestHandler made, replaced by a bounded one
        self.reading = DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self.reading)

    def handle_one_request(self) -> None:
        self.reading.await_request()
        try:
            super().handle_one_request()
        except ReadRefused as refused:
            self.close_connection = True
            self._drain(refused.drain)
            self._write_refusal(refused)
        except ClientGone:
            self.close_connection = True

    def read_body(self, limit: int | None = None) -> bytes:
        """The request's body, framed by Transfer-Encoding or Content-Length (RFC 9112 section
        6.3), read by the request's deadline; ``limit``: the most bytes accepted (413 beyond)."""
        codings = [
            coding.strip().lower()
            for value in self.headers.get_all("Transfer-Encoding") or []
            for coding in value.split(",")
            if coding.strip()
        ]
        lengths = self.headers.get_all("Content-Length")
        if not codings:
            length = content_length(lengths, limit)
            self.reading.allow(REQUEST_SECONDS + length / MIN_BODY_RATE)
            body = io.BytesIO()
            self._read_into(body, length)
            return body.getvalue()
        if self.request_version == "HTTP/1.0":
            raise _bad_framing("Transfer-Encoding is not allowed in an HTTP/1.0 request.")
        if lengths:
            raise _bad_framing("A request may not carry both Transfer-Encoding and Content-Length.")
        if codings != ["chunked"]:
            raise _bad_framing(
                f"The transfer coding {', '.join(codings)!r} is not supported: send the body with a "
                "Content-Length, or chunked (RFC 9112 section 7.1)."
            )
        return self._read_chunked(limit)

    def _read_chunked(self, limit: int | None) -> bytes:
        self.reading.allow(REQUEST_SECONDS)
        body = io.BytesIO()
        while True:
            size_text = self._line().split(b";", 1)[0].strip(b" \t")
            if not _HEX.fullmatch(size_text.decode("latin-1")):
                raise _bad_framing("A chunk's size line is not a hexadecimal number (RFC 9112 section 7.1).")
            size = int(size_text, 16)
            if size == 0:
                break
            if limit is not None and body.tell() + size > limit:
                raise too_large(body.tell() + size, limit)
            self.reading.allow(REQUEST_SECONDS + size / MIN_BODY_RATE)
            self._read_into(body, size)
            if self._line() != b"":
                raise _bad_framing("A chunk's data is not followed by CRLF (RFC 9112 section 7.1).")
        for _ in range(_TRAILER_LIMIT):  # trailer fields: read and dropped (RFC 9112 section 7.1.2)
            if self._line() == b"":
                return body.getvalue()
        raise _bad_framing("The chunked body's trailer section has too many fields.")

    def _read_into(self, body: io.BytesIO, size: int) -> None:
        """``size`` bytes onto ``body``, a piece at a time: a claimed length is not allocated up
        front, and a large body is held once (BytesIO.getvalue shares its buffer), not twice."""
        while size > 0:
            piece = self.rfile.read(min(size, 1 << 20))
            if not piece:
                raise ClientGone
            body.write(piece)
            size -= len(piece)

    def _line(self) -> bytes:
        line = self.rfile.readline(_LINE_LIMIT + 1)
        if not line.endswith(b"\n"):
            if len(line) > _LINE_LIMIT:
                raise _bad_framing("A line of the chunked body is too long.")
            raise ClientGone
        return line.rstrip(b"\r\n")

    def _drain(self, left: int) -> None:
        """Read and drop a refused body (up to a bound, for a few seconds), so the client reads
        the answer instead of a reset."""
        left = min(left, DRAIN_LIMIT_BYTES)
        self.reading.allow(DRAIN_SECONDS)
        try:
            while left > 0 and (chunk := self.rfile.read(min(left, 1 << 16))):
                left -= len(chunk)
        except (OSError, ReadRefused):
            pass

    def refusal_answer(self, refused: ReadRefused) -> tuple[int, list[tuple[str, str]], bytes]:
        """(status, headers, body) of ``refused`` in this listener's error shape."""
        raise NotImplementedError

    def _write_refusal(self, refused: ReadRefused) -> None:
        status, headers, body = self.refusal_answer(refused)
        head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}"]
        head += [
            f"{name}: {value}"
            for name, value in headers
            if name.lower() not in ("content-length", "connection")
        ]
        head += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
        try:
            self.wfile.write("\r\n".join(head).encode("latin-1") + body)
            self.wfile.flush()
        except OSError:
            pass  # the client is gone


class BoundedConnections(socketserver.ThreadingMixIn):
    """A threading server that serves at most ``max_connections`` connections at once (a thread
    each) and closes one more at once."""

    max_connections = MAX_CONNECTIONS
    daemon_threads = True
    # How often serve_forever looks for a shutdown request, so how long shutdown() may wait: a
    # stack stops its servers one after another, at socketserver's 0.5 s each.
    poll_seconds = 0.05
    shutdown_request: Callable[[Any], None]  # socketserver.TCPServer's

    def serve_forever(self, poll_interval: float | None = None) -> None:
        serve = super().serve_forever  # type: ignore[misc]  # the server class after this mixin
        serve(self.poll_seconds if poll_interval is None else poll_interval)

    def process_request(self, request: Any, client_address: Any) -> None:
        # Called on the serving thread only, so the slots are made once.
        if "_connection_slots" not in self.__dict__:
            self._connection_slots = threading.BoundedSemaphore(self.max_connections)
        if not self._connection_slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._connection_slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._connection_slots.release()
