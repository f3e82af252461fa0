"""Single links: DynamoDB requests per created link and per redirect, the redirect handler's time on
a cache miss against a bare GetItem, and the API function's start-up against boto3's.

    python -m benchmarks links [--links 300] [--rounds 7]

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
    options = parser.parse_args()

    with moto_server() as endpoint:
        prepare_environment(endpoint)
        figures = measure_requests_and_redirects(options.links, options.rounds)
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
