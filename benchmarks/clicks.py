"""Clicks: the redirect handler against a bare GetItem (counting adds nothing to the redirect), the
DynamoDB writes per 1,000 clicks (one hot link, and clicks spread over 10,000 links), the
collector's clicks per second per invocation, and the cost per million clicks.

    python -m benchmarks clicks [--batch 1000] [--rounds 5]

The redirect ratio runs against an embedded moto server on loopback (HTTP, as the local stack does;
the links benchmark's measurement). The writes are the transactions the clicks store sends for
batches of --batch access log lines, recorded without a server (moto copies a whole table per
transaction); CloudWatch Logs' batches are larger under load, which only lowers the writes per click.
"""

import argparse
import contextlib
import io
import random
import statistics
import time
from typing import Any

from benchmarks.links import measure_requests_and_redirects, moto_server, prepare_environment

# Browsers and preview fetchers in a plausible mix; addresses from a few countries' ranges.
AGENTS = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile "
    "Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 "
    "Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 "
    "Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
    "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
]
ADDRESSES = ["8.8.8.8", "81.2.69.160", "2.16.0.1", "1.0.16.1", "41.0.0.1", "200.0.0.1"]
# Prices (us-east-1, on demand): CloudWatch Logs ingestion per GB (standard class), its storage per
# GB-month (compressed; about a sixth of the raw size, as CloudWatch Logs states), Lambda arm64 per
# GB-second and per million requests, DynamoDB per million write request units.
LOGS_INGESTION_PER_GB = 0.50
LOGS_STORAGE_PER_GB_MONTH = 0.03
LAMBDA_ARM_PER_GB_SECOND = 0.0000133334
LAMBDA_PER_MILLION_REQUESTS = 0.20
DYNAMODB_PER_MILLION_WRITE_UNITS = 0.625
COLLECTOR_MEMORY_GB = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=1000, help="access log lines per delivered batch")
    parser.add_argument("--rounds", type=int, default=5, help="rounds for the redirect ratio (median taken)")
    options = parser.parse_args()
    figures: dict[str, float] = {}
    with moto_server() as endpoint:
        prepare_environment(endpoint)
        redirect = measure_requests_and_redirects(200, options.rounds)
        figures.update({name: value for name, value in redirect.items() if "ratio" in name})
    figures.update(measure_writes(options.batch))
    figures.update(measure_collector(options.batch))
    figures.update(cost_per_million(figures))
    width = max(len(name) for name in figures)
    for name, value in figures.items():
        print(f"{name:<{width}}  {value:12.4f}")


def access_lines(count: int, codes: list[str], start_ms: int, rng: random.Random) -> list[str]:
    """``count`` access log lines of redirects of ``codes``, over about a minute."""
    import json

    return [
        json.dumps(
            {
                "requestId": f"r{start_ms}-{n}",
                "time": str(start_ms + n * 60_000 // count),
                "method": "GET",
                "resourcePath": "/{code}",
                "path": "/" + rng.choice(codes),
                "status": "301",
                "ip": rng.choice(ADDRESSES),
                "userAgent": rng.choice(AGENTS),
                "responseLength": "0",
            }
        )
        for n in range(count)
    ]


class TransactionRecorder:
    """The collector's DynamoDB client, recording each transaction it sends (what was asked of
    DynamoDB, exactly as the store builds it) and its items' sizes, without a server."""

    def __init__(self) -> None:
        self.requests = 0
        self.write_units = 0

    def transact_write_items(self, TransactItems: list[dict[str, Any]]) -> dict[str, Any]:
        import json

        self.requests += 1
        for item in TransactItems:
            # A transactional write costs 2 write units per KB of the item (rounded up); an item's
            # size is about its attribute names and values (the request's JSON is an upper bound).
            size = len(json.dumps(item).encode())
            self.write_units += 2 * -(-size // 1024)
        return {}


def measure_writes(batch: int) -> dict[str, float]:
    """Write requests and write units per 1,000 clicks, in batches of ``batch`` lines."""
    from shortener.clicks.counting import ClickCollector
    from shortener.clicks.store import ClicksStore

    rng = random.Random(20)
    figures: dict[str, float] = {}
    clicks = 10_000
    for label, codes in (("one hot link", ["hot"]), ("10,000 links", [f"c{n}" for n in range(10_000)])):
        recorder = TransactionRecorder()
        collector = ClickCollector(ClicksStore("bench-clicks", 400, client=recorder))
        for number in range(clicks // batch):
            lines = access_lines(batch, codes, 1_764_133_200_000 + number * 60_000, rng)
            collector.collect(f"{label}-{number}", lines)
        per_thousand = 1000 / clicks
        figures[f"DynamoDB write requests per 1,000 clicks, {label}"] = recorder.requests * per_thousand
        figures[f"DynamoDB write units per 1,000 clicks, {label}"] = recorder.write_units * per_thousand
    return figures


def measure_collector(batch: int) -> dict[str, float]:
    """Clicks a second one invocation classifies and adds up (the CPU part; the writes are above)."""
    from shortener.clicks.counting import ClickCollector

    class Discard:
        def add(self, *_: Any) -> int:
            return 1

    rng = random.Random(7)
    lines = access_lines(10_000, [f"c{n}" for n in range(2_000)], 1_764_133_200_000, rng)
    # Each click's event is built too (the visitor's keyed hash, the record), then dropped.
    collector = ClickCollector(
        Discard(),
        events=lambda events: [event.record() for event in events],
        visitor_key=lambda day: bytes(32),
    )
    collector.collect("warm-up", lines[:batch])  # the parsers' first load is a cold start's
    timings = []
    for round_number in range(3):
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            collector.collect(f"round-{round_number}", lines)
        timings.append(time.perf_counter() - started)
    return {
        "collector clicks per second per invocation (classify + add up)": 10_000 / statistics.median(timings)
    }


def cost_per_million(figures: dict[str, float]) -> dict[str, float]:
    """Dollars per million clicks, from the figures above and the prices at the top."""
    line_bytes = 330  # an access log line of this template's format, with a browser's user agent
    gigabytes = 1_000_000 * line_bytes / 1e9
    logs = gigabytes * LOGS_INGESTION_PER_GB + gigabytes / 6 * LOGS_STORAGE_PER_GB_MONTH
    seconds = 1_000_000 / figures["collector clicks per second per invocation (classify + add up)"]
    lambda_cost = (
        seconds * COLLECTOR_MEMORY_GB * LAMBDA_ARM_PER_GB_SECOND + LAMBDA_PER_MILLION_REQUESTS / 1000
    )
    hot = figures["DynamoDB write units per 1,000 clicks, one hot link"] * 1000
    spread = figures["DynamoDB write units per 1,000 clicks, 10,000 links"] * 1000
    dynamodb_hot = hot / 1e6 * DYNAMODB_PER_MILLION_WRITE_UNITS
    dynamodb_spread = spread / 1e6 * DYNAMODB_PER_MILLION_WRITE_UNITS
    return {
        "cost per million clicks: access log (ingestion + a month kept), $": logs,
        "cost per million clicks: collector Lambda (CPU part), $": lambda_cost,
        "cost per million clicks: DynamoDB, one hot link, $": dynamodb_hot,
        "cost per million clicks: DynamoDB, 10,000 links, $": dynamodb_spread,
        "cost per million clicks in all, 10,000 links, $": logs + lambda_cost + dynamodb_spread,
    }


if __name__ == "__main__":
    main()
