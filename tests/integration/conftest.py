"""Fixtures for handler tests under moto."""

from types import ModuleType

import pytest


@pytest.fixture
def api(tables: dict[str, str]) -> ModuleType:
    """The API function's module, with its per-container caches emptied."""
    from functions.api import app

    app.links.cache_clear()
    app.apple_app_site_association.cache_clear()
    return app
