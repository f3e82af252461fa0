"""A loop's writes paced to what the table takes: additive increase, multiplicative decrease (AIMD)
of the loop's write rate, the rule by which TCP senders share a link without knowing its size.

A loop does not know the table's throughput (4,000 write units a second for a new on-demand table,
more once it has grown or been pre-warmed; less for this loop when other loops write too). It
starts slowly and doubles its rate each second until the table first throttles it, then lowers the
rate by a fraction on each throttle and raises it by a small step per second in between. Each loop
does so on its own, and together they settle near the table's throughput, instead of every loop
writing as fast as it can and retrying what was throttled in a storm. A throttle is a batch whose
items came back unprocessed, or a request refused as a whole.

Requests are spaced, not bursted: each waits until ``units / rate`` seconds after the previous one
was allowed (thread-safe: a chunk's writer threads share one pacer)."""

import math
import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from shortener import clock as wall_clock
from shortener.models.loops import LoopInvocation, LoopToken

# Slow start: a loop's first rate, in write requests (items) a second.
START_RATE = 25.0
FLOOR_RATE = 5.0
CEILING_RATE = 40_000.0
# On a throttle the rate drops to this fraction of itself, at most once per COOL_DOWN seconds
# (requests already in flight when the first throttle came back are throttled too: one cut for all).
DECREASE = 0.8
COOL_DOWN_SECONDS = 1.0
# Each cut also holds the loop's next request back this long: the table (or the hot key) refills
# instead of meeting the requests that were queued behind the throttled one, and the handed-back
# items' retry among them.
PAUSE_SECONDS = 0.5
# Slow start doubles the rate each second, so its first throttle comes at up to twice what the
# table takes: that first cut halves the rate (as TCP halves its window when slow start ends).
FIRST_DECREASE = 0.5
# Between throttles the rate rises by this fraction of the rate at the last cut, per second.
INCREASE = 0.015
# A loop that was throttled this recently says the table is its bottleneck.
THROTTLED_RECENTLY_SECONDS = 60


class WritePacer:
    """One container's write rate to a table (items a second), adapted to its throttles."""

    def __init__(
        self,
        *,
        start_rate: float = START_RATE,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._monotonic = monotonic
        self._sleep = sleep
        self._lock = threading.Lock()
        self.rate = start_rate
        self.slow_start = True
        now = monotonic()
        self._next_allowed = now
        self._grown_at = now
        self._cut_at = -math.inf
        self._rate_at_cut = start_rate
        self.throttles = 0
        self.last_throttled_at: int | None = None  # epoch seconds, for the loop's heartbeat

    def acquire(self, units: float) -> None:
        """Wait until ``units`` writes may go at the current rate."""
        with self._lock:
            now = self._monotonic()
            self._grow(now)
            start = max(now, self._next_allowed)
            self._next_allowed = start + units / self.rate
            wait = start - now
        if wait > 0:
            self._sleep(wait)

    def throttled(self) -> None:
        """The table throttled a request of this container (items handed back, or refused)."""
        with self._lock:
            now = self._monotonic()
            self.throttles += 1
            self.last_throttled_at = wall_clock.epoch_seconds()
            self._grow(now)
            if now - self._cut_at < COOL_DOWN_SECONDS:
                return
            self.rate = max(FLOOR_RATE, self.rate * (FIRST_DECREASE if self.slow_start else DECREASE))
            self.slow_start = False
            self._next_allowed = max(self._next_allowed, now + PAUSE_SECONDS)
            self._rate_at_cut = self.rate
            self._cut_at = now

    def throttled_since(self, epoch_seconds: int) -> bool:
        """Whether the table throttled this container at or after ``epoch_seconds``."""
        return self.last_throttled_at is not None and self.last_throttled_at >= epoch_seconds

    def _grow(self, now: float) -> None:
        elapsed = max(0.0, now - self._grown_at)
        self._grown_at = now
        if self.slow_start:
            self.rate = min(CEILING_RATE, self.rate * 2**elapsed)
        else:
            self.rate = min(CEILING_RATE, self.rate + INCREASE * self._rate_at_cut * elapsed)


class HeartbeatStore(Protocol):
    """``shortener.dal.loops.LoopsStore``'s heartbeats."""

    def heartbeat(self, loop: LoopInvocation, holder: str, *, throttled_at: int | None = None) -> bool: ...
    def release(self, loop: LoopInvocation, holder: str) -> bool: ...


class PacedHeartbeats:
    """A loop's heartbeats that also say when the table last throttled its writes, so that the
    scaler can tell a table at its throughput from loops too few for their backlog."""

    def __init__(self, store: HeartbeatStore, pacer: WritePacer) -> None:
        self._store = store
        self._pacer = pacer

    def heartbeat(self, loop: LoopInvocation, holder: str) -> bool:
        return self._store.heartbeat(loop, holder, throttled_at=self._pacer.last_throttled_at)

    def release(self, loop: LoopInvocation, holder: str) -> bool:
        return self._store.release(loop, holder)


def table_throttled_ago(tokens: Iterable[LoopToken], now: int) -> int | None:
    """Seconds since the table last throttled one of these loops, if within
    THROTTLED_RECENTLY_SECONDS: the table, not the number of loops, bounds their throughput, and
    another loop would only share the same throughput (and add throttles)."""
    latest = max((token.throttled_at for token in tokens if token.throttled_at is not None), default=None)
    if latest is None or now - latest > THROTTLED_RECENTLY_SECONDS:
        return None
    return max(0, now - latest)
