"""The local API gateway answers malformed or oversized HTTP as API Gateway does: a 4xx in the
project's error shape, at once, never a hang, a close without an answer, a 501 or an HTML page;
and the host of a short URL is the stage's, whatever Host the client sent."""

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


def test_the_host_of_a_short_url_is_the_stages_whatever_host_was_sent(stack: RunningStack) -> None:
    payload = json.dumps({"url": "https://example.com/e2e/host-header"}).encode()
    head = (
        b"POST / HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\n"
        b"X-Api-Key: %s\r\nContent-Length: %d" % (str(stack.api_key).encode(), len(payload))
    )
    code, _, body = raw_request(stack, head, payload)
    assert code == 201, body
    short_url = json.loads(body)["short_url"]
    assert short_url.startswith(stack.api_url), short_url
    assert "evil.example" not in short_url
