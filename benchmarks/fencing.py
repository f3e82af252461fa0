"""Fencing under duplicated deliveries: scaling runs on the local stack with the fault
``duplicate-async=P`` (each asynchronous Lambda invocation delivered a second time with probability
P), printing invocations per loop token over time and checking that none ever ran twice.

    python -m benchmarks fencing [--waves 4] [--jobs 8] [--rows 500] [--duplicate 0.2]

Each wave uploads --jobs CSVs of --rows rows at once, once the wave before is done and the loops
are back at MinLoops, so the loops scale 1 -> MaxLoops -> 1 once per wave: every scale-out starts
loops (an asynchronous invoke each) and every scale-in deletes tokens under running loops.

What it watches, from outside the functions:
- the tokens table, scanned every --interval seconds: each token's loop id, ``seq`` (the sequence
  number an invocation claimed) and ``holder`` (that invocation's nonce). For every (token, loop
  id, seq) it collects the holders ever seen: two invocations running one sequence number would
  both rewrite ``holder`` with each heartbeat, so a scan between their writes sees the second.
  Scans are samples: two such writes that both land between two scans show as one. With the
  heartbeat's condition reduced to the loop id (fencing off), a run saw 2 holders on 4 of them;
- the stack's log: each ``duplicate delivery of Event ...`` line the fault writes, and each
  poller stop "Token deleted, taken over or held by another invocation; this loop stops" with
  ``claimed=false`` (an invocation stopped at its first heartbeat, before it received anything):
  on a sequence number the next scan shows held (it lost to the other delivery), or on a token
  scale-in deleted;
- each job's results CSV at the end: one line per row, each with a code or an error.

A loop invocation normally polls for the poller's timeout (300 s) less its 30 s re-invoke margin,
so a run of minutes would re-invoke each loop about once. The stack here runs a copy of the
template whose poller has REINVOKE_MARGIN_SECONDS set so that each invocation polls for
--invocation-seconds: every loop then re-invokes itself (an asynchronous event the fault may
duplicate) many times within the run. Nothing else in the template changes.

Exits 1 when an invariant breaks: a (token, loop id, seq) seen with two holders, more tokens than
MaxLoops, fewer first-heartbeat stops than duplicated poller events, a job not done, or a row
without exactly one outcome.
"""

import argparse
import csv
import io
import re
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.loop_count import ROOT, ScalingRun, StackProbe, local_stack, wait_for_minimum

POLLER_ENV_ANCHOR = "          POWERTOOLS_SERVICE_NAME: poller\n"
POLLER_TIMEOUT_SECONDS = 300  # template.yaml, PollerFunction.Timeout
STOP_MESSAGE = "Token deleted, taken over or held by another invocation; this loop stops"
_LOG_LINE = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{3}) (\w+)\s+(\S+)\s+(.*)$")
_DUPLICATE = re.compile(r"duplicate delivery of Event (\S+) to (\S+) \(fault duplicate-async, ([^)]*)\)")
_EXTRA = re.compile(r"(\w+)=(\S+)")


@dataclass(frozen=True)
class Stop:
    """A poller invocation that stopped on its heartbeat (from the log)."""

    elapsed: float
    token: str
    seq: int
    claimed: bool


@dataclass
class LogWatch:
    """Follows the stack's log file: duplicate deliveries and the pollers' fenced stops."""

    path: Path
    poller_name: str
    wall_start: float  # time.time() when the run's clock started
    offset: int = 0
    partial: str = ""
    duplicates: Counter[str] = field(default_factory=Counter)  # by function name
    poller_duplicates: Counter[str] = field(default_factory=Counter)  # by "in parallel" / "later"
    stops: list[Stop] = field(default_factory=list)

    def read(self) -> None:
        """Take in the lines written since the last read."""
        with self.path.open("rb") as log:
            log.seek(self.offset)
            chunk = log.read()
        self.offset += len(chunk)
        *lines, self.partial = (self.partial + chunk.decode("utf-8", errors="replace")).split("\n")
        for line in lines:
            self._line(line)

    @property
    def poller_duplicate_count(self) -> int:
        return sum(self.poller_duplicates.values())

    @property
    def fenced(self) -> list[Stop]:
        """Stops at the first heartbeat: nothing claimed, nothing received."""
        return [stop for stop in self.stops if not stop.claimed]

    def _line(self, line: str) -> None:
        parsed = _LOG_LINE.match(line)
        if parsed is None:
            return
        message = parsed.group(7)
        if (duplicate := _DUPLICATE.search(message)) is not None:
            function = duplicate.group(2)
            self.duplicates[function] += 1
            if function == self.poller_name:
                self.poller_duplicates["in parallel" if duplicate.group(3) == "in parallel" else "later"] += 1
        elif message.startswith(STOP_MESSAGE):
            extras = dict(_EXTRA.findall(message.removeprefix(STOP_MESSAGE)))
            self.stops.append(
                Stop(
                    elapsed=self._elapsed(parsed),
                    token=extras.get("token", "?"),
                    seq=int(extras.get("seq", "-1")),
                    claimed=extras.get("claimed") == "true",
                )
            )

    def _elapsed(self, parsed: re.Match[str]) -> float:
        # The stack's log has the local time of day (logging's asctime), to the millisecond.
        hours, minutes, seconds, millis = (int(parsed.group(index)) for index in range(1, 5))
        of_day = hours * 3600 + minutes * 60 + seconds + millis / 1000
        start = time.localtime(self.wall_start)
        start_of_day = start.tm_hour * 3600 + start.tm_min * 60 + start.tm_sec + self.wall_start % 1
        return (of_day - start_of_day) % 86400


@dataclass
class TokenWatch:
    """What the tokens table showed: the holders of each (token, loop id, seq), the most loops,
    and each scan's (loop id, seq) per token by elapsed time."""

    holders: defaultdict[tuple[str, str, int], set[str]] = field(default_factory=lambda: defaultdict(set))
    max_loops: int = 0
    scans: list[tuple[float, dict[str, tuple[str, int]]]] = field(default_factory=list)

    def sample(self, probe: StackProbe, elapsed: float) -> dict[str, tuple[str, int]]:
        """Scan the table once; each token's (loop id, seq)."""
        rows = probe.tokens()
        self.max_loops = max(self.max_loops, len(rows))
        current: dict[str, tuple[str, int]] = {}
        for row in rows:
            key = (str(row["token"]), str(row["loop_id"]), int(row.get("seq", 0)))
            if row.get("holder"):
                self.holders[key].add(str(row["holder"]))
            current[key[0]] = key[1:]
        self.scans.append((elapsed, current))
        return current

    def held_when_stopped(self, stop: Stop) -> bool:
        """Whether the first scan after ``stop`` still had its token at its sequence number or
        later: the invocation lost its sequence number to another one (a duplicate delivery), as
        opposed to finding its token deleted by scale-in (gone, or created again from 0)."""
        after = next((current for elapsed, current in self.scans if elapsed >= stop.elapsed), None)
        if after is None or stop.token not in after:
            return False
        return after[stop.token][1] >= stop.seq

    @property
    def max_holders(self) -> int:
        return max((len(found) for found in self.holders.values()), default=0)


def fast_loop_template(directory: Path, invocation_seconds: int) -> Path:
    """A copy of template.yaml whose poller invocations poll for ``invocation_seconds`` (its
    re-invoke margin raised to match), beside links to the code it names (CodeUri and ContentUri
    are relative to the template)."""
    text = (ROOT / "template.yaml").read_text(encoding="utf-8")
    if text.count(POLLER_ENV_ANCHOR) != 1:
        raise RuntimeError(f"template.yaml no longer has one {POLLER_ENV_ANCHOR.strip()!r} line to extend")
    margin = POLLER_TIMEOUT_SECONDS - invocation_seconds
    text = text.replace(
        POLLER_ENV_ANCHOR, POLLER_ENV_ANCHOR + f'          REINVOKE_MARGIN_SECONDS: "{margin}"\n'
    )
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name != "template.yaml":
            (directory / entry.name).symlink_to(entry)
    template = directory / "template.yaml"
    template.write_text(text, encoding="utf-8")
    return template


def outcomes(results: str, rows: int) -> int:
    """How many of a job's ``rows`` input rows have exactly one outcome in its results CSV: one
    line, with a code or an error (not both). 0 when the CSV has lines for other rows too."""
    lines = list(csv.DictReader(io.StringIO(results)))
    per_row = Counter(line["row"] for line in lines)
    if len(per_row) > rows:
        return 0
    return sum(per_row[line["row"]] == 1 and bool(line["code"]) != bool(line["error"]) for line in lines)


class Table:
    """The printed table: a line when the loops, their sequence numbers or the counts moved (at
    most one per ``every`` seconds; at least one per 10 s)."""

    def __init__(self, slots: list[str], every: float) -> None:
        self.slots = slots
        self.every = every
        self._last: tuple[object, ...] = ()
        self._printed = -1e9

    def header(self) -> None:
        print("each slot: seq:holders (its row's sequence number : invocations ever seen holding it)")
        print(
            "dup: poller events delivered twice; fenced: poller stops at the first heartbeat (claimed=false)"
        )
        slots = " ".join(f"{slot:>8}" for slot in self.slots)
        print(f"{'elapsed':>8} {'loops':>5}  {slots}  {'dup':>4} {'fenced':>6}")

    def sample(
        self, elapsed: float, current: dict[str, tuple[str, int]], tokens: TokenWatch, logs: LogWatch
    ) -> None:
        """One scan's line, if it is time for one."""
        cells = [
            f"{current[slot][1]}:{len(tokens.holders.get((slot, *current[slot]), ()))}"
            if slot in current
            else "-"
            for slot in self.slots
        ]
        line = (len(current), *cells, logs.poller_duplicate_count, len(logs.fenced))
        since = elapsed - self._printed
        if (line != self._last and since >= self.every) or since >= 10:
            slots = " ".join(f"{cell:>8}" for cell in cells)
            print(
                f"{elapsed:7.1f}s {len(current):5d}  {slots}  "
                f"{logs.poller_duplicate_count:4d} {len(logs.fenced):6d}",
                flush=True,
            )
            self._last, self._printed = line, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--waves", type=int, default=4, help="backlogs uploaded one after the other")
    parser.add_argument("--jobs", type=int, default=8, help="CSV uploads of one wave, sent at once")
    parser.add_argument("--rows", type=int, default=500, help="rows per uploaded CSV")
    parser.add_argument("--duplicate", type=float, default=0.2, help="the duplicate-async probability")
    parser.add_argument("--time-scale", type=float, default=30.0, help="speed-up of alarms and schedules")
    parser.add_argument("--max-loops", type=int, default=5)
    parser.add_argument(
        "--invocation-seconds", type=int, default=8, help="how long one loop invocation polls"
    )
    parser.add_argument(
        "--interval", type=float, default=0.5, help="seconds between scans of the tokens table"
    )
    parser.add_argument(
        "--print-every", type=float, default=2.0, help="seconds between printed lines at most"
    )
    parser.add_argument(
        "--timeout", type=float, default=170.0, help="give up this many seconds after the first upload"
    )
    parser.add_argument("--log", type=Path, default=Path(tempfile.gettempdir()) / "fencing-stack.log")
    options = parser.parse_args()

    # A SIGTERM (timeout, CI) unwinds like Ctrl-C, so the stack below is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run = ScalingRun(min_loops=1, max_loops=options.max_loops)
    fault = f"duplicate-async={options.duplicate:g}"
    print(
        f"local stack: --fault {fault}, time scale {options.time_scale:g}, MinLoops {run.min_loops}, "
        f"MaxLoops {run.max_loops}, loop invocations of {options.invocation_seconds} s; log in {options.log}"
    )
    print(
        f"{options.waves} waves of {options.jobs} jobs x {options.rows} rows, each uploaded once the one "
        f"before is done and the loops are back at {run.min_loops}"
    )
    with (
        tempfile.TemporaryDirectory(prefix="fencing-template-") as directory,
        local_stack(
            run,
            options.time_scale,
            options.log,
            faults=[fault],
            template=fast_loop_template(Path(directory), options.invocation_seconds),
        ) as info,
    ):
        probe = StackProbe(info)
        wait_for_minimum(probe, run, options.timeout)
        started = time.monotonic()
        logs = LogWatch(options.log, str(info["resources"]["PollerFunction"]), time.time())
        tokens = TokenWatch()
        table = Table([f"slot-{number:03d}" for number in range(run.max_loops)], options.print_every)
        table.header()
        job_ids: list[str] = []
        wave: list[str] = []
        done_checked = -1e9
        # Once the last wave is done: the loops scale-in removed end within one invocation, and a
        # duplicate delivered in the last moments stops at its first heartbeat; watch until then.
        finish_at: float | None = None
        while True:
            elapsed = time.monotonic() - started
            current = tokens.sample(probe, elapsed)
            logs.read()
            table.sample(elapsed, current, tokens, logs)
            if finish_at is not None:
                unfenced = len(logs.fenced) < logs.poller_duplicate_count
                if elapsed >= finish_at + (15 if unfenced else 0):
                    break
            elif elapsed > options.timeout:
                break
            # Jobs are read through the API (a request each): only once the loops are back down.
            elif len(current) == run.min_loops and elapsed - done_checked >= 2:
                done_checked = elapsed
                if all(probe.job(job_id)["status"] == "done" for job_id in wave):
                    if len(job_ids) == options.waves * options.jobs:
                        finish_at = elapsed + options.invocation_seconds + 2
                        continue
                    number = len(job_ids) // options.jobs
                    wave = [
                        probe.upload(options.rows, tag=f"fencing/{number}/{job}")["job_id"]
                        for job in range(options.jobs)
                    ]
                    job_ids += wave
                    print(
                        f"{elapsed:7.1f}s wave {number + 1}: "
                        f"uploaded {options.jobs} jobs of {options.rows} rows"
                    )
            time.sleep(max(0.0, started + elapsed + options.interval - time.monotonic()))
        jobs_done = sum(probe.job(job_id)["status"] == "done" for job_id in job_ids)
        one_outcome = sum(outcomes(probe.results(job_id), options.rows) for job_id in job_ids)
    elapsed = time.monotonic() - started

    jobs, rows = len(job_ids), len(job_ids) * options.rows
    fenced = logs.fenced
    fenced_on_held = sum(tokens.held_when_stopped(stop) for stop in fenced)
    others = {name: count for name, count in logs.duplicates.items() if name != logs.poller_name}
    print()
    print(f"run: {elapsed:.0f} s from the first upload, {len(tokens.scans)} scans of the tokens table")
    print(
        f"duplicate deliveries injected: {sum(logs.duplicates.values())}; of poller events "
        f"{logs.poller_duplicate_count} {dict(logs.poller_duplicates)}; of others {others}"
    )
    print(
        f"poller invocations stopped at their first heartbeat (claimed=false): {len(fenced)}; "
        f"{fenced_on_held} on a sequence number another invocation held, "
        f"{len(fenced) - fenced_on_held} on a token deleted by scale-in"
    )
    print(
        "poller invocations stopped after claiming (token deleted by scale-in): "
        f"{len(logs.stops) - len(fenced)}"
    )
    print(
        f"(token, loop id, seq) claimed: {len(tokens.holders)}; "
        f"most invocations seen holding one: {tokens.max_holders}"
    )
    print(f"most loops (token rows) at once: {tokens.max_loops} (MaxLoops {run.max_loops})")
    print(f"jobs done: {jobs_done}/{jobs}; rows with exactly one outcome: {one_outcome}/{rows}")

    broken = [
        problem
        for problem, failed in (
            ("a sequence number held by two invocations", tokens.max_holders > 1),
            ("more loops than MaxLoops", tokens.max_loops > run.max_loops),
            ("a duplicated poller event not fenced", len(fenced) < logs.poller_duplicate_count),
            ("not every wave uploaded in time", jobs < options.waves * options.jobs),
            ("a job not done", jobs_done < jobs),
            ("a row without exactly one outcome", one_outcome < rows),
        )
        if failed
    ]
    print("invariants: " + ("held" if not broken else "BROKEN: " + "; ".join(broken)))
    if broken:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
