"""GET /links filtered at scale on the local stack: a search's time and read units, a tag filter's
and an old job's listing's time, and the write units of a bulk link.

    python -m benchmarks search [--links 100000] [--tagged 300] [--jobs 3]

Starts its own local stack (no persistence, moto's request recorder on), makes --jobs bulk jobs of
100 rows (POST /bulk, the oldest first), then --links links with POST /links/bulk (1,000 a call),
--tagged of them spread evenly with the tag "bench-tag" and the first one titled "Needle flyer",
and records the AWS requests of one of those calls for its write units (counted as
benchmarks/bulk_json.py counts them). Then, timed from the request until the answer is read:
- a search for the oldest link's title word in another letter case (it must read every link), and
  one for a word no link has (the same, and answers an empty page);
- the tag filter, its first page and every page followed to the end;
- GET /links?job_id= of the oldest job, every page followed to the end.
Read units: the bytes of the index items a listing read (the items DynamoDB returns before its
filter: all the owner's links for a search that reads to the end), in 4 KB units, halved for an
eventually consistent read (DynamoDB's read-unit rules, "Read consistency" and "Query" in the
Amazon DynamoDB Developer Guide: CapacityUnitCalculations.html).
"""

import argparse
import json
import os
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.bulk import LocalStack
from benchmarks.bulk_json import count
from shortener.aws_usage import item_size

TAG = "bench-tag"
CALL_LINKS = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=100_000, help="links made with POST /links/bulk")
    parser.add_argument("--tagged", type=int, default=300, help="of them, tagged bench-tag")
    parser.add_argument("--jobs", type=int, default=3, help="bulk jobs of 100 rows (the oldest is listed)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-search-") as folder:
        stack = LocalStack(Path(folder), 1.0, {})
        try:
            figures = measure(stack, options)
        finally:
            stack.stop()
    print_figures(options, figures)


def measure(stack: LocalStack, options: argparse.Namespace) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    jobs = [start_job(stack, 0)]
    stack.wait_until_done(jobs[0], 600)
    every = max(options.links // max(options.tagged, 1), 1)
    started, made = time.monotonic(), 0
    for call in range((options.links + CALL_LINKS - 1) // CALL_LINKS):
        links = []
        for n in range(min(CALL_LINKS, options.links - made)):
            index = made + n
            link: dict[str, Any] = {"url": f"https://shop.example.com/c{call}/item-{index}"}
            if index == 0:
                link["title"] = "Needle flyer"
            if index % every == every // 2 and index // every < options.tagged:
                link["tags"] = [TAG]
            links.append(link)
        recorded = call == 1
        if recorded:
            stack.recorder("reset-recording")
            stack.recorder("start-recording")
        request(stack, "POST", "links/bulk", {"links": links})
        if recorded:
            stack.recorder("stop-recording")
            figures["units"] = count(stack)["units"]
            figures["recorded_links"] = len(links)
        made += len(links)
        if call % 10 == 9:
            print(f"  [{time.strftime('%H:%M:%S')}] {made:,} links made", flush=True)
    figures["fill_seconds"] = time.monotonic() - started
    for job in range(1, options.jobs):
        jobs.append(
            stack.upload("url\n" + "".join(f"https://jobs.example/j{job}/{n}\n" for n in range(100)))[
                "job_id"
            ]
        )
        stack.wait_until_done(jobs[-1], 600)
    figures["search"] = timed(stack, {"q": "NEEDLE fl"})
    figures["search_none"] = timed(stack, {"q": "nosuchword"})
    figures["tag_first"] = timed(stack, {"tag": TAG})
    figures["tag_all"] = timed(stack, {"tag": TAG}, follow=True)
    figures["job_all"] = timed(stack, {"job_id": jobs[0]}, follow=True)
    figures["tag_batch"] = tag_batch(stack)
    figures["unfiltered"] = timed(stack, {})
    figures["index_bytes"] = index_bytes(stack)
    return figures


def start_job(stack: LocalStack, job: int) -> str:
    """A bulk job of 100 rows (POST /bulk), its id."""
    return str(
        stack.upload("url\n" + "".join(f"https://jobs.example/j{job}/{n}\n" for n in range(100)))["job_id"]
    )


def timed(stack: LocalStack, query: dict[str, str], *, follow: bool = False) -> dict[str, Any]:
    """Seconds, pages and links of GET /links with ``query`` (every page, with ``follow``)."""
    started, pages, links, cursor = time.monotonic(), 0, 0, None
    while True:
        page = request(
            stack,
            "GET",
            "links?" + urllib.parse.urlencode({**query, **({"cursor": cursor} if cursor else {})}),
        )
        pages, links = pages + 1, links + len(page["links"])
        cursor = page["next_cursor"]
        if not follow or cursor is None:
            return {"seconds": time.monotonic() - started, "pages": pages, "links": links}


def tag_batch(stack: LocalStack) -> dict[str, Any]:
    """Seconds from POST /links/batch (disable by the tag, the stack's admin key) to its end."""
    started = time.monotonic()
    batch = request(stack, "POST", "links/batch", {"action": "disable", "tag": TAG})
    while batch.get("status", "running") == "running":
        time.sleep(0.25)
        batch = request(stack, "GET", f"links/batch/{batch['batch_id']}")
    return {"seconds": time.monotonic() - started, "changed": batch["changed"], "status": batch["status"]}


def index_bytes(stack: LocalStack) -> int:
    """The size of every ByOwner index item of the stack's links table (all one owner's here)."""
    client = stack.client("dynamodb")
    table = stack.info["resources"]["LinksTable"]
    total = 0
    for page in client.get_paginator("scan").paginate(TableName=table, IndexName="ByOwner"):
        total += sum(item_size(item) for item in page["Items"])
    return total


def request(stack: LocalStack, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json", **stack.key_header}
    call = urllib.request.Request(stack.api_url + path, data=data, headers=headers, method=method)
    with urllib.request.urlopen(call, timeout=300) as answer:
        return json.loads(answer.read())


def print_figures(options: argparse.Namespace, figures: dict[str, Any]) -> None:
    links = options.links
    units = figures["units"]
    recorded = figures["recorded_links"]
    table, index = units.get("LinksTable", 0), units.get("LinksTable index", 0)
    read_units = figures["index_bytes"] / 4096 / 2
    print(f"GET /links filtered on the local stack ({links:,} links of one owner, {os.cpu_count()} CPUs)")
    print(f"  made in {figures['fill_seconds']:.0f} s with POST /links/bulk ({CALL_LINKS:,} a call)")
    print(
        f"  write units per bulk link: {(table + index) / recorded:.2f} "
        f"(links table {table / recorded:.2f}, ByOwner index {index / recorded:.2f})"
    )
    for name, label in (
        ("search", "search q=NEEDLE fl (the oldest link: reads every link)"),
        ("search_none", "search q=nosuchword (no match: reads every link)"),
        ("tag_first", f"tag={TAG}, first page"),
        ("tag_all", f"tag={TAG}, every page"),
        ("job_all", "job_id= of the oldest job, every page"),
        ("unfiltered", "unfiltered, first page"),
    ):
        shown = figures[name]
        print(
            f"  {label:<58} {shown['seconds']:6.2f} s, {shown['pages']:>3} pages, {shown['links']:>5} links"
        )
    shown = figures["tag_batch"]
    print(
        f"  batch by tag={TAG} (disable, admin key): {shown['status']} in {shown['seconds']:.1f} s, "
        f"{shown['changed']} changed"
    )
    print(
        f"  read units of a search that reads every link: {read_units:,.0f} "
        f"({figures['index_bytes'] / links:,.0f} bytes an index item, eventually consistent)"
    )


if __name__ == "__main__":
    main()
