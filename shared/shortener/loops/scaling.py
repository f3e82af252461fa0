"""Scaling loops with their queue: alarm transitions step the loop count, reconcile keeps it matched
to the backlog, and neither ever takes a queue below its minimum or above its maximum.

Why slots: the scaler runs once per alarm notification (three staggered alarms can fire at once)
and the restarter runs beside it, so "count the tokens, then add one" would race past the maximum.
Instead each loop owns a numbered slot, the token ``slot-000`` .. ``slot-<MAX-1>``, claimed with one
conditional write: at most MAX_LOOPS rows can ever exist. Slots below MIN_LOOPS are pinned: scaling
down never deletes them and reconcile re-creates them, so the minimum always runs whatever
interleaving of scalers and restarters happens. MIN_LOOPS may be 0: then no loop runs while the
queue is empty, and new work starts the loops it needs itself (``start_for_work``)."""

import logging
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from shortener import clock
from shortener.loops.alarms_model import AlarmNotification
from shortener.loops.model import LoopInvocation, LoopToken
from shortener.loops.pacing import table_throttled_ago
from shortener.loops.scaling_model import (
    LoopTarget,
    QueueDepth,
    ScalingAction,
    ScalingOutcome,
    ScalingTrigger,
)

_SLOT_PREFIX = "slot-"
# Claims lost to a concurrent writer before a scale-up gives up (each retry re-reads the tokens).
_CLAIM_ATTEMPTS = 3

log = logging.getLogger(__name__)


class UnstartedTokens(Protocol):
    def mark_unstarted(self, token: LoopToken) -> bool: ...


class TokenStore(UnstartedTokens, Protocol):
    def claim(self, queue_url: str, token: str) -> LoopToken | None: ...

    def delete(self, queue_url: str, token: str) -> None: ...

    def list_for_queue(self, queue_url: str) -> list[LoopToken]: ...


class Starter(Protocol):
    def start(self, function_name: str, loop: LoopInvocation) -> None: ...


def start_loop(store: UnstartedTokens, starter: Starter, function_name: str, token: LoopToken) -> bool:
    """Start the first invocation of ``token``'s loop (just claimed, or just taken over). When the
    invoke fails, the token's fresh heartbeat is removed, so the restarter's next run revives it
    instead of waiting a whole stale threshold; the failure is logged and False returned, so one
    token never stops the caller's work on the others."""
    try:
        starter.start(function_name, token.invocation())
    except Exception:
        log.exception("Starting a loop failed; the restarter revives it", extra={"token": token.token})
        try:
            store.mark_unstarted(token)
        except Exception:
            # Then it is revived once its heartbeat is stale, as before.
            log.exception("Marking a loop unstarted failed", extra={"token": token.token})
        return False
    return True


@dataclass
class _Starts:
    """Slots claimed by one scaling step: those whose loop started, and those whose start failed."""

    started: list[LoopToken] = field(default_factory=list)
    failed: list[LoopToken] = field(default_factory=list)

    @property
    def claimed(self) -> list[LoopToken]:
        return [*self.started, *self.failed]

    def __iadd__(self, other: "_Starts") -> "_Starts":
        self.started += other.started
        self.failed += other.failed
        return self


class QueueGauge(Protocol):
    def queue_url(self, queue_name: str, account_id: str | None = None, region: str | None = None) -> str: ...

    def depth(self, queue_url: str, region: str | None = None) -> QueueDepth: ...


@dataclass(frozen=True)
class LoopBounds:
    """How many loops a queue may have, and how much backlog one loop is expected to keep up with."""

    min_loops: int
    max_loops: int
    messages_per_loop: int
    # New work of n messages starts at least min(n, this) loops (``for_new_work``).
    loops_for_new_work: int = 1

    def __post_init__(self) -> None:
        if (
            not 0 <= self.min_loops <= self.max_loops
            or self.max_loops < 1
            or self.messages_per_loop < 1
            or self.loops_for_new_work < 1
        ):
            raise ValueError(f"invalid loop bounds: {self}")

    def desired(self, depth: QueueDepth) -> int:
        """The loop count a backlog needs: ``ceil(messages / messages_per_loop)``, clamped to
        ``min_loops .. max_loops``.

        Messages, not rows: a bulk message packs many rows, but SQS only counts messages, and the
        alarms' thresholds are in messages too, so both paths speak the same unit. The backlog is
        every undeleted message (visible, in flight, delayed): in-flight messages are work that a
        loop still holds and that comes back if it dies, so loops are not withdrawn under it."""
        wanted = math.ceil(depth.total / self.messages_per_loop)
        return max(self.min_loops, min(self.max_loops, wanted))

    def for_new_work(self, messages: int) -> int:
        """The loops new work of ``messages`` messages starts with: what its backlog wants, and at
        least one per message up to ``loops_for_new_work``, clamped to the maximum.

        A small job is a backlog one loop would carry, but that loop works through its messages one
        after another; on several loops they run side by side, where the table and the machine
        have room for them (docs/figures.md: not on the local stack's 2-core machine, whose AWS
        serves one request at a time). The extra loops end with the backlog (reconcile drops to the
        minimum once the queue is empty), and up to 4 their writes stay within a new table's
        throughput: a fresh loop bursts at most a quarter of it (pacing.BURST_ITEMS)."""
        wanted = max(math.ceil(messages / self.messages_per_loop), min(messages, self.loops_for_new_work))
        return max(self.min_loops, min(self.max_loops, wanted))

    def floor(self, depth: QueueDepth) -> int:
        """The fewest loops scaling down may leave: the minimum, or what a remaining backlog needs."""
        return self.desired(depth) if depth.total else self.min_loops

    def reconcile_goal(self, loops: int, depth: QueueDepth) -> int:
        """The loop count reconcile moves to from ``loops``.

        Hysteresis, so reconcile and the alarms do not undo each other: while there is a backlog,
        reconcile only raises the count to what the backlog needs (alarms may have added more, and
        their return to OK removes those one by one); once the queue is empty it drops straight to
        the minimum. In every case the result is within ``min_loops .. max_loops``."""
        if depth.total == 0:
            return self.min_loops
        return max(self.desired(depth), min(loops, self.max_loops))

    def is_pinned(self, token: str) -> bool:
        """A slot below the minimum: never deleted by scaling down."""
        slot = slot_number(token)
        return slot is not None and slot < self.min_loops


def slot_token(slot: int) -> str:
    """The token of loop slot ``slot``."""
    return f"{_SLOT_PREFIX}{slot:03d}"


def slot_number(token: str) -> int | None:
    """The slot a token names, or None for a token that is not a slot."""
    if not token.startswith(_SLOT_PREFIX):
        return None
    digits = token.removeprefix(_SLOT_PREFIX)
    return int(digits) if digits.isdigit() else None


class LoopScaler:
    """Adds and removes loops for the queues in ``functions`` ({queue name: function name})."""

    def __init__(
        self,
        store: TokenStore,
        starter: Starter,
        queues: QueueGauge,
        functions: Mapping[str, str],
        bounds: LoopBounds,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.starter = starter
        self.queues = queues
        self.functions = dict(functions)
        self.bounds = bounds
        self._rng = rng or random.Random()

    # ---- alarm notifications ------------------------------------------------------------------

    def handle_alarms(self, notifications: Iterable[AlarmNotification | None]) -> list[ScalingOutcome]:
        """Every alarm of one SNS event, in order."""
        return [
            outcome
            for notification in notifications
            if notification is not None
            for outcome in self.handle_alarm(notification)
        ]

    def handle_alarm(self, notification: AlarmNotification) -> list[ScalingOutcome]:
        """A transition into ALARM adds a loop (up to the maximum); ALARM -> OK removes a random one
        (never below the minimum, nor below what the backlog still needs); any other transition is
        ignored. A handled transition is followed by a reconcile of the same queue."""
        queue_name = notification.queue_name
        if not (notification.entered_alarm or notification.returned_to_ok):
            return [
                self._ignored(
                    queue_name, f"transition {notification.OldStateValue} -> {notification.NewStateValue}"
                )
            ]
        if queue_name is None:
            return [self._ignored(None, "alarm has no QueueName dimension", unknown=True)]
        function_name = self.functions.get(queue_name)
        if function_name is None:
            return [self._ignored(queue_name, "no loop function is configured for this queue", unknown=True)]

        arn = notification.arn
        target = LoopTarget(
            queue_name=queue_name,
            queue_url=self.queues.queue_url(queue_name, arn.account_id, arn.region),
            function_name=function_name,
            region=arn.region,
        )
        depth = self.queues.depth(target.queue_url, target.region)
        if notification.entered_alarm:
            stepped = self.scale_up(target, reason=f"{notification.AlarmName} entered ALARM")
        else:
            stepped = self.scale_down(target, depth, reason=f"{notification.AlarmName} returned to OK")
        # Reconcile reads the depth again, after its tokens (see there).
        return [stepped, self.reconcile(target)]

    def scale_up(self, target: LoopTarget, reason: str) -> ScalingOutcome:
        """One more loop for ``target``, unless it already has the maximum."""
        tokens = self.store.list_for_queue(target.queue_url)
        before = len(tokens)
        if (held := _table_bottleneck(target, tokens)) is not None:
            return self._outcome(
                target, "alarm", "unchanged", f"{reason}; {held}", before=before, after=tokens
            )
        for _ in range(_CLAIM_ATTEMPTS):
            if len(tokens) >= self.bounds.max_loops:
                return self._outcome(
                    target, "alarm", "unchanged", f"{reason}; at the maximum", before=before, after=tokens
                )
            starts = self._start_loops(target, tokens, 1)
            if starts.claimed:
                return self._outcome(
                    target,
                    "alarm",
                    "added",
                    reason,
                    before=before,
                    after=[*tokens, *starts.claimed],
                    started=starts.started,
                    failed=starts.failed,
                )
            tokens = self.store.list_for_queue(target.queue_url)  # lost a race for the slot: look again
        return self._outcome(
            target, "alarm", "unchanged", f"{reason}; every free slot was taken", before=before, after=tokens
        )

    def scale_down(self, target: LoopTarget, depth: QueueDepth, reason: str) -> ScalingOutcome:
        """One loop fewer for ``target``: a random token that is not pinned, while more loops run
        than the minimum (or than a remaining backlog needs)."""
        tokens = self.store.list_for_queue(target.queue_url)
        floor = self.bounds.floor(depth)
        removable = [token for token in tokens if not self.bounds.is_pinned(token.token)]
        if len(tokens) <= floor or not removable:
            return self._outcome(
                target,
                "alarm",
                "unchanged",
                f"{reason}; at the floor of {floor}",
                before=len(tokens),
                after=tokens,
            )
        victim = self._rng.choice(removable)
        self.store.delete(target.queue_url, victim.token)
        remaining = [token for token in tokens if token.token != victim.token]
        return self._outcome(
            target, "alarm", "removed", reason, before=len(tokens), after=remaining, stopped=[victim.token]
        )

    # ---- reconcile ----------------------------------------------------------------------------

    def reconcile(
        self, target: LoopTarget, depth: QueueDepth | None = None, *, at_least: int = 0
    ) -> ScalingOutcome:
        """Match ``target``'s loops to its backlog (see ``LoopBounds.reconcile_goal``): pinned slots
        that are missing are re-created, extra loops are added for a backlog that outgrew them, and
        an empty queue goes back to the minimum. Alarms fire only on transitions, so without this a
        backlog that stays above a threshold would never get another loop.

        The tokens are read before the depth: new work queues its messages before it claims loop
        slots, so a token this run did not see cannot be removed on a depth read before its work
        was queued. ``at_least``: new work's loops (``start_for_work``), up to the maximum."""
        tokens = self.store.list_for_queue(target.queue_url)
        depth = depth if depth is not None else self.queues.depth(target.queue_url, target.region)
        goal = max(self.bounds.reconcile_goal(len(tokens), depth), min(at_least, self.bounds.max_loops))

        present = {token.token for token in tokens}
        pinned = [slot_token(slot) for slot in range(self.bounds.min_loops)]
        extras = [token for token in tokens if not self.bounds.is_pinned(token.token)]
        surplus = len(extras) - (goal - self.bounds.min_loops)

        stopped: list[str] = []
        if surplus > 0:
            # Tokens that are not slots first, then the highest slots.
            for victim in sorted(extras, key=_removal_order)[:surplus]:
                self.store.delete(target.queue_url, victim.token)
                stopped.append(victim.token)
        starts = self._claim_and_start(target, [token for token in pinned if token not in present])
        reason = f"backlog of {depth.total} messages wants {goal} loops"
        held = _table_bottleneck(target, tokens) if surplus < 0 else None
        if surplus < 0 and held is None:
            starts += self._start_loops(target, [*tokens, *starts.claimed], -surplus)
        elif held is not None:
            reason += f"; {held}"

        remaining = [token for token in tokens if token.token not in stopped]
        action: ScalingAction = "reconciled" if starts.claimed or stopped else "unchanged"
        return self._outcome(
            target,
            "reconcile",
            action,
            reason,
            before=len(tokens),
            after=[*remaining, *starts.claimed],
            started=starts.started,
            stopped=stopped,
            failed=starts.failed,
        )

    def start_for_work(self, target: LoopTarget, messages: int) -> ScalingOutcome:
        """New work just queued ``messages`` messages: start at once the loops they need
        (``LoopBounds.for_new_work``) instead of waiting for an alarm period. Never removes a loop:
        the backlog is at least this work."""
        outcome = self.reconcile(
            target, QueueDepth(visible=max(1, messages)), at_least=self.bounds.for_new_work(messages)
        )
        return outcome.model_copy(
            update={"trigger": "work", "reason": f"new work of {messages} messages: {outcome.reason}"}
        )

    def targets(self, region: str | None = None) -> list[LoopTarget]:
        """Every configured queue, with its URL resolved in this account."""
        return [
            LoopTarget(
                queue_name=queue_name,
                queue_url=self.queues.queue_url(queue_name, region=region),
                function_name=function_name,
                region=region,
            )
            for queue_name, function_name in self.functions.items()
        ]

    # ---- helpers ------------------------------------------------------------------------------

    def _start_loops(self, target: LoopTarget, tokens: Sequence[LoopToken], count: int) -> _Starts:
        """Claim up to ``count`` free slots below the maximum (lowest first) and start their loops."""
        taken = {token.token for token in tokens}
        room = max(0, self.bounds.max_loops - len(tokens))
        free = [slot_token(slot) for slot in range(self.bounds.max_loops) if slot_token(slot) not in taken]
        return self._claim_and_start(target, free[: min(count, room)])

    def _claim_and_start(self, target: LoopTarget, slots: Sequence[str]) -> _Starts:
        starts = _Starts()
        for slot in slots:
            claimed = self.store.claim(target.queue_url, slot)
            if claimed is None:
                continue  # a concurrent scaler or restarter claimed it and starts its loop
            if start_loop(self.store, self.starter, target.function_name, claimed):
                starts.started.append(claimed)
            else:
                starts.failed.append(claimed)
        return starts

    def _outcome(
        self,
        target: LoopTarget,
        trigger: ScalingTrigger,
        action: ScalingAction,
        reason: str,
        *,
        before: int,
        after: Sequence[LoopToken],
        started: Sequence[LoopToken] = (),
        stopped: Sequence[str] = (),
        failed: Sequence[LoopToken] = (),
    ) -> ScalingOutcome:
        return ScalingOutcome(
            queue_name=target.queue_name,
            trigger=trigger,
            action=action,
            reason=reason,
            loops_before=before,
            loops_after=len(after),
            started=[token.token for token in started],
            stopped=list(stopped),
            failed=[token.token for token in failed],
        )

    @staticmethod
    def _ignored(queue_name: str | None, reason: str, *, unknown: bool = False) -> ScalingOutcome:
        action: ScalingAction = "unknown_queue" if unknown else "ignored"
        return ScalingOutcome(queue_name=queue_name, trigger="alarm", action=action, reason=reason)


class WorkStarter:
    """Starts the loops new work on one queue needs (``shortener.jobs.submit.WorkLoops``).
    A failure to start them does not fail the work: the alarms and the restarter's reconcile
    start loops for any backlog within their periods."""

    def __init__(self, scaler: LoopScaler, target: LoopTarget, logger: logging.Logger | Any = None) -> None:
        self._scaler = scaler
        self._target = target
        self._log = logger or logging.getLogger(__name__)

    def start_for(self, messages: int) -> None:
        try:
            outcome = self._scaler.start_for_work(self._target, messages)
        except Exception:
            self._log.exception(
                "Could not start loops for new work; the restarter will", extra={"messages": messages}
            )
            return
        if outcome.started:
            self._log.info("Loops started for new work", extra=outcome.model_dump())


def _table_bottleneck(target: LoopTarget, tokens: Sequence[LoopToken]) -> str | None:
    """Why no loop is added, when the table throttled the loops lately (logged), else None."""
    ago = table_throttled_ago(tokens, clock.epoch_seconds())
    if ago is None:
        return None
    held = f"the links table is the bottleneck (it throttled the loops' writes {ago} s ago): no loop added"
    log.warning("Scaling held: %s", held, extra={"queue": target.queue_name, "throttled_by": "table"})
    return held


def _removal_order(token: LoopToken) -> tuple[int, int]:
    slot = slot_number(token.token)
    return (0, 0) if slot is None else (1, -slot)
