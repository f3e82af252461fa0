"""A takedown's 410 against a live link's 301: redirects a second through the local stack's API,
one kept-alive connection each, and their ratio (issue 31: a 410 must cost no more than a 301).

    python -m benchmarks gone [--requests 300] [--rounds 3] [--api-port 0]

Starts a local stack (no data kept) on free ports, makes one link and one disabled link, then
follows each in turn, round by round, so drift on a shared machine favours neither.
"""

import argparse
import http.client
import json
import statistics
import tempfile
import time
from pathlib import Path

from local_stack.harness import StackProcess

_BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per code and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (median taken)")
    parser.add_argument("--api-port", default="0", help="the stack's API port (0: a free one)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-gone-") as folder:
        stack = StackProcess(
            ["--api-port", options.api_port, "--aws-port", "0", "--no-persist", "--data-dir", folder],
            Path(folder) / "stack.log",
        )
        info = stack.launch()
        try:
            live, gone = _rates(info, options.requests, options.rounds)
        finally:
            stack.stop()
    print(f"301 (live link)     {live:8.0f} redirects/s")
    print(f"410 (disabled link) {gone:8.0f} answers/s")
    print(f"410 / 301 rate      {gone / live:8.2f} (target >= 1: a takedown is no slow path)")


def _rates(info: dict, requests: int, rounds: int) -> tuple[float, float]:
    port = int(info["api_url"].rstrip("/").rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    key = {"X-Api-Key": info["api_key"]} if info.get("api_key") else {}

    def call(
        method: str, path: str, body: dict | None = None, headers: dict | None = None
    ) -> tuple[int, bytes]:
        sent = {**key, **(headers or {})}
        if body is not None:
            sent["Content-Type"] = "application/json"
        connection.request(method, path, json.dumps(body) if body is not None else None, sent)
        answer = connection.getresponse()
        return answer.status, answer.read()

    live = json.loads(call("POST", "/", {"url": "https://example.com/bench-live"})[1])["code"]
    gone = json.loads(call("POST", "/", {"url": "https://example.com/bench-gone"})[1])["code"]
    assert call("PATCH", f"/links/{gone}", {"status": "disabled"})[0] == 200

    def rate(code: str, status: int) -> float:
        started = time.perf_counter()
        for _ in range(requests):
            answered, _ = call("GET", f"/{code}", headers={"User-Agent": _BROWSER})
            assert answered == status, answered
        return requests / (time.perf_counter() - started)

    rate(live, 301), rate(gone, 410)  # warm: the function's container, its redirect cache
    lives, gones = [], []
    for number in range(rounds):
        if number % 2:
            gones.append(rate(gone, 410))
            lives.append(rate(live, 301))
        else:
            lives.append(rate(live, 301))
            gones.append(rate(gone, 410))
    connection.close()
    return statistics.median(lives), statistics.median(gones)


if __name__ == "__main__":
    main()
