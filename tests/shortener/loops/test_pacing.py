"""A loop's write pacing (AIMD) and what it tells the scaler."""

import itertools
from datetime import UTC, datetime

import pytest

from shortener.jobs.model import Job, JobUsage
from shortener.jobs.status import status_view
from shortener.loops import pacing
from shortener.loops.model import LoopToken
from shortener.loops.pacing import WritePacer, table_throttled_ago


class Time:
    """A monotonic clock that only sleeping moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def simulate(
    pacer: WritePacer, time: Time, table_rate: float, seconds: float, batch: int = 25
) -> tuple[float, int, int]:
    """A table granting ``table_rate`` items a second from a one-second bucket; every batch the
    pacer lets through is sent. (items written, batches sent, batches throttled)"""
    tokens, last = table_rate, time.now
    written = sent = throttled = 0
    while time.now < seconds:
        pacer.acquire(batch)
        tokens = min(table_rate, tokens + (time.now - last) * table_rate)
        last = time.now
        sent += 1
        fits = min(batch, int(tokens))
        tokens -= fits
        written += fits
        if fits < batch:
            throttled += 1
            pacer.throttled()
        else:
            pacer.succeeded(batch)
    return written, sent, throttled


def test_the_rate_doubles_each_second_while_it_holds_the_loop_back() -> None:
    time = Time()
    pacer = WritePacer(start_rate=100, monotonic=time, sleep=time.sleep)
    while time.now < 2.0:
        pacer.acquire(25)
        pacer.succeeded(25)
    assert 300 <= pacer.rate <= 450
    pacer.throttled()
    assert not pacer.slow_start
    assert pacer.rate <= 450 * pacing.FIRST_DECREASE


def test_a_rate_the_loop_does_not_use_does_not_grow() -> None:
    time = Time()
    pacer = WritePacer(start_rate=100, monotonic=time, sleep=time.sleep)
    for _ in range(10):
        time.now += 5.0  # a loop between chunks: its requests never wait
        pacer.acquire(25)
        pacer.succeeded(25)
    assert pacer.rate == 100


def test_requests_are_spaced_at_the_rate_not_bursted() -> None:
    time = Time()
    pacer = WritePacer(start_rate=100, monotonic=time, sleep=time.sleep)
    pacer.throttled()  # out of slow start: the rate is 50
    moments = []
    for _ in range(4):
        pacer.acquire(17)
        moments.append(time.now)
    gaps = [later - earlier for earlier, later in itertools.pairwise(moments)]
    assert all(gap == pytest.approx(17 / 50, abs=0.03) for gap in gaps)


def test_throttles_in_flight_together_cut_the_rate_once() -> None:
    time = Time()
    pacer = WritePacer(start_rate=1000, monotonic=time, sleep=time.sleep)
    for _ in range(8):
        pacer.throttled()
    assert pacer.rate == pytest.approx(1000 * pacing.FIRST_DECREASE)
    assert pacer.throttles == 8
    time.now += 1.0
    pacer.throttled()
    assert pacer.rate == pytest.approx(1000 * pacing.FIRST_DECREASE * pacing.DECREASE, rel=0.02)


def test_a_paced_loop_settles_near_the_table_rate_with_few_throttles() -> None:
    time = Time()
    pacer = WritePacer(monotonic=time, sleep=time.sleep)
    simulate(pacer, time, table_rate=1000, seconds=20)  # past slow start
    started = time.now
    written, sent, throttled = simulate(pacer, time, table_rate=1000, seconds=140)
    used = written / ((time.now - started) * 1000)
    assert used >= 0.9
    assert throttled / sent <= 0.05


def test_the_scaler_sees_the_table_as_the_bottleneck_for_a_minute_after_a_throttle() -> None:
    def token(throttled_at: int | None) -> LoopToken:
        return LoopToken(
            queue_url="q", token="slot-000", loop_id="l", started_at=0, throttled_at=throttled_at
        )

    assert table_throttled_ago([token(None)], now=1000) is None
    assert table_throttled_ago([token(None), token(990)], now=1000) == 10
    assert table_throttled_ago([token(1000 - pacing.THROTTLED_RECENTLY_SECONDS - 1)], now=1000) is None


def test_a_job_whose_writes_were_throttled_names_the_table_in_its_status() -> None:
    job = Job(job_id="j", total=10, chunks=1, succeeded=10, created_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert status_view(job, results_url="/r").throttled_by is None
    throttled = job.model_copy(update={"usage": JobUsage(throttled_requests=3)})
    assert status_view(throttled, results_url="/r").throttled_by == "table"
    assert (JobUsage(throttled_requests=1) + JobUsage(throttled_requests=2)).throttled_requests == 3


def test_a_cut_holds_the_next_request_back_so_the_table_refills() -> None:
    time = Time()
    pacer = WritePacer(start_rate=1000, monotonic=time, sleep=time.sleep)
    pacer.throttled()
    pacer.acquire(25)
    assert pacing.PAUSE_SECONDS <= time.now <= pacing.PAUSE_SECONDS + 0.1


def test_a_fresh_loop_writes_a_small_job_at_once() -> None:
    time = Time()
    pacer = WritePacer(monotonic=time, sleep=time.sleep)
    # 1,000 items in batches of 25, as four 250-row messages write them
    for _ in range(40):
        pacer.acquire(25)
        pacer.succeeded(25)
    assert time.now == 0.0
    # The burst spent, the next batch waits its turn at the (slow-start) rate
    pacer.acquire(25)
    assert time.now == pytest.approx(25 / pacing.START_RATE, abs=0.06)


def test_a_throttled_burst_pauses_the_loop_and_keeps_its_rate_and_slow_start() -> None:
    time = Time()
    pacer = WritePacer(start_rate=100, monotonic=time, sleep=time.sleep)
    for _ in range(8):
        pacer.acquire(25)  # eight writer threads' first batches, on the burst's credit
    for _ in range(8):
        pacer.throttled()  # a small table throttled them all
    assert (pacer.rate, pacer.slow_start, pacer.throttles) == (100, True, 8)
    pacer.acquire(25)
    # The burst is over: paused, then paced at the rate
    assert pacing.PAUSE_SECONDS <= time.now <= pacing.PAUSE_SECONDS + 25 / 100 + 0.06
    # A throttle of a paced request a second later is slow start's end, as without a burst
    time.now += pacing.COOL_DOWN_SECONDS
    pacer.acquire(25)
    pacer.throttled()
    assert pacer.rate == pytest.approx(100 * pacing.FIRST_DECREASE)
    assert not pacer.slow_start


def test_a_loop_idle_long_enough_bursts_again() -> None:
    time = Time()
    pacer = WritePacer(start_rate=100, burst=500, monotonic=time, sleep=time.sleep)
    pacer.throttled()  # the rate is 50 and the bucket empty
    # A loop between jobs, throttled less than a minute ago: no burst
    time.now += pacing.THROTTLED_RECENTLY_SECONDS / 2
    pacer.acquire(25)
    pacer.acquire(25)
    assert time.now > pacing.THROTTLED_RECENTLY_SECONDS / 2
    # Idle again, and not throttled for longer: it may burst again
    time.now += pacing.THROTTLED_RECENTLY_SECONDS
    began = time.now
    for _ in range(20):
        pacer.acquire(25)
    assert time.now == began
    pacer.acquire(25)
    assert time.now > began


def test_slow_start_goes_on_from_the_rate_a_burst_was_written_at() -> None:
    time = Time()
    pacer = WritePacer(monotonic=time, sleep=time.sleep)
    for _ in range(40):  # 1,000 items written in 0.8 s: 1,250 a second
        pacer.acquire(25)
        time.now += 0.02
        pacer.succeeded(25)
    pacer.acquire(25)
    assert pacer.slow_start
    assert pacer.rate == pytest.approx(1250, rel=0.05)
