"""Every listener reads a request within bounds (local_stack/http_reading.py): a small server with
the shared handler, over raw sockets, with the time bounds shortened."""

import json
import socket
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from local_stack import http_reading
from local_stack.http_reading import BoundedConnections, BoundedRequestHandler, ReadRefused
from tests.support.servers import serving

pytestmark = pytest.mark.integration


class _Echo(BoundedRequestHandler):
    """Answers the body it read, as JSON."""

    def do_POST(self) -> None:
        body = self.read_body(1000)
        raw = json.dumps({"body": body.decode(), "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def refusal_answer(self, refused: ReadRefused) -> tuple[int, list[tuple[str, str]], bytes]:
        return (
            refused.status,
            [("Content-Type", "application/json")],
            json.dumps({"error": refused.error}).encode(),
        )

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(BoundedConnections, ThreadingHTTPServer):
    max_connections = 4


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Server]:
    monkeypatch.setattr(http_reading, "REQUEST_SECONDS", 0.5)
    monkeypatch.setattr(http_reading, "IDLE_SECONDS", 0.5)
    with serving(_Server(("127.0.0.1", 0), _Echo)) as running:
        yield running


@pytest.fixture
def connect(server: _Server) -> Iterator[Callable[[], socket.socket]]:
    opened: list[socket.socket] = []

    def make() -> socket.socket:
        connection = socket.create_connection(server.server_address, timeout=10)
        opened.append(connection)
        return connection

    yield make
    for connection in opened:
        connection.close()


def read_all(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


def answers(raw: bytes) -> list[tuple[int, dict[str, Any]]]:
    """(status, JSON body) of each answer in ``raw``."""
    found = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        length = next(
            int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")
        )
        found.append((int(lines[0].split()[1]), json.loads(rest[:length])))
        raw = rest[length:]
    return found


def test_a_chunked_body_is_read_whole_and_the_next_request_is_its_own(
    connect: Callable[[], socket.socket],
) -> None:
    # Given a chunked POST (with an extension and a trailer field) followed by a second request
    connection = connect()
    connection.sendall(
        b"POST /one HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Trailer: y\r\n\r\n"
        b"POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    )
    # Then each is answered once, with its own body
    assert answers(read_all(connection)) == [
        (200, {"body": "Wikipedia", "path": "/one"}),
        (200, {"body": "ok", "path": "/two"}),
    ]


@pytest.mark.parametrize(
    "headers",
    [
        b"Transfer-Encoding: gzip, chunked\r\n",
        b"Transfer-Encoding: chunked, gzip\r\n",
        b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
    ],
)
def test_framing_http_forbids_or_the_listener_does_not_read_is_a_400(
    connect: Callable[[], socket.socket], headers: bytes
) -> None:
    connection = connect()
    connection.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n")
    assert answers(read_all(connection)) == [(400, {"error": "invalid_framing"})]


def test_a_chunk_size_that_is_not_hexadecimal_is_a_400(connect: Callable[[], socket.socket]) -> None:
    connection = connect()
    connection.sendall(
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n"
    )
    assert answers(read_all(connection)) == [(400, {"error": "invalid_framing"})]


def test_a_chunked_body_over_the_limit_is_a_413(connect: Callable[[], socket.socket]) -> None:
    connection = connect()
    connection.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n")
    assert answers(read_all(connection)) == [(413, {"error": "payload_too_large"})]


@pytest.mark.parametrize(
    "sent",
    [
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc",  # body shorter than its length
        b"POST / HTTP/1.1\r\nHost: x\r\n",  # headers never finished
        b"POS",  # request line never finished
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",  # a chunk cut short
    ],
)
def test_a_request_that_stalls_is_answered_408_and_closed(
    connect: Callable[[], socket.socket], sent: bytes
) -> None:
    connection = connect()
    connection.sendall(sent)
    assert answers(read_all(connection)) == [(408, {"error": "request_timeout"})]


def test_an_idle_connection_is_closed_without_an_answer(connect: Callable[[], socket.socket]) -> None:
    # Given one answered request on a kept-alive connection, then nothing
    connection = connect()
    connection.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\na")
    # Then the connection is closed after the answer, with nothing more sent
    assert answers(read_all(connection)) == [(200, {"body": "a", "path": "/"})]


def test_connections_beyond_the_bound_are_closed_at_once(
    server: _Server, connect: Callable[[], socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_reading, "REQUEST_SECONDS", 30)
    # Given as many half-sent connections as the server serves at once
    stalled = [connect() for _ in range(server.max_connections)]
    for connection in stalled:
        connection.sendall(b"POST / HTTP/1.1\r\n")
    # Then one more is closed without an answer (and the stalled ones are still open)
    assert read_all(connect()) == b""
