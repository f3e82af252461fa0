"""A webhook receiver on loopback for tests: keeps each delivery (its headers, lower-cased, its
raw body and when it arrived) and answers the statuses it is given, in turn, then 200."""

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.servers import serving


class WebhookReceiver:
    def __init__(self, statuses: list[int] | None = None) -> None:
        self.deliveries: list[tuple[dict[str, str], bytes, float]] = []
        self.statuses = list(statuses or [])
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {name.lower(): value for name, value in self.headers.items()}
                receiver.deliveries.append((headers, body, time.time()))
                self.send_response(receiver.statuses.pop(0) if receiver.statuses else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(raw) for _, raw, _ in self.deliveries]

    def of_type(self, event_type: str) -> list[tuple[dict[str, str], dict[str, Any], bytes]]:
        """Each delivery of ``event_type``: its headers, its body read, its raw body."""
        return [
            (headers, body, raw)
            for headers, raw, _ in self.deliveries
            if (body := json.loads(raw))["type"] == event_type
        ]

    def wait_for(self, check: Callable[[], object], seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while not check():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True


@contextlib.contextmanager
def webhook_receiver(statuses: list[int] | None = None) -> Iterator[WebhookReceiver]:
    """A receiver serving for the length of a test."""
    receiver = WebhookReceiver(statuses)
    with serving(receiver.server):
        yield receiver
