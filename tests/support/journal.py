"""A journal sink that keeps the records in a list: what a durable part of the local stack's state
journaled, for tests that replay it into a new run's part."""

from contextlib import AbstractContextManager, nullcontext

from local_stack.durability.journal import Record


class ListSink:
    def __init__(self) -> None:
        self.records: list[Record] = []

    def append(self, records: list[Record]) -> None:
        self.records += records

    def appending(self, records: list[Record]) -> AbstractContextManager[None]:
        self.append(records)
        return nullcontext()
