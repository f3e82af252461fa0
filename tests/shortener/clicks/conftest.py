"""Fixtures of the clicks tests."""

from collections.abc import Iterator
from types import ModuleType

import pytest


@pytest.fixture
def collector(tables: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The collector function's module over the test's tables, its metrics in a test namespace."""
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "collector")
    monkeypatch.setenv("CLICK_RETENTION_DAYS", "30")
    from functions.collector import app

    monkeypatch.setattr(app.metrics, "namespace", "BulkShortenerTests")
    yield app
