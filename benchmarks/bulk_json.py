"""POST /links/bulk on the local stack: time per call of 1,000 links, AWS requests and DynamoDB
write units per 1,000 links.

    python -m benchmarks bulk_json [--links 1000] [--calls 3] [--find-if-exists true]

Starts its own local stack (as `python -m benchmarks bulk` does: no persistence, moto's request
recorder on), then makes --calls calls of --links new links each, timed from the request until the
answer is read, and records every AWS request of the last call at the moto server. Requests and
write units are counted as benchmarks/bulk.py counts them (write units from the recorded request
bodies with DynamoDB's item-size rules; the ByOwner index's apart). The links of a call are
distinct new URLs, so every one is a new link (find-if-exists looks each up, and claims it).
"""

import argparse
import json
import os
import statistics
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.bulk import ByOwnerIndexes, LocalStack, _write_units
from local_stack.embedded import request_log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=1000, help="links per call (at most 1,000)")
    parser.add_argument("--calls", type=int, default=3, help="timed calls (the median is printed)")
    parser.add_argument("--find-if-exists", choices=["true", "false"], default="true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bulk-json-") as folder:
        stack = LocalStack(Path(folder), 1.0, {"FindIfExists": options.find_if_exists})
        try:
            seconds = []
            for call in range(options.calls):
                last = call == options.calls - 1
                if last:
                    stack.recorder("reset-recording")
                    stack.recorder("start-recording")
                seconds.append(post_links(stack, options.links, f"call{call}"))
                if last:
                    stack.recorder("stop-recording")
            counted = count(stack)
        finally:
            stack.stop()
    print_figures(options, seconds, counted)


def post_links(stack: LocalStack, links: int, prefix: str) -> float:
    body = json.dumps({"links": [{"url": f"https://shop.example.com/{prefix}/{n}"} for n in range(links)]})
    request = urllib.request.Request(
        stack.api_url + "links/bulk",
        data=body.encode(),
        headers={"Content-Type": "application/json", **stack.key_header},
        method="POST",
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=120) as response:
        outcomes = json.loads(response.read())["links"]
    elapsed = time.monotonic() - started
    statuses = Counter(outcome["status"] for outcome in outcomes)
    if statuses != Counter({201: links}):
        raise RuntimeError(f"expected {links} new links, got {dict(statuses)}")
    return elapsed


def count(stack: LocalStack) -> dict[str, Any]:
    tables = {stack.info["resources"][name]: name for name in ("LinksTable", "JobsTable", "KeysTable")}
    resources = stack.info["resources"]
    indexes = ByOwnerIndexes({resources["LinksTable"]: ("list_pk", "list_sk")})
    by_operation: Counter[str] = Counter()
    units: Counter[str] = Counter()
    for request in request_log.read_recording(stack.recording):
        if not request.by_function:
            continue  # the local stack's own alarm evaluation
        by_operation[request.name] += 1
        if request.service == "dynamodb":
            for table, table_units in _write_units(request.operation, request.body):
                units[tables.get(table, table)] += table_units
            for table, index_units in indexes.write_units(request.operation, request.body):
                units[tables.get(table, table) + " index"] += index_units
    return {"by_operation": by_operation, "units": units}


def print_figures(options: argparse.Namespace, seconds: list[float], counted: dict[str, Any]) -> None:
    links = options.links
    per_thousand = 1000 / links
    by_operation: Counter[str] = counted["by_operation"]
    total = sum(by_operation.values())
    print(
        f"POST /links/bulk on the local stack ({links:,} new links a call, find-if-exists "
        f"{options.find_if_exists}, {os.cpu_count()} CPUs)"
    )
    print(
        f"  time per call: median {statistics.median(seconds):.2f} s of {len(seconds)} "
        f"({', '.join(f'{s:.2f}' for s in seconds)})"
    )
    print(
        f"  AWS requests of one call: {total:,} = {total * per_thousand:.1f} per 1,000 links "
        "(every request the call made)"
    )
    for operation, number in by_operation.most_common():
        print(f"    {operation:<40} {number:>6,}")
    links_units = counted["units"].get("LinksTable", 0)
    index_units = counted["units"].get("LinksTable index", 0)
    print(
        f"  write units, links table: {links_units:,} = {links_units * per_thousand:,.0f} per 1,000 links; "
        f"its ByOwner index: {index_units:,}"
    )


if __name__ == "__main__":
    main()
