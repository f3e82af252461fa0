"""Healing loops: a loop whose heartbeat went stale (it crashed, timed out, or its re-invoke was
lost) is taken over with a new loop id and a fresh loop is started in its place."""

from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

from shortener import clock
from shortener.logic.scaling import LoopScaler, Starter
from shortener.models.loops import LoopToken
from shortener.models.scaling import LoopTarget, RestarterReport


class StaleTokenStore(Protocol):
    def scan(self, page_size: int | None = None) -> Iterator[LoopToken]: ...

    def take_over(self, token: LoopToken, stale_before: int) -> LoopToken | None: ...


def is_stale(token: LoopToken, stale_before: int) -> bool:
    """No heartbeat ever, or the last one before ``stale_before`` (epoch seconds)."""
    return token.last_used is None or token.last_used < stale_before


def revive_stale_loops(
    store: StaleTokenStore,
    starter: Starter,
    functions_by_queue_url: Mapping[str, str],
    stale_after_seconds: int,
    page_size: int | None = None,
) -> RestarterReport:
    """Scan every token (consistent, paginated) and revive each stale one: one conditional write
    gives it a new loop id, so of two racing restarters only one starts a loop, and the old loop,
    if it was only slow, stops when its next heartbeat finds the changed id."""
    stale_before = clock.epoch_seconds() - stale_after_seconds
    report = RestarterReport()
    for token in store.scan(page_size):
        if not is_stale(token, stale_before):
            continue
        function_name = functions_by_queue_url.get(token.queue_url)
        if function_name is None:
            report.skipped.append(token.token)
            continue
        revived = store.take_over(token, stale_before)
        if revived is None:
            continue  # another restarter took it over, or the loop came back to life
        starter.start(function_name, revived.invocation())
        report.revived.append(token.token)
    return report


def heal_and_reconcile(
    scaler: LoopScaler,
    store: StaleTokenStore,
    targets: Sequence[LoopTarget],
    stale_after_seconds: int,
    page_size: int | None = None,
) -> RestarterReport:
    """One restarter run: reconcile every configured queue, then revive stale loops.

    Reconcile goes first so that a token it removes (an empty queue going back to its minimum) is
    not revived only to stop again; the tokens it creates carry a fresh heartbeat, so the scan that
    follows leaves them alone. Reconcile also re-creates missing pinned slots, which is what keeps
    the minimum number of loops running."""
    reconciled = scaler.reconcile_all(targets)
    functions = {target.queue_url: target.function_name for target in targets}
    report = revive_stale_loops(store, scaler.starter, functions, stale_after_seconds, page_size)
    return report.model_copy(update={"reconciled": reconciled})
