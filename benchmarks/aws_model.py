"""A model of a bulk job's time on AWS, stage by stage (split, loops, table), from figures measured
here and AWS's documented limits; it names the bottleneck at each size.

    make bench ARGS="aws_model"            # 1M, 10M and 60M rows, fresh and pre-warmed table
    make bench ARGS="aws_model --max-loops 20 --warm 40000"

Measured on this machine (in process, no network):
- the loop's CPU per row: the real ChunkProcessor over botocore with DynamoDB answered in process
  (benchmarks/cpu.py), and the DynamoDB requests it makes per row;
- the splitter's CPU per row: the real CSV reader and message packer over a generated file, and
  the messages' JSON as they are sent.

AWS's limits used:
- Lambda gives a function CPU in proportion to its memory, one vCPU at 1,769 MB
  (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html); the poller and the
  files function have 1,024 MB (template.yaml). The splitter is one invocation at a time; the
  loops are MaxLoops at most. A Lambda vCPU is taken to be as fast as one core here.
- The links table (docs/capacity.md): a fresh on-demand table takes 4,000 write units a second
  and twice a peak it has held, 30 minutes later; pre-warmed (BulkWriteThroughput) it takes the
  warm throughput at once; 40,000 is the per-table quota. A bulk URL is one write unit to the
  table and one to the ByOwner index, whose LIST_SHARDS (8) shards per owner take 1,000 each: one
  owner's job writes at most 8,000 index units a second, however warm the table.
"""

import argparse
import time

from benchmarks import cpu
from shortener.jobs.csv_reader import parse_csv
from shortener.jobs.packing import pack_rows
from shortener.links.store_items import LIST_SHARDS

SIZES = (1_000_000, 10_000_000, 60_000_000)
LAMBDA_MB_PER_VCPU = 1_769
POLLER_MB = FILES_MB = 1_024
FRESH_WRITE_UNITS = 4_000.0
TABLE_QUOTA = 40_000.0
PARTITION_WRITE_UNITS = 1_000.0
OWNER_SHARDS = LIST_SHARDS
GROWTH_SECONDS = 30 * 60.0
ROWS_PER_MESSAGE = 250
# What the model shows if the ByOwner index spread one owner over this many shards instead.
MANY_SHARDS = 40


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-loops", type=int, default=10, help="MaxLoops (the template's default: 10)")
    parser.add_argument(
        "--warm", type=float, default=TABLE_QUOTA, help="BulkWriteThroughput of the pre-warmed table"
    )
    parser.add_argument(
        "--sample-rows", type=int, default=50_000, help="rows the splitter's CPU is measured on"
    )
    options = parser.parse_args()

    loop_us, requests_per_row = loop_cpu()
    split_us = split_cpu(options.sample_rows)
    loop_vcpu = POLLER_MB / LAMBDA_MB_PER_VCPU
    split_vcpu = FILES_MB / LAMBDA_MB_PER_VCPU
    split_rate = split_vcpu / (split_us * 1e-6)
    loops_rate = options.max_loops * loop_vcpu / (loop_us * 1e-6)
    print(
        f"Measured here: the loop {loop_us:.0f} µs CPU per row ({requests_per_row:.3f} DynamoDB requests "
        f"per row), the splitter {split_us:.1f} µs per row."
    )
    shards = OWNER_SHARDS * PARTITION_WRITE_UNITS
    warm = min(options.warm, TABLE_QUOTA)
    print(
        f"On AWS: splitter {split_rate:,.0f} rows/s (1 x {split_vcpu:.2f} vCPU), loops "
        f"{loops_rate:,.0f} rows/s ({options.max_loops} x {loop_vcpu:.2f} vCPU); one owner's index "
        f"shards {shards:,.0f} rows/s; table fresh from {FRESH_WRITE_UNITS:,.0f} rows/s, "
        f"pre-warmed {warm:,.0f}."
    )
    print()
    print(f"{'rows':>12} {'table':>22} {'split':>9} {'loops':>9} {'table':>9}  bottleneck")
    variants = (
        ("fresh", FRESH_WRITE_UNITS, OWNER_SHARDS),
        ("pre-warmed", warm, OWNER_SHARDS),
        (f"pre-warmed, {MANY_SHARDS} shards", warm, MANY_SHARDS),
    )
    for rows in SIZES:
        for label, ceiling, owner_shards in variants:
            split_s = rows / split_rate
            loops_s = rows / loops_rate
            table_s, table_limit = table_seconds(rows, ceiling, owner_shards)
            stages = {"split": split_s, "loops": loops_s, table_limit: table_s}
            bottleneck = max(stages, key=lambda stage: stages[stage])
            print(
                f"{rows:>12,} {label:>22} {_duration(split_s):>9} {_duration(loops_s):>9} "
                f"{_duration(table_s):>9}  {bottleneck}"
            )


def table_seconds(rows: int, warm: float, owner_shards: int = OWNER_SHARDS) -> tuple[float, str]:
    """Seconds to write ``rows`` links (one write unit each to the table and to the index) and what
    limits it: the table's ceiling (growing to twice a held peak each 30 minutes, up to the quota)
    or one owner's index shards."""
    shards = owner_shards * PARTITION_WRITE_UNITS
    left, elapsed, ceiling = float(rows), 0.0, warm
    while True:
        rate = min(ceiling, shards, TABLE_QUOTA)
        if left <= rate * GROWTH_SECONDS or rate >= min(shards, TABLE_QUOTA):
            elapsed += left / rate
            table_rate = min(ceiling, TABLE_QUOTA)
            limit = (
                "table"
                if table_rate < shards
                else "index shards"
                if shards < table_rate
                else "table, index shards"
            )
            return elapsed, limit
        left -= rate * GROWTH_SECONDS
        elapsed += GROWTH_SECONDS
        ceiling = min(TABLE_QUOTA, 2 * ceiling)


def loop_cpu() -> tuple[float, float]:
    """The loop's CPU µs per row, and DynamoDB requests per row (benchmarks/cpu.py)."""
    cpu._offline_credentials()
    dynamodb = cpu.FakeDynamoDB(first_id=5_000_000)
    dynamodb.install()
    messages = 40
    cpu.measure(dynamodb, 4, ROWS_PER_MESSAGE, find_if_exists=False)  # warm-up
    before = sum(dynamodb.requests.values())
    runs = [cpu.measure(dynamodb, messages, ROWS_PER_MESSAGE, find_if_exists=False) for _ in range(3)]
    made = sum(dynamodb.requests.values()) - before
    return sorted(runs)[1], made / (3 * (messages + 1) * ROWS_PER_MESSAGE)


def split_cpu(rows: int) -> float:
    """The splitter's CPU µs per row: reading CSV rows and packing them into message bodies."""
    text = "url,note\n" + "".join(
        f"https://shop{n % 97}.example.com/item/{n}?utm_source=mail&utm_campaign=c{n % 13},row {n}\n"
        for n in range(rows)
    )
    started = time.process_time()
    messages = pack_rows(
        "0" * 32,
        parse_csv(text, max_rows=rows + 1),
        own_host=None,
        max_rows=ROWS_PER_MESSAGE,
        max_bytes=200_000,
    )
    for message in messages:
        message.model_dump_json()
    return (time.process_time() - started) / rows * 1e6


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7_200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


if __name__ == "__main__":
    main()
