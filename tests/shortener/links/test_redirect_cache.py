"""A container's redirect cache: forgotten when the takedown generation moves, which it reads at
most once per check interval."""

from datetime import UTC, datetime

from shortener.links.model import Link
from shortener.links.shortening import RedirectCache

LINK = Link(code="abcd", url="https://example.com/", created_at=datetime(2026, 1, 1, tzinfo=UTC))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Generation:
    def __init__(self) -> None:
        self.value = 0
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        return self.value


def test_a_moved_generation_drops_what_the_container_knew() -> None:
    clock, generation = Clock(), Generation()
    cache = RedirectCache(generation, ttl_seconds=300, size=10, check_seconds=1.0, monotonic=clock)
    assert cache.get("abcd") is None
    cache.put(LINK)
    # Given a takedown somewhere (the generation moved)
    generation.value = 1
    # Then within the check interval the entry is still served, after it the entry is gone
    clock.now += 0.5
    assert cache.get("abcd") == LINK
    clock.now += 0.6
    assert cache.get("abcd") is None


def test_the_generation_is_read_at_most_once_per_interval() -> None:
    clock, generation = Clock(), Generation()
    cache = RedirectCache(generation, ttl_seconds=300, size=10, check_seconds=1.0, monotonic=clock)
    cache.put(LINK)
    for _ in range(100):
        cache.get("abcd")
        clock.now += 0.01
    assert generation.reads == 1
    clock.now += 1
    cache.get("abcd")
    assert generation.reads == 2


def test_an_unchanged_generation_keeps_the_entries() -> None:
    clock, generation = Clock(), Generation()
    cache = RedirectCache(generation, ttl_seconds=300, size=10, check_seconds=1.0, monotonic=clock)
    cache.get("abcd")
    cache.put(LINK)
    clock.now += 5
    assert cache.get("abcd") == LINK
    cache.forget("abcd")
    assert cache.get("abcd") is None
