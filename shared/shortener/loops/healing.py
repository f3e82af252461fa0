"""Healing loops: a loop whose heartbeat went stale (it crashed, timed out, or its re-invoke was
lost) is taken over with a new loop id and a fresh loop is started in its place.

A loop whose invocation failed (a crash, a timeout, out of memory) is revived at once: Lambda sends
the record of the failed asynchronous invocation to the poller's on-failure destination (the
operations topic), the restarter is subscribed to it, and the record's ``requestPayload`` is the
loop's event. The stale-heartbeat scan stays as the safety net (a lost record, a lost re-invoke).
"""

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from pydantic import ValidationError

from shortener import clock
from shortener.jobs.dead_letters import DeadLetterSettler
from shortener.loops.model import LoopInvocation, LoopToken
from shortener.loops.scaling import LoopScaler, Starter, UnstartedTokens, start_loop
from shortener.loops.scaling_model import LoopTarget, RestarterReport

log = logging.getLogger(__name__)


class StaleTokenStore(UnstartedTokens, Protocol):
    def scan(self, page_size: int | None = None) -> Iterator[LoopToken]: ...

    def take_over(self, token: LoopToken, stale_before: int) -> LoopToken | None: ...


class FailedLoopStore(UnstartedTokens, Protocol):
    def take_over_failed(self, failed: LoopInvocation) -> LoopToken | None: ...


def failed_invocations(event: Mapping[str, Any]) -> list[LoopInvocation]:
    """The loop events of the failed invocations that ``event`` reports: an SNS event whose
    messages are Lambda's invocation records (``requestContext``, ``requestPayload``, ...), or one
    such record as a Lambda destination's event. Other messages of the topic (alarms) are none."""
    if "requestContext" in event:
        records: list[Any] = [event]
    else:
        records = []
        for record in event.get("Records", []):
            try:
                records.append(json.loads(record["Sns"]["Message"]))
            except (KeyError, TypeError, ValueError):
                continue
    failed = []
    for record in records:
        if not isinstance(record, dict) or not isinstance(record.get("requestContext"), dict):
            continue
        try:
            failed.append(LoopInvocation.model_validate(record.get("requestPayload")))
        except ValidationError:
            continue  # another function's failure
    return failed


def revive_failed_loops(
    store: FailedLoopStore,
    starter: Starter,
    functions_by_queue_url: Mapping[str, str],
    failed: Sequence[LoopInvocation],
) -> RestarterReport:
    """Revive each loop whose invocation failed, unless it went on (a later invocation claimed its
    token) or was revived already: one conditional write each, as the stale scan's take-over."""
    report = RestarterReport()
    for invocation in failed:
        function_name = functions_by_queue_url.get(invocation.queue_url)
        if function_name is None:
            report.skipped.append(invocation.token)
            continue
        try:
            revived = store.take_over_failed(invocation)
        except Exception:
            log.exception("Taking over a failed loop failed", extra={"token": invocation.token})
            report.failed.append(invocation.token)
            continue
        if revived is None:
            continue
        if start_loop(store, starter, function_name, revived):
            report.revived.append(invocation.token)
        else:
            report.failed.append(invocation.token)
    return report


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
    gives it a new loop id (and sequence 0), so of two racing restarters only one starts a loop,
    and the old loop, if it was only slow, stops when its next heartbeat finds the changed id.

    A token whose take-over or start fails is reported in ``failed`` and the scan goes on; a failed
    start leaves the token without a heartbeat, so the next run revives it."""
    stale_before = clock.epoch_seconds() - stale_after_seconds
    report = RestarterReport()
    for token in store.scan(page_size):
        if not is_stale(token, stale_before):
            continue
        function_name = functions_by_queue_url.get(token.queue_url)
        if function_name is None:
            report.skipped.append(token.token)
            continue
        try:
            revived = store.take_over(token, stale_before)
        except Exception:
            log.exception("Taking over a stale loop failed", extra={"token": token.token})
            report.failed.append(token.token)
            continue
        if revived is None:
            continue  # another restarter took it over, or the loop came back to life
        if start_loop(store, starter, function_name, revived):
            report.revived.append(token.token)
        else:
            report.failed.append(token.token)
    return report


def heal_and_reconcile(
    scaler: LoopScaler,
    store: StaleTokenStore,
    targets: Sequence[LoopTarget],
    stale_after_seconds: int,
    *,
    page_size: int | None = None,
    dead_letters: DeadLetterSettler | None = None,
) -> RestarterReport:
    """One restarter run: reconcile every configured queue, revive stale loops, then settle the
    dead letters of every configured queue. Each step (and each queue) runs whatever happened to
    the others; what raised is named in ``errors``.

    Reconcile goes first so that a token it removes (an empty queue going back to its minimum) is
    not revived only to stop again; the tokens it creates carry a fresh heartbeat, so the scan that
    follows leaves them alone. Reconcile also re-creates missing pinned slots, which is what keeps
    the minimum number of loops running."""
    errors: list[str] = []
    reconciled = []
    for target in targets:
        try:
            reconciled.append(scaler.reconcile(target))
        except Exception:
            log.exception("Reconciling a queue failed", extra={"queue": target.queue_name})
            errors.append(f"reconcile {target.queue_name}")
    functions = {target.queue_url: target.function_name for target in targets}
    try:
        report = revive_stale_loops(store, scaler.starter, functions, stale_after_seconds, page_size)
    except Exception:
        # The scan itself failed (a token's own failure never ends it).
        log.exception("Scanning for stale loops failed")
        errors.append("revive")
        report = RestarterReport()
    settled = []
    if dead_letters is not None:
        for target in targets:
            try:
                settled.append(dead_letters.settle(target))
            except Exception:
                log.exception("Settling dead letters failed", extra={"queue": target.queue_name})
                errors.append(f"dead letters {target.queue_name}")
    failed = report.failed + [token for outcome in reconciled for token in outcome.failed]
    return report.model_copy(
        update={"reconciled": reconciled, "dead_letters": settled, "failed": failed, "errors": errors}
    )
