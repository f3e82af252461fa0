"""A container's pool of counter ids: one counter write per block, blocks that grow with use up to
their size, ids skipped where custom codes reserved them, unused ids handed out next."""

import pytest

from shortener.exceptions import CodeKeyChangedError
from shortener.links.shortening import IdPool
from shortener.links.store import CounterKeyMismatchError


class Counter:
    """The links table's id counter: consecutive ids, minus the reserved ones."""

    def __init__(self, reserved: frozenset[int] = frozenset(), fingerprint: str = "key") -> None:
        self.next_id = 1
        self.reserved = reserved
        self.fingerprint = fingerprint
        self.writes: list[int] = []

    def allocate_ids(self, count: int, key_fingerprint: str) -> list[int]:
        if key_fingerprint != self.fingerprint:
            raise CounterKeyMismatchError(self.fingerprint)
        self.writes.append(count)
        first, self.next_id = self.next_id, self.next_id + count
        return [link_id for link_id in range(first, self.next_id) if link_id not in self.reserved]


def test_a_bulk_run_writes_the_counter_once_per_block_once_blocks_have_grown() -> None:
    # Given a pool of blocks of up to 1,000 ids
    counter = Counter()
    pool = IdPool(counter, 1_000, "key")

    # When 20 chunks of 250 rows take their ids
    chunks = [pool.take(250) for _ in range(20)]

    # Then every id is handed out once, in order, and the counter was written 7 times, not 20:
    # blocks of 250, 250, 500, then 1,000 (as many as handed out so far, up to the block size)
    assert [link_id for chunk in chunks for link_id in chunk] == list(range(1, 5_001))
    assert counter.writes == [250, 250, 500, 1_000, 1_000, 1_000, 1_000]


def test_a_container_that_shortens_one_link_reserves_one_id() -> None:
    counter = Counter()

    IdPool(counter, 1_000, "key").take(1)

    assert counter.writes == [1]


def test_ids_reserved_by_custom_codes_are_never_handed_out() -> None:
    # Given ids 3 and 4 reserved by custom codes
    counter = Counter(reserved=frozenset({3, 4}))
    pool = IdPool(counter, 10, "key")

    # When 5 ids are taken
    ids = pool.take(5)

    # Then the reserved ones were skipped and the missing ones reserved after them
    assert ids == [1, 2, 5, 6, 7]


def test_ids_given_back_are_handed_out_next() -> None:
    # Given ids taken for a chunk whose redelivery found ids fixed by its first delivery
    pool = IdPool(Counter(), 100, "key")
    first = pool.take(3)

    # When they are given back
    pool.give_back(first)

    # Then the next chunk gets them, and no id is lost
    assert pool.take(5) == [1, 2, 3, 4, 5]


def test_a_counter_started_under_another_key_refuses_with_the_503() -> None:
    pool = IdPool(Counter(fingerprint="old"), 100, "new")

    with pytest.raises(CodeKeyChangedError, match="another code key"):
        pool.take(1)
