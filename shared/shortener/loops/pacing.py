"""A loop's writes paced to what the table takes: additive increase, multiplicative decrease (AIMD)
of the loop's write rate, the rule by which TCP senders share a link without knowing its size.

A loop does not know the table's throughput (4,000 write units a second for a new on-demand table,
more once it has grown or been pre-warmed; less for this loop when other loops write too). It
starts slowly and doubles its rate each second until the table first throttles it, then lowers the
rate by a fraction on each throttle and raises it by a small step per second in between. Each loop
does so on its own, and together they settle near the table's throughput, instead of every loop
writing as fast as it can and retrying what was throttled in a storm. A throttle is a batch whose
items came back unprocessed, or a request refused as a whole.

Requests are spaced at the rate by a token bucket (thread-safe: a chunk's writer threads share one
pacer). The bucket holds more than one request's worth only as a burst: a loop that has not written
for IDLE_SECONDS (a fresh container, or one between jobs), and that the table has not throttled in
the last THROTTLED_RECENTLY_SECONDS, may send BURST_ITEMS at once, as the table's own bucket takes
them, so a small job is never held back by a slow start it would end before. When the burst is
spent unthrottled, slow start goes on from the rate the burst was written at. A throttle of a burst
says the table's bucket is shared or small, not what rate it takes: it ends the burst and pauses
the loop, and leaves the rate and slow start as they were."""

import math
import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from shortener import clock as wall_clock
from shortener.loops.model import LoopInvocation, LoopToken

# Slow start: a loop's first rate, in write requests (items) a second.
START_RATE = 25.0
FLOOR_RATE = 5.0
CEILING_RATE = 40_000.0
# On a throttle the rate drops to this fraction of itself, at most once per COOL_DOWN seconds
# (requests already in flight when the first throttle came back are throttled too: one cut for all).
DECREASE = 0.85
COOL_DOWN_SECONDS = 1.0
# Each cut also holds the loop's next request back this long: the table (or the hot key) refills
# instead of meeting the requests that were queued behind the throttled one, and the handed-back
# items' retry among them.
PAUSE_SECONDS = 0.25
# Slow start doubles the rate each second, so its first throttle comes at up to twice what the
# table takes: that first cut halves the rate (as TCP halves its window when slow start ends).
FIRST_DECREASE = 0.5
# Between throttles the rate rises by this fraction of the rate at the last cut, per second.
INCREASE = 0.015
# A loop that was throttled this recently says the table is its bottleneck.
THROTTLED_RECENTLY_SECONDS = 60
# What a loop may send at once after writing nothing for a while (its bucket refills at its rate):
# a quarter of the 4,000 write request units a new on-demand table serves at once
# (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html),
# so that four loops bursting together stay within it; the rows of four 250-row messages, so that
# a job of up to 1,000 rows is written as fast as the loop works.
BURST_ITEMS = 1_000.0
# A loop that asked to write nothing for this long may burst again (the table's bucket has refilled).
IDLE_SECONDS = 5.0
# A waiting writer thread looks at the rate again this often (a cut applies to it at once).
_RECHECK_SECONDS = 0.05


class WritePacer:
    """One container's write rate to a table (items a second), adapted to its throttles."""

    def __init__(
        self,
        *,
        start_rate: float = START_RATE,
        burst: float = BURST_ITEMS,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._monotonic = monotonic
        self._sleep = sleep
        self._lock = threading.Lock()
        self.rate = start_rate
        self.slow_start = True
        self._filled_at = self._second_began = monotonic()
        self._second_rate = start_rate
        self._burst = burst
        self._tokens = 0.0
        self._active_at = -math.inf  # when a writer last asked to write (a fresh loop is idle)
        self._burst_began: float | None = None  # a burst under way: when it began
        self._burst_written = 0.0  # items of it written unthrottled
        self._bursting_at = -math.inf  # when a request last went on the burst's credit
        self._paused_until = -math.inf
        self._limited = False
        self._cut_at = -math.inf
        self._rate_at_cut = start_rate
        self.throttles = 0
        self.last_throttled_at: int | None = None  # epoch seconds, for the loop's heartbeat

    def acquire(self, units: float) -> None:
        """Wait until ``units`` writes may go at the current rate: a token bucket at the rate,
        holding one request's worth (or what is left of a burst), checked again as the wait goes
        on, so that a cut slows the writer threads already waiting at once (no slot is reserved
        ahead)."""
        waited = False
        while True:
            with self._lock:
                now = self._monotonic()
                if now - self._active_at >= IDLE_SECONDS and self._may_burst(now):
                    self._tokens = max(self._tokens, self._burst)
                    self._burst_began, self._burst_written = now, 0.0
                self._active_at = now
                if now >= self._paused_until:
                    depth = max(units, self._tokens)
                    self._tokens = min(depth, self._tokens + (now - self._filled_at) * self.rate)
                self._filled_at = now
                if now >= self._paused_until and self._tokens >= units - 1e-6:
                    if self._tokens > max(2 * units, self.rate):
                        # More credit than a second at the rate would give: a burst.
                        self._bursting_at = now
                    self._tokens -= units
                    if not waited:
                        self._limited = False
                    return
                if self._burst_began is not None:
                    self._burst_spent(now)
                # Requests that have to wait: the rate, not the work coming in, sets the pace now.
                self._limited = True
                wait = max(self._paused_until - now, (units - self._tokens) / self.rate)
            waited = True
            self._sleep(min(max(wait, 0.001), _RECHECK_SECONDS))

    def _may_burst(self, now: float) -> bool:
        throttled_recently = now - self._cut_at < THROTTLED_RECENTLY_SECONDS
        return self._burst > 0 and not throttled_recently

    def _burst_spent(self, now: float) -> None:
        """The burst's credit ran out unthrottled: slow start goes on from the rate it was
        written at (a table that took it will take that rate)."""
        elapsed = now - self._burst_began if self._burst_began is not None else 0.0
        if self.slow_start and elapsed > 0 and self._burst_written:
            self.rate = min(CEILING_RATE, max(self.rate, self._burst_written / elapsed))
            self._second_began, self._second_rate = now, self.rate
        self._burst_began = None

    def throttled(self) -> None:
        """The table throttled a request of this container (items handed back, or refused)."""
        with self._lock:
            now = self._monotonic()
            self.throttles += 1
            self.last_throttled_at = wall_clock.epoch_seconds()
            if now - self._bursting_at < COOL_DOWN_SECONDS:
                # Requests sent on the burst's credit met a table whose bucket is shared or
                # small: that is not the rate's fault. The burst ends, the table refills.
                self._tokens = 0.0
                self._bursting_at = -math.inf
                self._burst_began = None
                self._paused_until = max(self._paused_until, now + PAUSE_SECONDS)
                self._cut_at = now  # the requests in flight with it are the same throttle
                return
            if now - self._cut_at < COOL_DOWN_SECONDS:
                return
            self.rate = max(FLOOR_RATE, self.rate * (FIRST_DECREASE if self.slow_start else DECREASE))
            self.slow_start = False
            self._burst_began = None
            self._paused_until = now + PAUSE_SECONDS
            self._tokens = 0.0
            self._rate_at_cut = self.rate
            self._cut_at = now

    def succeeded(self, units: float) -> None:
        """``units`` writes went through unthrottled: the rate grows, by what was sent (as TCP's
        window grows by what is acknowledged), never by idle time. A second's worth at the rate
        doubles it in slow start, and adds INCREASE of the rate at the last cut afterwards; only
        while the rate is what holds the loop back."""
        with self._lock:
            if self._burst_began is not None:
                self._burst_written += units
            if not self._limited:
                # The loop sends less than its rate allows (between chunks, a short backlog): a
                # rate it has not used would come back as a burst.
                return
            share = units / self.rate
            if self.slow_start:
                # Doubling per second of wall time at most: requests already spaced at a lower
                # rate still wait their turn, and would otherwise double it again and again.
                now = self._monotonic()
                if now - self._second_began >= 1.0:
                    self._second_began, self._second_rate = now, self.rate
                self.rate = min(CEILING_RATE, 2 * self._second_rate, self.rate * 2**share)
            else:
                self.rate = min(CEILING_RATE, self.rate + INCREASE * self._rate_at_cut * share)


class HeartbeatStore(Protocol):
    """``shortener.loops.store.LoopsStore``'s heartbeats."""

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
