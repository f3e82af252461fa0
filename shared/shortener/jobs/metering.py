"""Counting what a job's work costs, as seen by the logic: a meter is opened around a piece of work,
and ``take`` hands over what was counted since the last take (``shortener.aws_usage`` counts the
AWS requests made inside it). Tests and callers that do not count use ``null_metering``."""

import contextvars
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from contextlib import AbstractContextManager
from typing import Protocol, Self

from shortener.jobs.model import JobUsage


class Meter(Protocol):
    """Counts the work done in its context (and in the threads its context is carried to)."""

    def take(self) -> JobUsage: ...


class _NullMeter:
    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def take(self) -> JobUsage:
        return JobUsage()


Metering = Callable[[], AbstractContextManager[Meter]]


def null_metering() -> AbstractContextManager[Meter]:
    """A meter that counts nothing."""
    return _NullMeter()


def map_in_context[T, R](pool: Executor, function: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
    """``pool.map(function, items)``, each call run in a copy of the caller's context, so that a
    meter open in the caller also counts the requests its worker threads make."""
    tasks = [(contextvars.copy_context(), item) for item in items]
    return pool.map(lambda task: task[0].run(function, task[1]), tasks)
