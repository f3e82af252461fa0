"""Half-sent connections against every listener of the local stack (the API, the embedded AWS, the
Lambda endpoint): how long until each is answered 408 or closed, and how long an honest request
takes meanwhile.

    python -m benchmarks listeners [--connections 200]

Starts its own local stack (no persistence). For each listener, opens --connections connections
that each send part of a request (headers never finished, a body shorter than its Content-Length,
a chunk cut short; in turn) and then nothing; sends one honest request on a new connection and
times its answer; then waits for every half-sent one to be answered or closed, and prints the
slowest and how many were answered 408 (the others were closed without an answer).
"""

import argparse
import socket
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from benchmarks.bulk import LocalStack

HALF_SENT = [
    b"GET / HTTP/1.1\r\nHost: x\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nab",
]
GIVE_UP_SECONDS = 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=200, help="half-sent connections per listener")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-listeners-") as folder:
        stack = LocalStack(Path(folder), 1, {})
        try:
            print(f"{options.connections} half-sent connections per listener:")
            for name, url in (
                ("API", stack.api_url),
                ("embedded AWS", stack.aws_endpoint),
                ("Lambda endpoint", str(stack.info["lambda_endpoint"])),
            ):
                address = urlsplit(url)
                print(
                    f"  {name:16} "
                    + measure((str(address.hostname), int(address.port or 80)), options.connections)
                )
        finally:
            stack.stop()


def measure(where: tuple[str, int], count: int) -> str:
    """One listener's figures, as a line."""
    started = time.monotonic()
    half_sent = []
    for n in range(count):
        connection = socket.create_connection(where, timeout=GIVE_UP_SECONDS)
        connection.sendall(HALF_SENT[n % len(HALF_SENT)])
        half_sent.append(connection)
    honest_started = time.monotonic()
    with socket.create_connection(where, timeout=GIVE_UP_SECONDS) as honest:
        honest.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answered = honest.recv(64).startswith(b"HTTP/1.1 ")
    honest_seconds = time.monotonic() - honest_started
    slowest, timeouts, open_still = 0.0, 0, 0
    for connection in half_sent:
        received = b""
        try:
            while chunk := connection.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
        except TimeoutError:
            open_still += 1
        slowest = max(slowest, time.monotonic() - started)
        timeouts += received.startswith(b"HTTP/1.1 408")
        connection.close()
    outcome = "answered" if answered else "NOT answered"
    closed = count - timeouts - open_still
    return (
        f"honest request {outcome} in {honest_seconds:.2f} s; all {count} answered or closed "
        f"{slowest:.1f} s after the first was opened "
        f"({timeouts} answered 408, {closed} closed, {open_still} still open)"
    )


if __name__ == "__main__":
    main()
