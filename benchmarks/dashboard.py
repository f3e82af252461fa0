"""The dashboard in a browser with many links: time to a usable first view (the links table drawn,
then its click counts and sparklines) and time for a search typed in the box to show a link made
before all the others (issue 32).

    python -m benchmarks dashboard [--links 100000] [--rounds 3] [--api-port 0]

Starts a local stack (no data kept) on free ports, makes one link with a word of its own and then
``--links`` more through POST /links/bulk (1,000 a call), then drives Debian's headless chromium
through chromium-driver (as tests/e2e/test_page_browser.py does). Each wait is bounded (60 s).
"""

import argparse
import json
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from local_stack.harness import StackProcess

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT_SECONDS = 60
WORD = "zanzibar"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=100_000, help="links made after the searched one")
    parser.add_argument("--rounds", type=int, default=3, help="page loads and searches (median taken)")
    parser.add_argument("--api-port", default="0", help="the stack's API port (0: a free one)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as folder:
        stack = StackProcess(
            ["--api-port", options.api_port, "--aws-port", "0", "--no-persist", "--data-dir", folder],
            Path(folder) / "stack.log",
        )
        info = stack.launch()
        try:
            made = _make_links(info, options.links)
            figures = _measure(info, options.rounds)
        finally:
            stack.stop()
    print(f"links in the stack                 {options.links + 1:>9,}  (made in {made:.0f} s)")
    for name, seconds in figures.items():
        shown = "not within 60 s" if seconds is None else f"{seconds:9.2f} s"
        print(f"{name:<34} {shown}")


def _call(info: dict[str, Any], method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        info["api_url"].rstrip("/") + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json", "X-Api-Key": info["api_key"]},
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.loads(answer.read())


def _make_links(info: dict[str, Any], count: int) -> float:
    started = time.monotonic()
    _call(info, "POST", "/", {"url": f"https://example.com/{WORD}/label", "title": "Zanzibar label"})
    for first in range(0, count, 1000):
        links = [{"url": f"https://example.com/bench/{n}"} for n in range(first, min(count, first + 1000))]
        _call(info, "POST", "/links/bulk", {"links": links})
    return time.monotonic() - started


def _measure(info: dict[str, Any], rounds: int) -> dict[str, float | None]:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,800"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))

    def until(condition: Any) -> float | None:
        started = time.monotonic()
        try:
            WebDriverWait(driver, WAIT_SECONDS, poll_frequency=0.02).until(lambda _: condition())
        except TimeoutException:
            return None
        return time.monotonic() - started

    # Read in the page in one script each (the rows are redrawn as their counts arrive).
    drawn_js = "return document.querySelectorAll('#links-list tr').length > 0"
    counted_js = (
        drawn_js
        + " && ![...document.querySelectorAll('#links-list .count')].some((c) => c.textContent === '\u2026')"
    )
    found_js = "return document.getElementById('links-list').textContent.includes('Zanzibar label')"
    times: dict[str, list[float | None]] = {
        "first view: table drawn": [],
        "first view: clicks drawn": [],
        "search typed: link shown": [],
    }
    try:
        driver.get(info["api_url"])
        driver.execute_script("localStorage.setItem('shortener.apiKey', arguments[0])", info["api_key"])
        for _ in range(rounds):
            started = time.monotonic()
            driver.get(info["api_url"])
            drawn = until(lambda: driver.execute_script(drawn_js))
            times["first view: table drawn"].append(None if drawn is None else time.monotonic() - started)
            counted = until(lambda: driver.execute_script(counted_js))
            times["first view: clicks drawn"].append(None if counted is None else time.monotonic() - started)
            started = time.monotonic()
            driver.find_element(By.ID, "links-q").send_keys(WORD)
            # The debounce (300 ms) is part of what a person waits for.
            found = until(lambda: driver.execute_script(found_js))
            times["search typed: link shown"].append(None if found is None else time.monotonic() - started)
    finally:
        driver.quit()
    return {
        name: (None if None in values else statistics.median(v for v in values if v is not None))
        for name, values in times.items()
    }
