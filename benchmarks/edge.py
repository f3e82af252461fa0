"""The edge's figures (issue 33): redirects a second the local edge answers on hits against those the
function answers through the API's own URL, the origin requests counted per 1,000 redirects at a
hit ratio, and what a million redirects cost at hit ratios 0, 50, 90 and 99%.

    python -m benchmarks edge [--requests 300] [--rounds 3] [--redirects 1000] [--hit-ratio 0.9]
                              [--api-port 0] [--aws-port 0] [--lambda-port 0] [--edge-port 0]

Starts a local stack (no data kept, a temporary data folder) on free ports unless given. The cost
table prices each part from PRICES and ORIGIN_PRICES (list prices, with their pages; docs/edge.md,
"What each request costs", uses the same numbers); the origin's kind is read from template.yaml's
distribution, so the table follows the template when its origin changes.
"""

import argparse
import http.client
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_stack.cloudformation.template import load_template
from local_stack.embedded import aws_client
from local_stack.harness import StackProcess

_BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
_REFERRER = "https://www.example.org/newsletter/2026-11"
HIT_RATIOS = (0.0, 0.5, 0.9, 0.99)
# CloudWatch Logs counts each event as its message's UTF-8 bytes plus 26 ("PutLogEvents",
# https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutLogEvents.html).
EVENT_OVERHEAD_BYTES = 26


@dataclass(frozen=True)
class Price:
    """A list price in dollars (per million requests unless ``unit`` says otherwise) and its page."""

    dollars: float
    url: str
    unit: str = "per million requests"


# List prices, us-east-1 (North America and Europe for CloudFront), at the first volume tier.
PRICES = {
    "cloudfront_request": Price(1.00, "https://aws.amazon.com/cloudfront/pricing/"),
    "vended_log_gb": Price(0.50, "https://aws.amazon.com/cloudwatch/pricing/", "per GB ingested"),
}
# What a miss costs at the origin, by the origin's kind. Lambda: $0.20 per million requests plus the
# redirect's duration at the API function's memory, about $0.29 in all (https://aws.amazon.com/lambda/pricing/).
# The web ACL on the REST API's edge stage is paid per request it inspects; an HTTP API takes no web ACL.
ORIGIN_PRICES = {
    "rest": {
        "API Gateway REST": Price(3.50, "https://aws.amazon.com/api-gateway/pricing/"),
        "Lambda": Price(0.29, "https://aws.amazon.com/lambda/pricing/"),
        "origin web ACL": Price(0.60, "https://aws.amazon.com/waf/pricing/"),
    },
    "http-api": {
        "API Gateway HTTP API": Price(1.00, "https://aws.amazon.com/api-gateway/pricing/"),
        "Lambda": Price(0.29, "https://aws.amazon.com/lambda/pricing/"),
    },
}
# The click pipeline per million clicks, priced apart (docs/clicks.md, "cost per million clicks"):
# the collector's invocations and the counters' writes, clicks spread over 10,000 links.
CLICK_PIPELINE = {
    "collector Lambda": Price(0.0004, "https://aws.amazon.com/lambda/pricing/"),
    "counters DynamoDB (10,000 links)": Price(2.40, "https://aws.amazon.com/dynamodb/pricing/on-demand/"),
}


@dataclass(frozen=True)
class CostRow:
    """What a million redirects cost at one hit ratio, in dollars, by part."""

    hit_ratio: float
    origin_fraction: float
    edge: float
    origin: float
    logs: float

    @property
    def total(self) -> float:
        return self.edge + self.origin + self.logs


def origin_price(kind: str) -> float:
    """Dollars per million requests that reach the origin of ``kind`` (its parts summed)."""
    return sum(price.dollars for price in ORIGIN_PRICES[kind].values())


def log_price(record_bytes: float) -> float:
    """Dollars per million log records of ``record_bytes`` each (as CloudWatch Logs counts them)."""
    return record_bytes * 1_000_000 / 1e9 * PRICES["vended_log_gb"].dollars


def cost_row(hit_ratio: float, origin_fraction: float, kind: str, record_bytes: float) -> CostRow:
    """A million redirects at ``hit_ratio``, ``origin_fraction`` of them reaching an origin of
    ``kind``: every redirect is an edge request and a log record; the misses are the origin's too."""
    return CostRow(
        hit_ratio=hit_ratio,
        origin_fraction=origin_fraction,
        edge=PRICES["cloudfront_request"].dollars,
        origin=origin_fraction * origin_price(kind),
        logs=log_price(record_bytes),
    )


def cost_table(kind: str, record_bytes: float, counted: dict[float, float] | None = None) -> list[CostRow]:
    """A row per hit ratio of HIT_RATIOS; a ratio in ``counted`` uses its counted origin fraction,
    the others 1 - the ratio."""
    counted = counted or {}
    return [cost_row(ratio, counted.get(ratio, 1 - ratio), kind, record_bytes) for ratio in HIT_RATIOS]


def origin_kind(template: dict[str, Any]) -> str:
    """The distribution's origin kind: ``rest`` (a REST API's stage, an execute-api domain with an
    OriginPath) or ``http-api`` (an HTTP API, answering at its root)."""
    resources = template["Resources"]
    distribution = next(
        item for item in resources.values() if item.get("Type") == "AWS::CloudFront::Distribution"
    )
    config = distribution["Properties"]["DistributionConfig"]
    target = config["DefaultCacheBehavior"]["TargetOriginId"]
    origin = next(item for item in config["Origins"] if item["Id"] == target)
    domain = json.dumps(origin["DomainName"])
    for logical_id, resource in resources.items():
        if f"${{{logical_id}}}" in domain or f'"{logical_id}"' in domain:
            if resource.get("Type") in ("AWS::ApiGatewayV2::Api", "AWS::Serverless::HttpApi"):
                return "http-api"
            if resource.get("Type") in ("AWS::ApiGateway::RestApi", "AWS::Serverless::Api"):
                return "rest"
    if "execute-api" in domain and origin.get("OriginPath"):
        return "rest"
    raise ValueError(f"the distribution's origin {domain} is neither a REST nor an HTTP API")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="hits (and function answers) per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (median taken)")
    parser.add_argument("--redirects", type=int, default=1000, help="redirects followed for the origin count")
    parser.add_argument("--hit-ratio", type=float, default=0.9, help="share of repeat follows (0 to 1)")
    for name in ("api", "aws", "lambda", "edge"):
        parser.add_argument(f"--{name}-port", help=f"the stack's {name} port (default: a free one)")
    options = parser.parse_args()
    if not 0 <= options.hit_ratio < 1:
        parser.error("--hit-ratio is from 0 to just below 1")
    kind = origin_kind(load_template())
    with tempfile.TemporaryDirectory(prefix="bench-edge-") as folder:
        stack = StackProcess(
            [*_ports(options), "--no-persist", "--data-dir", folder],
            Path(folder) / "stack.log",
        )
        info = stack.launch()
        try:
            if not info.get("edge_url"):
                raise SystemExit("the stack has no local edge (template parameter Edge=off?)")
            bench = _Bench(info)
            edge_rate, function_rate = bench.rates(options.requests, options.rounds)
            origin, followed = bench.origin_requests(options.redirects, options.hit_ratio)
            record_bytes, records = bench.log_record_bytes()
        finally:
            stack.stop()
    print(f"edge hits           {edge_rate:8.0f} redirects/s (one kept-alive connection)")
    print(f"function (API URL)  {function_rate:8.0f} redirects/s (same connection, same code)")
    print(f"edge hits / function: {edge_rate / function_rate:.1f}x")
    per_thousand = origin * 1000 / followed
    print(
        f"origin requests per 1,000 redirects at {options.hit_ratio:.0%} hits: {per_thousand:.0f} "
        f"(counted: {origin} Miss answers of {followed})"
    )
    print(f"log record: {record_bytes:.0f} bytes as CloudWatch Logs counts it ({records} records read)")
    counted = {round(options.hit_ratio, 2): origin / followed}
    rows = cost_table(kind, record_bytes, counted)
    _print_table(kind, rows, counted)
    pipeline = sum(price.dollars for price in CLICK_PIPELINE.values())
    parts = ", ".join(f"{name} {_dollars(price.dollars)}" for name, price in CLICK_PIPELINE.items())
    print(f"click pipeline, apart: ${pipeline:.2f} per million clicks ({parts})")
    at_90 = next(row for row in rows if row.hit_ratio == 0.9)
    print(f"cost per million redirects at 90% hits: ${at_90.total:.2f}")


def _ports(options: argparse.Namespace) -> list[str]:
    """The stack's port arguments: the API's and the embedded AWS's free ones unless given (the
    Lambda endpoint's and the edge's follow a free API port), the others only when given."""
    given = {"api": options.api_port or "0", "aws": options.aws_port or "0"}
    given |= {name: getattr(options, f"{name}_port") for name in ("lambda", "edge")}
    return [item for name, port in given.items() if port for item in (f"--{name}-port", port)]


def _print_table(kind: str, rows: list[CostRow], counted: dict[float, float]) -> None:
    parts = " + ".join(f"{name} {_dollars(price.dollars)}" for name, price in ORIGIN_PRICES[kind].items())
    print(f"cost per million redirects, origin '{kind}' ({parts} = {_dollars(origin_price(kind))} a miss):")
    print("  hits  origin share  edge requests  origin misses  log delivery    total")
    for row in rows:
        mark = " (counted)" if row.hit_ratio in counted else ""
        cells = (row.edge, row.origin, row.logs)
        print(
            f"  {row.hit_ratio:4.0%}  {row.origin_fraction:12.3f}"
            + "".join(f"{_dollars(cell):>15}" for cell in cells)
            + f"{_dollars(row.total):>9}{mark}"
        )


def _dollars(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 0.01 else f"${amount:.4f}"


class _Bench:
    """One stack's API (with the admin key) and its local edge, each on a kept-alive connection."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info
        self.api = _connection(info["api_url"])
        self.edge = _connection(info["edge_url"])
        self.key = {"X-Api-Key": info["api_key"]} if info.get("api_key") else {}

    def create(self, url: str) -> str:
        self.api.request(
            "POST", "/", json.dumps({"url": url}), {**self.key, "Content-Type": "application/json"}
        )
        answer = self.api.getresponse()
        body = answer.read()
        assert answer.status == 201, (answer.status, body)
        return str(json.loads(body)["code"])

    def create_many(self, urls: list[str]) -> list[str]:
        """New links in calls of up to 1,000 (one request each, within the key's rate)."""
        codes: list[str] = []
        for start in range(0, len(urls), 1000):
            body = {"links": [{"url": url} for url in urls[start : start + 1000]]}
            headers = {**self.key, "Content-Type": "application/json"}
            self.api.request("POST", "/links/bulk", json.dumps(body), headers)
            answer = self.api.getresponse()
            outcomes = json.loads(answer.read())["links"]
            assert all(outcome["status"] == 201 for outcome in outcomes), outcomes[:3]
            codes.extend(str(outcome["code"]) for outcome in outcomes)
        return codes

    def follow(self, connection: http.client.HTTPConnection, code: str) -> str:
        """GET /{code} as a browser from a page; the answer's X-Cache ("" from the API)."""
        connection.request("GET", f"/{code}", headers={"User-Agent": _BROWSER, "Referer": _REFERRER})
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 301, answer.status
        return answer.getheader("X-Cache", "")

    def rates(self, requests: int, rounds: int) -> tuple[float, float]:
        """Redirects a second: the edge on hits, the function through the API's own URL (medians)."""
        code = self.create("https://example.com/bench-edge-hit")
        self.follow(self.edge, code)
        assert self.follow(self.edge, code) == "Hit from cloudfront"
        self.follow(self.api, code)  # warm: the function's container, its redirect cache

        def rate(connection: http.client.HTTPConnection) -> float:
            started = time.perf_counter()
            for _ in range(requests):
                self.follow(connection, code)
            return requests / (time.perf_counter() - started)

        edges, functions = [], []
        for number in range(rounds):  # alternated, so drift on a shared machine favours neither
            if number % 2:
                functions.append(rate(self.api))
                edges.append(rate(self.edge))
            else:
                edges.append(rate(self.edge))
                functions.append(rate(self.api))
        return statistics.median(edges), statistics.median(functions)

    def origin_requests(self, redirects: int, hit_ratio: float) -> tuple[int, int]:
        """Follow ``redirects`` redirects through the edge, about ``hit_ratio`` of them repeats of
        codes already followed: the answers the edge took from the origin (X-Cache Miss or Error)."""
        distinct = max(1, round(redirects * (1 - hit_ratio)))
        codes = self.create_many([f"https://example.com/bench-edge/{number}" for number in range(distinct)])
        order = codes + [codes[number % distinct] for number in range(redirects - distinct)]
        origin = 0
        for code in order:
            if not self.follow(self.edge, code).startswith("Hit"):
                origin += 1
        return origin, len(order)

    def log_record_bytes(self) -> tuple[float, int]:
        """The mean bytes of the edge's log records as its log group holds them, plus CloudWatch
        Logs' per-event overhead, and how many records were read."""
        time.sleep(2.5)  # the edge writes its records every second
        logs = aws_client("logs", self.info["aws_endpoint"], self.info["region"])
        # The distribution's log group: template.yaml's EdgeLogGroup, named by the template on AWS
        # and by its physical id (stack-EdgeLogGroup) in the local stack.
        names = [item["logGroupName"] for item in logs.describe_log_groups()["logGroups"]]
        group = next(name for name in names if name.endswith(("-EdgeLogGroup", "-edge")))
        sizes: list[int] = []
        kwargs: dict[str, Any] = {"logGroupName": group}
        while True:
            page = logs.filter_log_events(**kwargs)
            sizes.extend(len(event["message"].encode()) for event in page["events"])
            if not page.get("nextToken"):
                break
            kwargs["nextToken"] = page["nextToken"]
        assert sizes, "the edge wrote no log records"
        return statistics.fmean(sizes) + EVENT_OVERHEAD_BYTES, len(sizes)


def _connection(url: str) -> http.client.HTTPConnection:
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    return http.client.HTTPConnection("127.0.0.1", port, timeout=30)


if __name__ == "__main__":
    main()
