"""API keys on the local stack: what checking a key costs a request, with API Gateway's cache of
the authorizer's answers (AuthorizerCacheTtlSeconds=60, the default) and without it (0).

    python -m benchmarks access [--requests 200]

For each setting a local stack is started; the same POST / (an existing link: 200, one GetItem
behind it) is sent --requests times with the stack's admin key, and as many public redirects
(GET /{code}, no authorizer) for comparison. Prints the median time of each and the keys-table
reads per keyed request, counted by moto's recorder at the embedded AWS.
"""

import argparse
import http.client
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.bulk import LocalStack
from local_stack.embedded import request_log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per measurement")
    options = parser.parse_args()
    rows = []
    for ttl in ("60", "0"):
        with tempfile.TemporaryDirectory(prefix="bench-access-") as folder:
            # A usage plan that never throttles this measurement (its own cost is included).
            params = {"AuthorizerCacheTtlSeconds": ttl, "KeyRateLimit": "10000", "KeyBurstLimit": "10000"}
            stack = LocalStack(Path(folder), 1.0, params)
            try:
                rows.append((ttl, measure(stack, options.requests)))
            finally:
                stack.stop()
    print(f"API keys on the local stack ({options.requests} requests each, medians):")
    for ttl, figures in rows:
        print(
            f"  authorizer cache {ttl:>2} s: POST / with a key {figures['keyed_ms']:6.1f} ms, "
            f"public GET /{{code}} {figures['public_ms']:6.1f} ms, "
            f"keys-table reads per keyed request {figures['key_reads']:.3f}"
        )
    cached, uncached = rows[0][1], rows[1][1]
    print(f"  a key check the cache does not answer adds {uncached['keyed_ms'] - cached['keyed_ms']:.1f} ms")


def measure(stack: LocalStack, count: int) -> dict[str, float]:
    """Median times of keyed and public requests, and keys-table reads per keyed request."""
    key = str(stack.info["api_key"])
    url = urlsplit(stack.api_url)
    body = json.dumps({"url": "https://example.com/bench/access"})
    headers = {"Content-Type": "application/json", "X-Api-Key": key}
    code = json.loads(_send(url, "POST", "/", body, headers)[1])["code"]  # warms both functions
    _send(url, "GET", f"/{code}", None, {})
    stack.recorder("reset-recording")
    stack.recorder("start-recording")
    keyed = [_timed(url, "POST", "/", body, headers) for _ in range(count)]
    stack.recorder("stop-recording")
    public = [_timed(url, "GET", f"/{code}", None, {}) for _ in range(count)]
    table = stack.info["resources"]["KeysTable"]
    entries = [json.loads(line) for line in stack.recording.read_text().splitlines() if line.strip()]
    reads = sum(1 for entry in entries if _reads_table(entry, table))
    return {
        "keyed_ms": statistics.median(keyed) * 1000,
        "public_ms": statistics.median(public) * 1000,
        "key_reads": reads / count,
    }


def _timed(url: Any, method: str, path: str, body: str | None, headers: dict[str, str]) -> float:
    started = time.perf_counter()
    status, _ = _send(url, method, path, body, headers)
    elapsed = time.perf_counter() - started
    if status >= 400:
        raise RuntimeError(f"{method} {path}: {status}")
    return elapsed


def _send(url: Any, method: str, path: str, body: str | None, headers: dict[str, str]) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def _reads_table(entry: dict[str, Any], table: str) -> bool:
    request = request_log.parse(entry)
    if request.name != "dynamodb.GetItem":
        return False
    return bool(json.loads(request.body or b"{}").get("TableName") == table)
