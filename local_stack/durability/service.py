"""What a service's part of the durable state provides, and what it journals into.

To make another service durable, write one class with this shape and add it to the list
the local stack builds (``local_stack.stack``); the journal, snapshots, compaction and replay stay
as they are. Large values (object bodies) belong in files of their own beside the journal, written
before the record that names them."""

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from local_stack.durability.journal import Record


class Sink(Protocol):
    """Where a service's changes go: the journal."""

    def append(self, records: list[Record]) -> None:
        """Journal ``records`` as one frame; they are in the page cache when this returns."""
        ...

    def appending(self, records: list[Record]) -> AbstractContextManager[None]:
        """Journal ``records``, then hold the journal while the caller makes the change visible, so
        that no snapshot can fall between the record and the change."""
        ...


class ServiceState(Protocol):
    """One service's state in the embedded AWS, as records."""

    service: str  # the first element of each of its records
    kind: str  # what it holds, as counted in summaries: "items", "messages"

    def record_into(self, sink: Sink | None) -> None:
        """Journal every change into ``sink`` from now on; None stops recording."""
        ...

    def end_request(self) -> None:
        """The request served on this thread is over: journal what it changed, if not yet done."""
        ...

    def dump(self) -> Iterator[list[Record]]:
        """The whole state as batches of records, each record ending with its list of things (called
        with requests to serialised services held off; what is journaled during the dump is
        replayed after it, so the dump may be approximate for anything changed meanwhile)."""
        ...

    def after_snapshot(self) -> None:
        """A new snapshot is in place and the journal before it deleted (called with requests to
        serialised services held off): drop what only those files referred to (S3's bodies)."""
        ...

    def apply(self, record: Record, renames: Mapping[str, str]) -> None:
        """Replay one record; ``renames`` maps physical ids of the saving run to this run's."""
        ...

    def finish_restore(self) -> int:
        """After the last record: how many things (of its kind) it now holds."""
        ...


def renamed(value: Any, renames: Mapping[str, str]) -> Any:
    """``value`` with every string that is a key of ``renames`` replaced (a stored queue URL whose
    port changed)."""
    if not renames:
        return value
    if isinstance(value, dict):
        return {key: renamed(item, renames) for key, item in value.items()}
    if isinstance(value, list):
        return [renamed(item, renames) for item in value]
    if isinstance(value, str):
        return renames.get(value, value)
    return value
