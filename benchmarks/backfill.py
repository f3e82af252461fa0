"""The tag index backfill over links made before the index: its time in process against moto, its
pages, and its read and write units.

    python -m benchmarks backfill [--links 100000] [--tagged 300]

Writes --links links of one owner into an in-process moto's links table as they were before the
tag index (the link's item alone), --tagged of them spread evenly with one tag; then runs the
backfill (shortener.links.backfill) to its end with no time bound, and again (which must write
nothing). Units by DynamoDB's rules (CapacityUnitCalculations.html in the Developer Guide): the
Scan reads the table's items, their sizes summed per page in 4 KB units, halved (eventually
consistent); each missing entry is looked up with a consistent BatchGetItem (1 unit each); a
transaction writes 2 units per item (the link's check and each entry, each under 1 KB), and each
entry enters ByOwner (1 unit). moto (with the local stack's fixes) is not DynamoDB: the time says
what the code costs here, not what a Scan page takes on AWS.
"""

import argparse
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=100_000, help="links made before the index")
    parser.add_argument("--tagged", type=int, default=300, help="of them, tagged")
    options = parser.parse_args()
    from moto import mock_aws

    from local_stack.patches import install_moto_fixes

    install_moto_fixes()  # as the local stack runs (a transaction copies only what it touches)
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        POWERTOOLS_TRACE_DISABLED="true",
    )
    os.environ.pop("AWS_ENDPOINT_URL", None)
    with mock_aws():
        figures = measure(options.links, options.tagged)
    for name, value in figures.items():
        print(f"{name}: {value}")


def measure(links: int, tagged: int) -> dict[str, Any]:
    import boto3

    from local_stack.cloudformation.template import create_table_arguments
    from shortener.aws_usage import item_size
    from shortener.links.backfill import run_backfill
    from shortener.links.model import Link
    from shortener.links.store_backfill import TagIndexBackfillStore
    from shortener.links.store_items import link_to_item

    client = boto3.client("dynamodb")
    table = "bench-links"
    client.create_table(**create_table_arguments("LinksTable", table))
    every = max(links // max(tagged, 1), 1)
    created = datetime(2026, 1, 1, tzinfo=UTC)
    started = time.monotonic()
    requests: list[Any] = []
    for n in range(links):
        tags = ("bench-tag",) if n % every == 0 and n // every < tagged else ()
        link = Link(
            code=f"b{n:07d}",
            url=f"https://shop.example.com/campaign/{n}",
            owner="bench",
            tags=tags,
            created_at=created + timedelta(seconds=n),
        )
        requests.append({"PutRequest": {"Item": link_to_item(link)}})
        if len(requests) == 25 or n == links - 1:
            client.batch_write_item(RequestItems={table: requests})
            requests = []
    written_in = time.monotonic() - started
    sizes = [item_size(item) for item in _every_item(client, table)]
    store = TagIndexBackfillStore(table)
    store.begin(datetime.now(UTC) - timedelta(hours=1))
    started = time.monotonic()
    first = run_backfill(store, 1e9)
    took = time.monotonic() - started
    started = time.monotonic()
    client.delete_item(TableName=table, Key={"code": {"S": "#migrations"}})
    store.begin(datetime.now(UTC) - timedelta(hours=1))
    again = run_backfill(store, 1e9)
    took_again = time.monotonic() - started
    # Pages are at most 1 MB: the read units of the whole scan, page by page.
    read_units = _scan_units(sizes)
    entries = first.entries_written
    lookups = sum(page.tagged_links for page in first.pages)
    return {
        "links (tagged)": f"{links:,} ({tagged:,})",
        "links written in": f"{written_in:.1f} s",
        "table bytes": f"{sum(sizes):,} ({sum(sizes) / max(len(sizes), 1):.0f} an item)",
        "backfill: time, pages": f"{took:.1f} s, {len(first.pages)}",
        "backfill: items read, entries written": f"{first.items_read:,}, {entries:,}",
        "read units: scan, entry lookups": f"{read_units:,.0f}, {lookups:,}",
        "write units (check + entry x 2, ByOwner 1)": f"{2 * (lookups + entries) + entries:,}",
        "second scan: time, entries written": f"{took_again:.1f} s, {again.entries_written}",
    }


def _every_item(client: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    start: dict[str, Any] = {}
    while True:
        page = client.scan(TableName=table, **start)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}


def _scan_units(sizes: list[int]) -> float:
    units, page = 0.0, 0
    for size in sizes:
        if page + size > 1024 * 1024:
            units += -(-page // 4096) / 2
            page = 0
        page += size
    return units + -(-page // 4096) / 2


if __name__ == "__main__":
    main()
