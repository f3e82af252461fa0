"""Single links: DynamoDB requests per created link and per redirect, the redirect handler's time on
a cache miss against a bare GetItem, a rule link's extra cost per redirect against a plain link's
(time, CPU, requests, log bytes, and dollars per million at list prices), and the API function's
start-up against boto3's.

    python -m benchmarks links [--links 300] [--rounds 7] [--rule-links 100]

Runs against an embedded moto server on loopback (HTTP, as the local stack does), so every
DynamoDB call costs a real round trip. Times are printed as ratios taken in the same run.
"""

import argparse
import contextlib
import io
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The API function's code root: Lambda imports its modules by their own names (``import app``).
API_FOLDER = ROOT / "functions" / "api"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=300, help="links created per measurement")
    parser.add_argument("--rounds", type=int, default=7, help="rounds for the ratios (median taken)")
    parser.add_argument("--rule-links", type=int, default=100, help="links of each rule kind measured")
    options = parser.parse_args()

    with moto_server() as endpoint:
        prepare_environment(endpoint)
        figures = measure_requests_and_redirects(options.links, options.rounds)
        figures.update(measure_rule_links(options.rule_links, options.rounds))
    figures.update(measure_start_up(options.rounds))
    print_figures(figures)


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def prepare_environment(endpoint: str) -> None:
    import boto3

    from local_stack.cloudformation.template import create_table_arguments

    os.environ.update(
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        POWERTOOLS_TRACE_DISABLED="true",
        POWERTOOLS_SERVICE_NAME="api",
        POWERTOOLS_METRICS_NAMESPACE="Benchmark",
        LINKS_TABLE="bench-links",
        JOBS_TABLE="bench-jobs",
        BLOCKLIST_TABLE="bench-blocklist",
    )
    client = boto3.client("dynamodb")
    client.create_table(**create_table_arguments("LinksTable", "bench-links"))
    client.create_table(**create_table_arguments("JobsTable", "bench-jobs"))
    client.create_table(**create_table_arguments("BlocklistTable", "bench-blocklist"))


class RequestCounter:
    """Counts the HTTP requests a botocore client sends (retries included)."""

    def __init__(self, client: Any) -> None:
        self.count = 0
        client.meta.events.register("before-send.dynamodb", self._on_send)

    def _on_send(self, **_: Any) -> None:
        self.count += 1


def measure_requests_and_redirects(links: int, rounds: int) -> dict[str, float]:
    from benchmarks._api_calls import answer, get_code, get_code_event, post_json

    if str(API_FOLDER) not in sys.path:
        sys.path.insert(0, str(API_FOLDER))
    import app  # the API function, as Lambda imports it

    from shortener import aws
    from shortener.settings import api_settings

    figures: dict[str, float] = {}
    counter = RequestCounter(aws.dynamodb())
    quiet = io.StringIO()  # Powertools writes logs and metrics to stdout, as in Lambda.

    def create(prefix: str, count: int) -> list[str]:
        with contextlib.redirect_stdout(quiet):
            answers = [post_json(app, {"url": f"https://example.com/{prefix}/{n}"}) for n in range(count)]
        assert all(answer["statusCode"] == 201 for answer in answers), answers[0]
        return [json.loads(answer["body"])["code"] for answer in answers]

    for find_if_exists in ("true", "false"):
        os.environ["FIND_IF_EXISTS"] = find_if_exists
        api_settings.cache_clear()
        app.links.cache_clear()
        counter.count = 0
        create(f"fie-{find_if_exists}", links)
        figures[f"requests per created link (find-if-exists {find_if_exists})"] = counter.count / links

    codes = create("redirects", links)
    app.links.cache_clear()  # a fresh container: an empty redirect cache
    for label in ("cold", "warm"):
        counter.count = 0
        with contextlib.redirect_stdout(quiet):
            answers = [get_code(app, code) for code in codes]
        assert all(answer["statusCode"] == 301 for answer in answers)
        figures[f"requests per redirect ({label} cache)"] = counter.count / len(codes)

    # The redirect handler on a cache miss against a bare GetItem, interleaved round by round.
    client = aws.dynamodb()
    ratios = []
    bare = 0.0

    # The events are API Gateway's work, not the function's: built before the clock starts.
    events = [get_code_event(code) for code in codes]

    def time_handler() -> float:
        app.links.cache_clear()  # every code a cache miss
        started = time.perf_counter()
        with contextlib.redirect_stdout(quiet):
            for event in events:
                answer(app, event)
        return time.perf_counter() - started

    def time_bare() -> float:
        started = time.perf_counter()
        for code in codes:
            client.get_item(TableName="bench-links", Key={"code": {"S": code}})
        return time.perf_counter() - started

    for round_number in range(rounds):
        # Alternate which goes first, so drift on a shared machine does not favour either.
        if round_number % 2:
            bare, handler = time_bare(), time_handler()
        else:
            handler, bare = time_handler(), time_bare()
        ratios.append(handler / bare)
    figures["redirect handler on a cache miss / bare GetItem (median ratio, target <= 1.2)"] = (
        statistics.median(ratios)
    )
    figures["bare GetItem against the local endpoint (ms)"] = bare / len(codes) * 1000
    return figures


IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4 Mobile/15E148 Safari/604.1"
)
CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 "
    "Safari/537.36"
)
# Each kind of rule link (issue 34): its fields, and the visitor's headers and query string.
RULE_KINDS: dict[str, tuple[dict[str, Any], dict[str, str], str]] = {
    "devices (an iPhone)": (
        {"ios_url": "https://apps.apple.com/app/id1", "android_url": "https://play.google.com/store"},
        {"User-Agent": IPHONE},
        "",
    ),
    "country (DE)": ({"geo": {"DE": "https://shop.example/de"}}, {"CloudFront-Viewer-Country": "DE"}, ""),
    "A/B split": (
        {
            "variants": [
                {"url": "https://a.example/", "weight": 50},
                {"url": "https://b.example/", "weight": 50},
            ]
        },
        {},
        "",
    ),
    "UTM tags": ({"utm": {"source": "sms", "medium": "text", "campaign": "spring"}}, {}, ""),
    "forward_query": ({"forward_query": True}, {}, "ref=print&id=7"),
    "preview, a browser": ({"preview": {"title": "Spring sale"}}, {"User-Agent": CHROME}, ""),
    "preview, a crawler": (
        {"preview": {"title": "Spring sale"}},
        {"User-Agent": "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"},
        "",
    ),
    "password page": ({"password": "spring-sale-2026"}, {}, ""),
}
# Prices (us-east-1, on demand; aws.amazon.com/lambda/pricing, aws.amazon.com/cloudwatch/pricing):
# as benchmarks.clicks, whose collector costs are per million of the same lines.
DESTINATION_RECORD = '"record":"destination"'


def measure_rule_links(count: int, rounds: int) -> dict[str, float]:
    """A rule link's redirect on a cache miss against a plain link's, ``count`` links each,
    interleaved round by round: extra time, CPU, DynamoDB requests and log bytes per redirect, and
    the extra dollars per million redirects (the API function's GB-seconds at the template's memory,
    the destination line's log ingestion, and the collector's invocations and writes for it)."""
    from benchmarks._api_calls import answer, event_of, post_json
    from benchmarks.clicks import (
        LAMBDA_ARM_PER_GB_SECOND,
        LAMBDA_PER_MILLION_REQUESTS,
        LOGS_INGESTION_PER_GB,
        LOGS_STORAGE_PER_GB_MONTH,
        TransactionRecorder,
    )
    from local_stack.cloudformation.template import load_template
    from shortener import aws

    if str(API_FOLDER) not in sys.path:
        sys.path.insert(0, str(API_FOLDER))
    import app

    counter = RequestCounter(aws.dynamodb())
    memory_gb = _api_memory_mb(load_template()) / 1024
    figures: dict[str, float] = {}

    def create(fields: dict[str, Any], prefix: str) -> list[str]:
        with contextlib.redirect_stdout(io.StringIO()):
            made = [
                post_json(app, {"url": f"https://example.com/{prefix}/{n}", **fields}) for n in range(count)
            ]
        assert all(one["statusCode"] == 201 for one in made), made[0]
        return [json.loads(one["body"])["code"] for one in made]

    def events(codes: list[str], headers: dict[str, str], query: str) -> list[dict[str, Any]]:
        suffix = f"?{query}" if query else ""
        return [
            event_of("GET", f"/{code}{suffix}", "/{code}", headers=headers, path_parameters={"code": code})
            for code in codes
        ]

    def run(batch: list[dict[str, Any]]) -> tuple[float, float, int, int]:
        """Wall and CPU seconds, DynamoDB requests and output bytes of answering ``batch``."""
        app.links.cache_clear()  # every code a cache miss
        output = io.StringIO()
        counter.count = 0
        started, cpu = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(output):
            for event in batch:
                answer(app, event)
        return time.perf_counter() - started, time.process_time() - cpu, counter.count, len(output.getvalue())

    plain = events(create({}, "plain"), {"User-Agent": CHROME}, "")
    answered: list[str] = []
    for kind, (fields, headers, query) in RULE_KINDS.items():
        rule = events(create(fields, kind.split()[0]), {"User-Agent": CHROME, **headers}, query)
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            for event in rule[:10]:
                answer(app, event)
        answered += [line for line in output.getvalue().splitlines() if DESTINATION_RECORD in line]
        extra_ms, extra_cpu_ms, ratios = [], [], []
        for round_number in range(rounds):
            # Alternate which goes first, so drift on a shared machine does not favour either.
            first, second = (plain, rule) if round_number % 2 else (rule, plain)
            one, other = run(first), run(second)
            base, ruled = (one, other) if first is plain else (other, one)
            ratios.append(ruled[0] / base[0])
            extra_ms.append((ruled[0] - base[0]) / count * 1000)
            extra_cpu_ms.append((ruled[1] - base[1]) / count * 1000)
        requests = (ruled[2] - base[2]) / count
        log_bytes = (ruled[3] - base[3]) / count
        figures[f"rule link, {kind}: handler time / a plain link's (median)"] = statistics.median(ratios)
        figures[f"rule link, {kind}: extra ms per redirect (median)"] = statistics.median(extra_ms)
        figures[f"rule link, {kind}: extra CPU ms per redirect (median)"] = statistics.median(extra_cpu_ms)
        figures[f"rule link, {kind}: extra DynamoDB requests per redirect"] = requests
        figures[f"rule link, {kind}: extra log bytes per redirect"] = log_bytes
        lambda_dollars = (
            max(statistics.median(extra_ms), 0) / 1000 * 1e6 * memory_gb * LAMBDA_ARM_PER_GB_SECOND
        )
        gigabytes = max(log_bytes, 0) * 1e6 / 1e9
        logs_dollars = gigabytes * LOGS_INGESTION_PER_GB + gigabytes / 6 * LOGS_STORAGE_PER_GB_MONTH
        figures[f"rule link, {kind}: extra $ per million redirects (API time + log lines)"] = (
            lambda_dollars + logs_dollars
        )
    figures.update(
        _collector_cost(answered, TransactionRecorder, LAMBDA_ARM_PER_GB_SECOND, LAMBDA_PER_MILLION_REQUESTS)
    )
    return figures


def _collector_cost(
    answered: list[str], recorder_class: Any, price_gb_second: float, price_per_million_requests: float
) -> dict[str, float]:
    """What the collector spends on a million destination lines: delivered in batches of 1,000
    (a subscription's batch), over 100 links; its CPU at its template memory, one invocation per
    batch, and the write units of the hour items' destination counters."""
    from benchmarks.clicks import COLLECTOR_MEMORY_GB, DYNAMODB_PER_MILLION_WRITE_UNITS
    from shortener.clicks.counting import ClickCollector
    from shortener.clicks.store import ClicksStore

    records = [json.loads(line) for line in answered]
    batch = [json.dumps({**records[n % len(records)], "code": f"r{n % 100}"}) for n in range(1000)]
    recorder = recorder_class()
    collector = ClickCollector(ClicksStore("bench-clicks", 400, client=recorder))
    collector.collect("warm-up", batch)
    recorder.requests = recorder.write_units = 0
    timings = []
    for round_number in range(5):
        started = time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            collector.collect(f"round-{round_number}", batch)
        timings.append(time.process_time() - started)
    per_line_seconds = statistics.median(timings) / len(batch)
    write_units_per_line = recorder.write_units / 5 / len(batch)
    dollars = (
        1e6 * per_line_seconds * COLLECTOR_MEMORY_GB * price_gb_second
        + price_per_million_requests / len(batch)
        + 1e6 * write_units_per_line / 1e6 * DYNAMODB_PER_MILLION_WRITE_UNITS
    )
    return {
        "destination lines: collector CPU µs per line": per_line_seconds * 1e6,
        "destination lines: DynamoDB write units per line (1,000 a batch, 100 links)": write_units_per_line,
        "destination lines: collector $ per million (CPU, invocations, writes)": dollars,
    }


def _api_memory_mb(template: dict[str, Any]) -> int:
    """The API function's MemorySize in the template (its own, or the Globals')."""
    own = template["Resources"]["ApiFunction"]["Properties"].get("MemorySize")
    return int(own or template["Globals"]["Function"]["MemorySize"])


_BASELINE = """
import time
started = time.perf_counter()
import boto3
boto3.client("dynamodb")
print(time.perf_counter() - started)
"""

_API = """
import time
started = time.perf_counter()
import app
from shortener import aws
app.links()
aws.dynamodb()
print(time.perf_counter() - started)
"""


def measure_start_up(rounds: int) -> dict[str, float]:
    """Fresh interpreters, as a cold Lambda container: imports plus the first client."""
    environment = {
        **os.environ,
        # As Lambda: the function's folder first, then the layer.
        "PYTHONPATH": os.pathsep.join([str(API_FOLDER), str(ROOT / "shared")]),
        "AWS_DEFAULT_REGION": "us-east-1",
        "LINKS_TABLE": "bench-links",
        "POWERTOOLS_SERVICE_NAME": "api",
    }

    def run(code: str) -> float:
        output = subprocess.run(
            [sys.executable, "-X", "frozen_modules=on", "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env=environment,
        )
        return float(output.stdout.strip().splitlines()[-1])

    baseline, api = [], []
    for _ in range(rounds):
        baseline.append(run(_BASELINE))
        api.append(run(_API))
    return {
        "start-up: import boto3 + one client (ms, median)": statistics.median(baseline) * 1000,
        "start-up: API function imports + first client (ms, median)": statistics.median(api) * 1000,
        "start-up ratio API / boto3 (target <= 1.5)": statistics.median(api) / statistics.median(baseline),
    }


def print_figures(figures: dict[str, float]) -> None:
    width = max(len(name) for name in figures)
    for name, value in figures.items():
        print(f"{name:<{width}}  {value:8.2f}")


if __name__ == "__main__":
    main()
