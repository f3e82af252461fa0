"""A job's QR labels ZIP: time, size and peak memory of building it for a job of N rows, through
the builder's own code (shortener.logic.labels.label_zip_blocks: an image drawn per row, the
archive handed out in blocks as it grows). The blocks go to a counting sink instead of S3's
multipart upload, which adds one part buffer (shortener.dal.files.MIN_PART_BYTES) on a Lambda.

    python -m benchmarks qr_labels [--rows 10000 100000] [--format png|svg]

Each size runs in a fresh process, so its peak resident memory is the build's own; flat memory
means the same peak whatever the number of rows."""

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from shortener.logic.labels import label_zip_blocks, row_width
from shortener.models.jobs import RowOutcome

ROOT = Path(__file__).resolve().parent.parent


def rows(count: int) -> Iterator[RowOutcome]:
    """A job's outcomes as its chunks give them: four-character codes, every 50th row an error."""
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    for n in range(1, count + 1):
        code = "".join(alphabet[(n * 7919 // 62**i) % 62] for i in range(4))
        yield RowOutcome(row=n, url=f"https://shop.example/{n}", code="" if n % 50 == 0 else code)


def one(count: int, image_format: str) -> dict[str, float]:
    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started, cpu_started = time.perf_counter(), time.process_time()
    size = 0
    for block in label_zip_blocks(rows(count), "https://sho.rt/", image_format, width=row_width(count)):  # type: ignore[arg-type]
        size += len(block)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "rows": count,
        "bytes": size,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "start_mb": start_rss / 1024,
        "peak_mb": peak / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--format", choices=("png", "svg"), default="png")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        print(json.dumps(one(options.one, options.format)))
        return
    # CPU seconds say what the build costs whatever else the machine runs; wall seconds, what it took.
    print(f"rows       ZIP ({options.format})   CPU s   wall s   rows/CPU s   peak memory (start -> peak)")
    for count in options.rows:
        answer = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks",
                "qr_labels",
                "--one",
                str(count),
                "--format",
                options.format,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        found = json.loads(answer.stdout.strip().splitlines()[-1])
        print(
            f"{count:>9,}  {found['bytes'] / 1e6:>7.1f} MB  {found['cpu_seconds']:>6.0f}  "
            f"{found['seconds']:>7.0f}  "
            f"{count / found['cpu_seconds']:>10,.0f}   {found['start_mb']:.0f} -> {found['peak_mb']:.0f} MB",
            flush=True,
        )
