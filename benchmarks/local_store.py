"""The local stack's DynamoDB at scale: the time of `GET /links?limit=10` and `GET /jobs?limit=10`
with N links in the links table.

    python -m benchmarks local_store [--links 1000000] [--rounds 5]

A local stack subprocess (`python -m local_stack`, its durable state in a fresh folder) gets one link
with its admin key (`POST /`, which names the key's owner), then N links of that owner by BatchWriteItem
straight into its embedded AWS (4 writers), shaped as the API writes them (the ByOwner index keys
included). Each GET is then timed --rounds times (median and max printed), with the links table's
item count; then the stack is stopped and started again in the same folder (the stop's and the
start's time to READY printed) and both GETs are timed again. Both GETs are index Queries: before
the embedded AWS's sorted index (docs/capacity.md) each walked every item of its table.
"""

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.persistence import BATCH, START_TIMEOUT, STOP_TIMEOUT, _reported, _Stack, timed
from shortener.links.model import Link
from shortener.links.store_items import link_to_item


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=1_000_000, help="links written into the table")
    parser.add_argument("--rounds", type=int, default=5, help="timed GETs of each (median taken)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        stack = _Stack(
            [
                *("--api-port", "0", "--aws-port", "0", "--log-level", "WARNING"),
                "--data-dir",
                str(Path(folder)),
            ],
            Path(folder) / "stack.log",
        )
        stack.start(START_TIMEOUT)
        try:
            owner = _owner(stack)
            started = time.perf_counter()
            _fill(stack, owner, options.links)
            print(f"filled {options.links:,} links in {time.perf_counter() - started:.1f} s", flush=True)
            count = _count(stack)
            listed = _request(stack, "GET", "/links?limit=10")["links"]
            if len(listed) != min(10, count):
                raise RuntimeError(f"GET /links?limit=10 listed {len(listed)} links of {count}")
            _time_gets(stack, options.rounds, count)
            # A restart holding them: a clean stop (the snapshot), then a start to READY.
            stopped = timed(stack.stop, STOP_TIMEOUT)
            saved = _reported(stack.log(), r"Saved (\d+) items .* in ([\d.]+) s")
            started_in = timed(stack.start, START_TIMEOUT)
            restored = _reported(stack.log(), r"restored (\d+) items, \d+ messages in ([\d.]+) s")
            print(
                f"restart: stop {stopped:.1f} s (saving {saved[0]} items took {saved[1]} s), "
                f"start to READY {started_in:.1f} s (restoring {restored[0]} items took {restored[1]} s)"
            )
            first = _get(stack, "/links?limit=10")
            print(f"after the restart: first GET /links?limit=10 {first * 1000:.0f} ms")
            _time_gets(stack, options.rounds, count)
        finally:
            stack.stop(STOP_TIMEOUT)


def _request(stack: _Stack, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        stack.info["api_url"].rstrip("/") + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"X-Api-Key": str(stack.info["api_key"]), "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read() or b"null")


def _owner(stack: _Stack) -> str:
    """The admin key's owner, as the API records it on a link."""
    created = _request(stack, "POST", "/", {"url": "https://example.com/bench"})
    item = stack.boto3_client("dynamodb").get_item(
        TableName=stack.resources["LinksTable"], Key={"code": {"S": created["code"]}}
    )["Item"]
    return str(item["owner"]["S"])


def _fill(stack: _Stack, owner: str, count: int, writers: int = 4) -> None:
    table = stack.resources["LinksTable"]
    epoch = datetime(2026, 1, 1, tzinfo=UTC)

    def write(starts: list[int]) -> None:
        dynamodb = stack.boto3_client("dynamodb")
        for start in starts:
            requests = [
                {
                    "PutRequest": {
                        "Item": link_to_item(
                            Link(
                                code=f"b{number:08d}",
                                url=f"https://shop.example.com/p/{number}",
                                created_at=epoch + timedelta(seconds=number),
                                owner=owner,
                            )
                        )
                    }
                }
                for number in range(start, min(start + BATCH, count))
            ]
            pending: dict[str, Any] = {table: requests}
            while pending:
                pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}

    starts = list(range(0, count, BATCH))
    with ThreadPoolExecutor(max_workers=writers) as pool:
        list(pool.map(write, [starts[writer::writers] for writer in range(writers)]))


def _count(stack: _Stack) -> int:
    """The links table's items, as DescribeTable's ItemCount (exact in the embedded AWS; AWS
    updates it about every six hours). Not a Scan with Select=COUNT: moto walks the table from
    its start on every page, so counting a million items that way takes longer than the fill."""
    table = stack.boto3_client("dynamodb").describe_table(TableName=stack.resources["LinksTable"])
    return int(table["Table"]["ItemCount"])


def _time_gets(stack: _Stack, rounds: int, count: int) -> None:
    for path in ("/links?limit=10", "/jobs?limit=10"):
        times = [_get(stack, path) for _ in range(rounds)]
        print(
            f"GET {path}: median {statistics.median(times) * 1000:.0f} ms, "
            f"max {max(times) * 1000:.0f} ms ({count:,} items in the links table)",
            flush=True,
        )


def _get(stack: _Stack, path: str) -> float:
    started = time.perf_counter()
    _request(stack, "GET", path)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
