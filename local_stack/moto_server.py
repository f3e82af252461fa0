"""The embedded AWS: moto's threaded server, with two fixes for running it for hours under load.

- Requests to services whose moto backends are not thread-safe run one at a time. moto's DynamoDB
  deep-copies a table in TransactWriteItems while other request threads write to it ("dictionary
  changed size during iteration"). SQS has its own locks and must stay concurrent, since
  ReceiveMessage long-polls for up to 20 s.
- moto records every model instance it ever creates (deep copies included) for its dashboard, so each
  TransactWriteItems would keep a copy of the whole table and every message ever sent would stay in
  memory: gigabytes within minutes of bulk work. The records are dropped after each request."""

import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.core.model_instances import reset_model_data
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

# The service in a SigV4 credential scope: Credential=<key>/<date>/<region>/<service>/aws4_request
_SIGNED_SERVICE = re.compile(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/")
CONCURRENT_SERVICES = frozenset({"sqs"})


class SerialisingMiddleware:
    """Runs each request to a service outside CONCURRENT_SERVICES under one lock."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        signed = _SIGNED_SERVICE.search(environ.get("HTTP_AUTHORIZATION", ""))
        try:
            if signed and signed.group(1) in CONCURRENT_SERVICES:
                return list(self._app(environ, start_response))
            with self._lock:
                # Drain the body inside the lock: moto may build it lazily.
                return list(self._app(environ, start_response))
        finally:
            reset_model_data()


class EmbeddedAws(ThreadedMotoServer):
    """moto's ThreadedMotoServer on loopback, with the serialising middleware in front."""

    def __init__(self, port: int) -> None:
        super().__init__(ip_address="127.0.0.1", port=port, verbose=False)

    def _server_entry(self) -> None:
        app = SerialisingMiddleware(DomainDispatcherApplication(create_backend_app))
        self._server = make_server(
            self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()

    @property
    def url(self) -> str:
        host, port = self.get_host_and_port()
        return f"http://{host}:{port}"
