"""How long a loop's write pacer holds back a job's writes, on a fake clock: three jobs of --rows
rows, --gap seconds apart, from a fresh loop (a new container), then one job of --large-rows from
another fresh loop; one writer sending 25-item batches that the table writes at --write-rate items
a second and never throttles. What is left above rows / write-rate is the pacer's doing.

    python -m benchmarks pacer_start [--rows 1000] [--gap 30] [--write-rate 2500] [--large-rows 5000]
"""

import argparse

from shortener.loops.pacing import WritePacer

BATCH = 25


class FakeClock:
    """A monotonic clock that sleeping and writing move."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def write(pacer: WritePacer, clock: FakeClock, rows: int, write_rate: float) -> float:
    """Seconds to write ``rows`` through ``pacer``."""
    began = clock.now
    for _ in range(rows // BATCH):
        pacer.acquire(BATCH)
        clock.now += BATCH / write_rate
        pacer.succeeded(BATCH)
    return clock.now - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000, help="rows of each small job")
    parser.add_argument("--gap", type=float, default=30, help="seconds between the small jobs")
    parser.add_argument("--write-rate", type=float, default=2500, help="items the table writes a second")
    parser.add_argument("--large-rows", type=int, default=5000, help="rows of the large job")
    options = parser.parse_args()
    clock = FakeClock()
    pacer = WritePacer(monotonic=clock, sleep=clock.sleep)
    times = []
    for number in range(3):
        if number:
            clock.now += options.gap
        times.append(write(pacer, clock, options.rows, options.write_rate))
    alone = options.rows / options.write_rate
    print(
        f"{options.rows:,}-row jobs {options.gap:g} s apart from a fresh loop: "
        + ", ".join(f"{seconds:.2f} s" for seconds in times)
        + f" (the writes alone: {alone:.2f} s)"
    )
    clock = FakeClock()
    pacer = WritePacer(monotonic=clock, sleep=clock.sleep)
    large = write(pacer, clock, options.large_rows, options.write_rate)
    print(
        f"a fresh loop's {options.large_rows:,} rows: {large:.2f} s (the writes alone: "
        f"{options.large_rows / options.write_rate:.2f} s), its rate then {pacer.rate:,.0f} items a second"
    )


if __name__ == "__main__":
    main()
