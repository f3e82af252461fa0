"""A socketserver served on a thread for the length of a test."""

import contextlib
import socketserver
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def serving[Server: socketserver.BaseServer](server: Server) -> Iterator[Server]:
    """``server`` serving on a daemon thread; shut down and closed after."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
