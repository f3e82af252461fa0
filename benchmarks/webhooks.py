"""Webhooks through the local stack: a delivery's delay after the change was answered (p50, p99),
the deliveries a second one endpoint gets from a burst (bounded by WebhookDeliveriesPerSecond),
and the cost of a million deliveries at list prices, from the AWS requests a delivery made.

    python -m benchmarks webhooks [--links 100] [--burst 200] [--gap 0.1]

Starts a local stack (no data kept) on free ports and a receiver on loopback answering 200,
registers an endpoint for link.created, then makes links one at a time (the delay), then a burst
at once (the rate, with the requests recorded by the embedded AWS).
"""

import argparse
import json
import math
import re
import statistics
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks.bulk import LocalStack
from local_stack.embedded import request_log

# us-east-1 list prices, November 2026.
EVENTBRIDGE_PER_MILLION = 1.00  # custom events put (64 KB chunks)
SQS_PER_MILLION = 0.40  # standard queue requests (64 KB chunks)
LAMBDA_PER_MILLION = 0.20  # invocations
LAMBDA_GB_SECOND = 0.0000166667  # x86
DYNAMODB_WRITE_PER_MILLION = 0.625  # on-demand write request units
DYNAMODB_READ_PER_MILLION = 0.125  # on-demand read request units
DYNAMODB_GB_MONTH = 0.25
DELIVERY_DAYS = 30
FUNCTION = "WebhooksFunction"


class Receiver:
    """Answers 200 at once and keeps when each delivery arrived, by the code it carries."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.arrivals.setdefault(body["data"].get("code", body["id"]), time.time())
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, count: int, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while len(self.arrivals) < count and time.monotonic() < deadline:
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=100, help="links made one at a time (the delay)")
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between them")
    parser.add_argument("--burst", type=int, default=200, help="links made at once (the rate)")
    options = parser.parse_args()
    receiver = Receiver()
    with tempfile.TemporaryDirectory(prefix="bench-webhooks-") as folder:
        stack = LocalStack(Path(folder), 1.0, {}, capacity="on")
        try:
            call(stack, "POST", "webhooks", {"url": receiver.url, "events": ["link.created"]})
            delays = measure_delays(stack, receiver, options.links, options.gap)
            earlier = len(report_durations(stack.log_path))
            rate, busiest, requests = measure_burst(stack, receiver, options.burst)
            durations = report_durations(stack.log_path)[earlier:]
        finally:
            stack.stop()
            receiver.server.shutdown()
    print(f"Delay from a change's answer to its delivery ({options.links} links, {options.gap:g} s apart):")
    print(f"  p50 {percentile(delays, 50) * 1000:7.0f} ms")
    print(f"  p99 {percentile(delays, 99) * 1000:7.0f} ms   (the contract: within 30 s locally)")
    print(f"  max {max(delays) * 1000:7.0f} ms")
    print(f"A burst of {options.burst} links at once, one endpoint:")
    print(f"  {rate:.1f} deliveries/s, at most {busiest} in one second (WebhookDeliveriesPerSecond 10)")
    print_cost(requests, options.burst, durations)


def call(stack: LocalStack, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        stack.api_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **stack.key_header},
        method=method,
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return dict(json.loads(answer.read()))


def measure_delays(stack: LocalStack, receiver: Receiver, links: int, gap: float) -> list[float]:
    answered = {}
    for number in range(links):
        code = f"bench-delay-{number}"
        call(stack, "POST", "", {"url": f"https://example.com/webhooks/{number}", "code": code})
        answered[code] = time.time()
        time.sleep(gap)
    receiver.wait(links, 60)
    missing = set(answered) - set(receiver.arrivals)
    assert not missing, f"{len(missing)} deliveries did not arrive within 60 s"
    return [receiver.arrivals[code] - at for code, at in answered.items()]


def measure_burst(stack: LocalStack, receiver: Receiver, burst: int) -> tuple[float, int, list[Any]]:
    before = len(receiver.arrivals)
    stack.recorder("reset-recording")
    stack.recorder("start-recording")
    codes = [f"bench-burst-{number}" for number in range(burst)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(
            pool.map(
                lambda code: call(stack, "POST", "", {"url": f"https://example.com/{code}", "code": code}),
                codes,
            )
        )
    receiver.wait(before + burst, burst / 5 + 60)
    time.sleep(2)
    stack.recorder("stop-recording")
    times = sorted(receiver.arrivals[code] for code in codes if code in receiver.arrivals)
    assert len(times) == burst, f"{burst - len(times)} of the burst did not arrive"
    per_second = Counter(int(moment) for moment in times)
    rate = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0
    return rate, max(per_second.values()), request_log.read_recording(stack.recording)


def report_durations(log_path: Path) -> list[float]:
    """The webhooks function's billed durations (ms), from the local Lambda's REPORT lines."""
    pattern = re.compile(rf"{FUNCTION} REPORT .* Billed Duration: (\d+) ms")
    return [float(found) for found in pattern.findall(log_path.read_text(errors="replace"))]


def print_cost(requests: list[Any], deliveries: int, durations: list[float]) -> None:
    names: Counter[str] = Counter()
    writes = reads = 0.0
    delivery_bytes = []
    for request in requests:
        if request.service == "dynamodb":
            body = json.loads(request.body or b"{}")
            if "Webhooks" not in str(body.get("TableName", "")):
                continue
            key = json.dumps(body.get("Key") or body.get("Item") or {})
            if request.operation == "PutItem" and "deliveries#" in key:
                delivery_bytes.append(len(request.body))
        elif request.service not in ("sqs", "events"):
            continue
        names[request.name] += 1
    item_units = math.ceil((statistics.mean(delivery_bytes) if delivery_bytes else 1024) / 1024)
    for request in requests:
        if request.service != "dynamodb" or "Webhooks" not in str(
            json.loads(request.body or b"{}").get("TableName", "")
        ):
            continue
        body = json.loads(request.body)
        on_delivery = "deliveries#" in json.dumps(body.get("Key") or body.get("Item") or {})
        if request.operation in ("PutItem", "UpdateItem", "DeleteItem"):
            writes += item_units if on_delivery else 1
        else:
            reads += 1  # consistent reads of items under 4 KB
    # EventBridge's rule puts each event on the queue: an SQS request the embedded AWS does not see.
    events = names["events.PutEvents"]
    sqs = sum(count for name, count in names.items() if name.startswith("sqs.")) + events
    invocations = len(durations)
    gb_seconds = sum(durations) / 1000 * 256 / 1024
    per = 1_000_000 / deliveries
    lines = {
        "EventBridge events": events * per * EVENTBRIDGE_PER_MILLION / 1e6,
        "SQS requests": sqs * per * SQS_PER_MILLION / 1e6,
        "Lambda invocations": invocations * per * LAMBDA_PER_MILLION / 1e6,
        "Lambda duration (256 MB)": gb_seconds * per * LAMBDA_GB_SECOND,
        "DynamoDB writes": writes * per * DYNAMODB_WRITE_PER_MILLION / 1e6,
        "DynamoDB reads": reads * per * DYNAMODB_READ_PER_MILLION / 1e6,
        f"DynamoDB storage ({DELIVERY_DAYS} days)": item_units
        * 1024
        * 1_000_000
        / 1024**3
        * DYNAMODB_GB_MONTH,
    }
    print("AWS requests per delivery (the burst's, webhooks table, queue and bus): ")
    for name, count in names.most_common():
        print(f"  {name:<28} {count / deliveries:6.2f}")
    print(f"  DynamoDB write units {writes / deliveries:.2f}, read units {reads / deliveries:.2f}")
    print(f"  (a delivery item is about {item_units} KB)")
    print(
        f"  Lambda: {invocations / deliveries:.2f} invocations a delivery, "
        f"{sum(durations) / max(1, invocations):.0f} ms billed each (the receiver answers at once)"
    )
    print("Cost per million deliveries at list prices:")
    for name, cost in lines.items():
        print(f"  {name:<30} ${cost:7.2f}")
    print(f"  {'total':<30} ${sum(lines.values()):7.2f}")


def percentile(values: list[float], point: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(point / 100 * len(ordered)) - 1)]
