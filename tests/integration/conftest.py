"""Fixtures for handler tests under moto, and the local stack's embedded AWS."""

from collections.abc import Iterator
from types import ModuleType

import pytest

from local_stack.embedded.server import EmbeddedAws


@pytest.fixture
def api(tables: dict[str, str]) -> ModuleType:
    """The API function's module, with its per-container caches emptied."""
    from functions.api import app

    app.links.cache_clear()
    app.apple_app_site_association.cache_clear()
    return app


@pytest.fixture(scope="module")
def aws() -> Iterator[EmbeddedAws]:
    """The local stack's embedded AWS on a free loopback port, shared by a module's tests."""
    server = EmbeddedAws(0)
    server.start()
    yield server
    server.stop()
