"""The local API gateway answers malformed or oversized HTTP as API Gateway does: a 4xx in the
project's error shape, at once, never a hang, a close without an answer, a 501 or an HTML page;
and the host of a short URL is the stack's (the edge's), whatever Host the client sent. Every
listener of the stack (the API, the embedded AWS, the Lambda endpoint, the edge) reads a request
within bounds: half-sent connections are answered 408 or closed, and do not stop the next request;
a chunked body is read or refused, never read as the next request."""

import json
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import RunningStack

# Each answer must come well before this: a hang shows up as a timeout, not a slow pass.
ANSWER_SECONDS = 10


def raw_request(stack: RunningStack, head: bytes, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Send ``head`` (request line and headers, without the blank line) and ``body`` on a new
    connection; (status, headers, body) of the answer, read until the server closes."""
    address = urlsplit(stack.api_url)
    with socket.create_connection((address.hostname, address.port), timeout=ANSWER_SECONDS) as connection:
        connection.sendall(head + b"\r\nConnection: close\r\n\r\n" + body)
        received = b""
        deadline = time.monotonic() + ANSWER_SECONDS
        while time.monotonic() < deadline and (chunk := connection.recv(65536)):
            received += chunk
    assert received, "the connection closed without an answer"
    head_text, _, payload = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head_text.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in header_lines)}
    return int(status_line.split()[1]), headers, payload


def assert_error(answer: tuple[int, dict[str, str], bytes], status: int, error: str) -> dict[str, Any]:
    code, headers, payload = answer
    assert code == status, (code, payload[:200])
    assert headers["content-type"] == "application/json"
    body = json.loads(payload)
    assert body["error"] == error and body["message"], body
    return dict(body)


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "get", "FROB"])
def test_an_unknown_or_malformed_method_is_a_405_in_the_error_shape(stack: RunningStack, method: str) -> None:
    target = b"example.com:443" if method == "CONNECT" else b"/"
    answer = raw_request(stack, method.encode() + b" " + target + b" HTTP/1.1\r\nHost: x")
    assert_error(answer, 405, "method_not_allowed")


@pytest.mark.parametrize("length", ["-1", "abc", "1e3", "5, 6"])
def test_an_invalid_content_length_is_a_400_at_once(stack: RunningStack, length: str) -> None:
    started = time.monotonic()
    answer = raw_request(stack, f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {length}".encode())
    assert_error(answer, 400, "invalid_content_length")
    assert time.monotonic() - started < ANSWER_SECONDS / 2


def test_a_100_kb_path_is_a_414_in_the_error_shape(stack: RunningStack) -> None:
    answer = raw_request(stack, b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: x")
    assert_error(answer, 414, "uri_too_long")


def test_2000_headers_are_a_431_in_the_error_shape(stack: RunningStack) -> None:
    headers = b"".join(b"\r\nX-Many-%d: v" % n for n in range(2000))
    answer = raw_request(stack, b"GET / HTTP/1.1\r\nHost: x" + headers)
    assert_error(answer, 431, "headers_too_large")


def test_a_body_over_10_mb_is_a_413(stack: RunningStack) -> None:
    body = b"x" * (11 * 1024 * 1024)
    head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d" % len(body)
    answer = raw_request(stack, head, body)
    assert_error(answer, 413, "payload_too_large")


def test_the_host_of_a_short_url_is_the_stacks_whatever_host_was_sent(stack: RunningStack) -> None:
    payload = json.dumps({"url": "https://example.com/e2e/host-header"}).encode()
    head = (
        b"POST / HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\n"
        b"X-Api-Key: %s\r\nContent-Length: %d" % (str(stack.api_key).encode(), len(payload))
    )
    code, _, body = raw_request(stack, head, payload)
    assert code == 201, body
    short_url = json.loads(body)["short_url"]
    # The edge's (short URLs name it, whatever Host the API was sent)
    assert short_url.startswith(stack.edge_url), short_url
    assert "evil.example" not in short_url


# A connection that stalls is answered or closed well before this (the bound is 10 s).
HALF_SENT_CLOSED_SECONDS = 15
HALF_SENT = [
    b"GET / HTTP/1.1\r\nHost: x\r\n",  # headers never finished
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{",  # a body shorter than its length
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nab",  # a chunk cut short
]


@pytest.mark.parametrize("listener", ["api_url", "aws_endpoint", "lambda_endpoint", "edge_url"])
def test_200_half_sent_connections_neither_hang_nor_stop_the_next_request(
    stack: RunningStack, listener: str
) -> None:
    address = urlsplit(getattr(stack, listener))
    where = (address.hostname, address.port)
    # Given 200 connections that each send part of a request, then nothing
    half_sent = []
    for n in range(200):
        connection = socket.create_connection(where, timeout=HALF_SENT_CLOSED_SECONDS)
        connection.sendall(HALF_SENT[n % len(HALF_SENT)])
        half_sent.append(connection)
    deadline = time.monotonic() + HALF_SENT_CLOSED_SECONDS
    try:
        # Then an honest request on a new connection is answered (any answer: this is no timing claim)
        with socket.create_connection(where, timeout=ANSWER_SECONDS) as honest:
            honest.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert honest.recv(65536).startswith(b"HTTP/1.1 "), listener
        # And every half-sent one is answered 408 or closed, within the bound
        outcomes = []
        for connection in half_sent:
            connection.settimeout(max(0.1, deadline - time.monotonic()))
            received = b""
            try:
                while chunk := connection.recv(65536):
                    received += chunk
            except ConnectionResetError:
                pass  # closed with a request's bytes unread: a reset is a close too
            outcomes.append(received.split(b"\r\n", 1)[0])
        assert set(outcomes) <= {b"", b"HTTP/1.1 408 Request Timeout"}, set(outcomes)
    finally:
        for connection in half_sent:
            connection.close()


def test_a_chunked_post_is_read_and_never_mixed_into_the_next_request(stack: RunningStack) -> None:
    address = urlsplit(stack.api_url)
    payload = json.dumps({"url": "https://example.com/e2e/chunked"}).encode()
    chunks = (
        b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (payload[:10], payload[10:])) + b"0\r\n\r\n"
    )
    head = (
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Api-Key: %s\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" % str(stack.api_key).encode()
    )
    # Given a chunked POST / and a second request on the same connection
    with socket.create_connection((address.hostname, address.port), timeout=ANSWER_SECONDS) as connection:
        connection.sendall(
            head + chunks + b"GET /openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    # Then the POST made its link from the whole body, and the GET got its own answer
    first_head, _, rest = received.partition(b"\r\n\r\n")
    length = int(
        next(
            line.split(b":", 1)[1]
            for line in first_head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
    )
    assert first_head.startswith(b"HTTP/1.1 201 "), received[:300]
    assert json.loads(rest[:length])["url"] == "https://example.com/e2e/chunked"
    second = rest[length:]
    assert second.startswith(b"HTTP/1.1 200 "), second[:300]
    assert second.count(b"HTTP/1.1 ") == 1
