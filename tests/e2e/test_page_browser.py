"""The index page in a real browser: Debian's chromium, headless, driven by selenium through
Debian's chromium-driver (no browser is downloaded). Against the local stack, a person enters their
API key, shortens a link and follows it, uploads a CSV and gets its results, comes back to a job
after a reload; a wrong key, a missing key and a key over its limit each get a clear message.

Screenshots of each step are kept in test-artifacts/page-browser/ (printed at the end of the
module). Without chromium and chromium-driver the module is skipped, saying how to install them."""

import base64
import contextlib
import http.server
import io
import json
import os
import re
import shutil
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shortener.webhooks.signing import verify
from shortener_cli.client import ShortenerClient
from tests.e2e.conftest import PROJECT_ROOT, RunningStack, StartStack
from tests.e2e.test_access_e2e import create_key
from tests.support.webhooks import webhook_receiver

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "page-browser"
WRONG_KEY = "shk_0123456789ab_" + "A" * 43
# Bounds of a hang on a loaded 2-core CI, not expectations.
STEP_SECONDS = 30
JOB_SECONDS = 150

if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
    pytest.skip(
        f"no browser: {CHROMIUM} and {CHROMEDRIVER} are needed for the page's browser test "
        "(apt-get install chromium chromium-driver; .ci/run installs them)",
        allow_module_level=True,
    )

import zxingcpp  # noqa: E402
from PIL import Image  # noqa: E402
from selenium import webdriver  # noqa: E402 (only with a browser to drive)
from selenium.common.exceptions import (  # noqa: E402
    NoAlertPresentException,
    StaleElementReferenceException,
    TimeoutException,
)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

# What a wait looks past besides an element not there yet: one the page re-rendered between being
# found and being read (a stale reference), as when signing out or a list's refresh replaces it.
RERENDERED = (StaleElementReferenceException,)

LANDING_PAGE = b"<!doctype html><title>Landed</title><h1>The long link's page</h1>"


class Landing(http.server.BaseHTTPRequestHandler):
    """The long link's target: a page of its own on another loopback port."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(LANDING_PAGE)))
        self.end_headers()
        self.wfile.write(LANDING_PAGE)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture(scope="module")
def landing() -> Iterator[str]:
    """The port of a small web server on 127.0.0.1 that the test's long links point to."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Landing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield str(server.server_address[1])
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def artifacts(request: pytest.FixtureRequest) -> Iterator[Path]:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    yield ARTIFACTS
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"\npage screenshots: {ARTIFACTS}")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """Headless chromium with a new, empty profile."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(STEP_SECONDS)
    yield driver
    driver.quit()


Snap = Callable[[str], None]


@pytest.fixture
def snap(browser: WebDriver, artifacts: Path, request: pytest.FixtureRequest) -> Snap:
    """Saves a screenshot named after the test and the step."""
    steps = iter(range(1, 100))
    test = request.node.name.removeprefix("test_")

    def take(step: str) -> None:
        # The whole page, not only the window: the lists are below the fold.
        size = browser.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]  # type: ignore[attr-defined]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = browser.execute_cdp_cmd(  # type: ignore[attr-defined]
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
        )
        (artifacts / f"{test}-{next(steps):02d}-{step}.png").write_bytes(base64.b64decode(shot["data"]))

    return take


def open_page(browser: WebDriver, stack: RunningStack, key: str | None = None) -> None:
    """The page as a first visit sees it (nothing kept in the browser), or with ``key`` kept."""
    browser.get(stack.api_url)
    browser.execute_script("localStorage.clear(); sessionStorage.clear()")
    if key is not None:
        browser.execute_script("localStorage.setItem('shortener.apiKey', arguments[0])", key)
    browser.get(stack.api_url)


def goto(browser: WebDriver, view: str) -> None:
    """One of the page's views, as a click in its navigation (or a bookmark) opens it."""
    browser.execute_script("location.hash = arguments[0]", f"#/{view}")
    settled(browser).until(
        lambda _: browser.find_element(
            By.CSS_SELECTOR, f'.view[data-view="{view.split("/", maxsplit=1)[0]}"]'
        ).is_displayed()
    )


def open_link_page(browser: WebDriver, short_url: str) -> None:
    """A link's page, opened from its row's Details link in the links table."""
    settled(browser).until(
        lambda _: (
            browser.find_element(By.CSS_SELECTOR, f'a[aria-label="Details of {short_url}"]').click() or True
        )
    )
    # Drawn whole (its report and QR code), so that nothing moves under a click.
    settled(browser).until(
        lambda _: (
            browser.find_element(By.ID, "link-body").is_displayed()
            and browser.find_element(By.ID, "view-link").get_attribute("aria-busy") is None
        )
    )


def targets(browser: WebDriver) -> list[str]:
    """The whole destination URLs of the links shown (each row shows it shortened, whole in its title)."""
    (titles,) = settled(browser).until(
        lambda _: (
            [
                span.get_attribute("title")
                for span in browser.find_elements(By.CSS_SELECTOR, "#links-list tr .target span")
            ],
        )
    )
    return titles


def visible_text(browser: WebDriver, element_id: str, seconds: float = STEP_SECONDS) -> str:
    """The text of an element once it is shown (polled until the deadline)."""
    element = browser.find_element(By.ID, element_id)
    WebDriverWait(browser, seconds, ignored_exceptions=RERENDERED).until(
        lambda _: element.is_displayed() and element.text.strip()
    )
    return str(element.text)


def enter_key(browser: WebDriver, key: str) -> None:
    # Where sign-in is set up, it is the first choice and the key form opens on asking.
    other_choice = browser.find_element(By.ID, "key-instead")
    if other_choice.is_displayed() and other_choice.get_attribute("aria-expanded") == "false":
        other_choice.click()
    browser.find_element(By.ID, "api-key").send_keys(key)
    browser.find_element(By.ID, "key-save").click()


def asks_for_a_key(message: str) -> bool:
    """Whether ``message`` says that the request needs a key (or, where sign-in is set up, a sign-in)."""
    return "needs an API key" in message or "needs you to sign in" in message


def kept_key(browser: WebDriver) -> str | None:
    return browser.execute_script("return localStorage.getItem('shortener.apiKey')")  # type: ignore[no-any-return]


def shorten(browser: WebDriver, url: str) -> None:
    field = browser.find_element(By.ID, "url")
    field.clear()
    field.send_keys(url)
    browser.find_element(By.CSS_SELECTOR, "#shorten button[type=submit]").click()


def test_a_wrong_key_is_refused_with_a_clear_message(
    browser: WebDriver, stack: RunningStack, snap: Snap
) -> None:
    # Given a first visit
    open_page(browser, stack)
    snap("first-visit")
    # When a wrong key is entered
    enter_key(browser, WRONG_KEY)
    # Then the page says that the key was refused, keeps no key and asks again
    message = visible_text(browser, "key-error")
    snap("wrong-key")
    assert "refused" in message and "wrong" in message, message
    assert kept_key(browser) is None
    assert browser.find_element(By.ID, "api-key").is_displayed()


def test_shortening_without_a_key_says_a_key_is_needed(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given a visit with no key entered
    open_page(browser, stack)
    # When a link is shortened
    shorten(browser, f"http://localhost:{landing}/no-key")
    # Then the page says that an API key is needed, and where to enter it
    message = visible_text(browser, "error")
    snap("no-key")
    assert asks_for_a_key(message), message


def test_a_key_then_a_short_link_that_leads_to_its_page(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given a first visit where the person enters their key
    open_page(browser, stack)
    assert stack.api_key
    enter_key(browser, stack.api_key)
    assert "Using the key" in visible_text(browser, "key-saved")
    assert kept_key(browser) == stack.api_key
    snap("key-entered")
    # When a link is shortened
    long_url = f"http://localhost:{landing}/landing?from=page"
    shorten(browser, long_url)
    short_url = visible_text(browser, "short")
    snap("shortened")
    # Then the short link is shown, and listed with the caller's recent links
    assert short_url.startswith(stack.edge_url), short_url
    settled(browser).until(lambda _: short_url in browser.find_element(By.ID, "links-list").text)
    assert long_url in targets(browser)
    snap("listed")
    # And following it leads to the long link's page
    browser.find_element(By.ID, "short").click()
    settled(browser).until(lambda _: browser.title == "Landed")
    assert browser.current_url == long_url
    snap("followed")


def test_the_copy_button_puts_the_short_link_on_the_clipboard(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given a short link made on the page, and a browser that lets the page use the clipboard
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    origin = stack.api_url.rstrip("/")
    browser.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Browser.grantPermissions",
        {"origin": origin, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
    )
    shorten(browser, f"http://localhost:{landing}/copied")
    short_url = visible_text(browser, "short")
    # When its copy button is pressed
    browser.find_element(By.ID, "copy").click()
    # Then the button says so and the clipboard holds the short link
    settled(browser).until(lambda _: browser.find_element(By.ID, "copy").text == "Copied")
    snap("copied")
    clipboard = browser.execute_async_script(
        "navigator.clipboard.readText().then(arguments[0], (e) => arguments[0]('error: ' + e))"
    )
    assert clipboard == short_url


def test_a_listed_link_shows_its_qr_code_with_downloads(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given a short link made on the page with a key
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    shorten(browser, f"http://localhost:{landing}/printed")
    short_url = visible_text(browser, "short")
    settled(browser).until(lambda _: short_url in browser.find_element(By.ID, "links-list").text)
    # When its page is opened from the links table
    open_link_page(browser, short_url)
    item = browser.find_element(By.ID, "link-qr")
    settled(browser).until(lambda _: item.find_elements(By.CSS_SELECTOR, "img"))
    image = item.find_element(By.CSS_SELECTOR, "img")
    settled(browser).until(
        lambda _: browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image)
    )
    snap("qr-code")
    # Then the image shown is the short URL's QR code, named for people using a screen reader
    assert image.is_displayed()
    assert image.get_attribute("alt") == f"QR code of {short_url}"
    png = base64.b64decode(
        browser.execute_async_script(
            "const done = arguments[1];"
            "fetch(arguments[0].src).then((r) => r.blob()).then((b) => {"
            " const reader = new FileReader(); reader.onload = () => done(reader.result.split(',')[1]);"
            " reader.readAsDataURL(b); });",
            image,
        )
    )
    assert [found.text for found in zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))] == [short_url]
    # And it offers the PNG and the SVG to save
    downloads = {a.get_attribute("download") for a in item.find_elements(By.CSS_SELECTOR, "a[download]")}
    code = short_url.rsplit("/", 1)[1]
    assert downloads == {f"{code}.png", f"{code}.svg"}


def test_the_browser_checks_a_custom_code_before_sending_it(browser: WebDriver, stack: RunningStack) -> None:
    # Given the page (its pattern attribute is compiled by the browser with the `v` flag)
    open_page(browser, stack)
    code = browser.find_element(By.ID, "code")
    # When a code with a space and a "!" is typed, and then a valid one
    code.send_keys("bad code!")
    refused = browser.execute_script("return arguments[0].validity.patternMismatch", code)
    code.clear()
    code.send_keys("good-code_1")
    accepted = browser.execute_script("return arguments[0].validity.valid", code)
    # Then the browser refuses the first (a skipped, invalid pattern would accept anything)
    assert refused is True
    assert accepted is True


def test_a_csv_upload_shows_progress_and_its_results(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap, tmp_path: Path
) -> None:
    # Given a person with their key on the page, and a CSV of links (one of them invalid)
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    rows = [f"http://localhost:{landing}/bulk/{number}" for number in range(40)] + ["not a url"]
    csv_file = tmp_path / "links.csv"
    csv_file.write_text("url\n" + "\n".join(rows) + "\n", encoding="utf-8")
    goto(browser, "uploads")
    # What the page shows and keeps is recorded as it happens (no timing assumptions).
    browser.execute_script(
        """
        window.seen = {disabled: false, statuses: [], kept: []};
        const button = document.getElementById("bulk-submit");
        new MutationObserver(() => { if (button.disabled) window.seen.disabled = true; })
          .observe(button, {attributes: true});
        const status = document.getElementById("bulk-status");
        new MutationObserver(() => window.seen.statuses.push(status.textContent))
          .observe(status, {childList: true, characterData: true, subtree: true});
        const setItem = Storage.prototype.setItem;
        Storage.prototype.setItem = function (name, value) {
          window.seen.kept.push([name, value]); return setItem.call(this, name, value);
        };
        """
    )
    # When it is uploaded
    browser.find_element(By.ID, "bulk-file").send_keys(str(csv_file))
    browser.find_element(By.ID, "bulk-submit").click()
    snap("uploading")
    # Then progress is shown until every row is done, and the results link appears
    WebDriverWait(browser, JOB_SECONDS, poll_frequency=0.5, ignored_exceptions=RERENDERED).until(
        lambda _: browser.find_element(By.ID, "bulk-results").is_displayed()
    )
    snap("results")
    seen = browser.execute_script("return window.seen")
    assert seen["disabled"] is True, "the upload button was not disabled during the upload"
    assert any(re.search(r"\d+ of 41 rows", text) for text in seen["statuses"]), seen["statuses"]
    assert (
        "Done: 41 of 41 rows (40 shortened, 1 with errors)" in browser.find_element(By.ID, "bulk-status").text
    )
    kept_jobs = [value for name, value in seen["kept"] if name == "shortener.job"]
    assert len(kept_jobs) == 1, seen["kept"]
    # And the results link holds one line per row, in order
    results = browser.execute_async_script(
        "fetch(document.getElementById('bulk-results').href).then((r) => r.text()).then(arguments[0])"
    )
    lines = results.strip().splitlines()
    assert lines[0] == "row,url,code,short_url,error"
    assert len(lines) == 1 + len(rows)
    assert rows[0] in lines[1] and "not a url" in lines[-1]
    # And the job is listed with the caller's uploads, no longer followed after a reload
    assert kept_jobs[0] in browser.find_element(By.ID, "jobs-list").text
    assert browser.execute_script("return localStorage.getItem('shortener.job')") is None


def test_a_job_followed_before_a_reload_resumes_its_progress(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given a job the page was following when the person reloaded it
    rows = "".join(f"http://localhost:{landing}/resumed/{number}\n" for number in range(20))
    accepted = stack.request("POST", "bulk", "url\n" + rows, {"Content-Type": "text/csv"})
    assert accepted.status == 202, accepted.text
    job_id = accepted.json()["job_id"]
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    goto(browser, "uploads")
    browser.execute_script("localStorage.setItem('shortener.job', arguments[0])", job_id)
    # When the page is loaded again
    browser.refresh()
    # Then it shows that job's progress through to its results
    WebDriverWait(browser, JOB_SECONDS, poll_frequency=0.5, ignored_exceptions=RERENDERED).until(
        lambda _: browser.find_element(By.ID, "bulk-results").is_displayed()
    )
    snap("resumed")
    assert "20 of 20 rows" in browser.find_element(By.ID, "bulk-status").text
    # and its uploads list (a request of its own, answered after the progress or before) names it
    settled(browser).until(lambda _: job_id in browser.find_element(By.ID, "jobs-list").text)


def test_the_page_fits_a_phone_and_labels_every_field(
    browser: WebDriver, stack: RunningStack, snap: Snap
) -> None:
    # Given a phone-sized window, and a link with a long URL, a title and tags
    assert stack.api_key
    long_url = "https://example.com/phone/" + "a-rather-long-path-segment/" * 6
    created = stack.post_json("/", {"url": long_url, "title": "Phone check", "tags": ["phone", "layout"]})
    assert created.status in (200, 201), created.text
    size = browser.get_window_size()
    browser.set_window_size(390, 844)
    try:
        # When each view is shown with a key and its lists, the link's page with its edit form
        open_page(browser, stack, stack.api_key)
        link_item(browser, created.json()["short_url"])
        shown = {}
        for view in ("links", "uploads", "overview", "link"):
            if view == "link":
                goto(browser, "links")
                open_link_page(browser, created.json()["short_url"])
            else:
                goto(browser, view)
            snap(f"phone-{view}")
            # Then nothing is wider than the screen, and every field has a label, every button a name
            shown[view] = browser.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth,"
                " [...document.querySelectorAll('input, select')].filter((i) => !i.labels.length"
                "   && !i.getAttribute('aria-label')).map((i) => i.id || i.name),"
                " [...document.querySelectorAll('button')].filter((b) => !b.textContent.trim()).length]"
            )
    finally:
        browser.set_window_size(size["width"], size["height"])
    for view, (scroll_width, client_width, unlabelled, unnamed) in shown.items():
        assert scroll_width <= client_width, (view, scroll_width, client_width)
        assert unlabelled == [], view
        assert unnamed == 0, view


@pytest.mark.e2e_timeout(300)
def test_a_key_over_its_limit_gets_a_clear_message(
    browser: WebDriver, start_stack: StartStack, landing: str, snap: Snap
) -> None:
    # Given a stack whose keys may make three requests a day
    limited = start_stack(params={"KeyRateLimit": 1, "KeyBurstLimit": 1, "KeyDailyQuota": 3})
    assert limited.api_key
    open_page(browser, limited, limited.api_key)
    # When the person shortens links past that limit
    message = ""
    for number in range(6):
        shorten(browser, f"http://localhost:{landing}/limited/{number}")
        with contextlib.suppress(TimeoutException):
            settled(browser).until(
                lambda _: (
                    browser.find_element(By.ID, "error").is_displayed()
                    or browser.find_element(By.ID, "result").is_displayed()
                )
            )
        error = browser.find_element(By.ID, "error")
        if error.is_displayed():
            message = error.text
            break
    snap("over-limit")
    # Then the page says that the key is over its limit, and keeps the key
    assert re.search(r"Too Many Requests|Limit Exceeded", message), message
    assert kept_key(browser) == limited.api_key


def test_a_file_above_4_mb_goes_from_the_browser_straight_to_storage(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap, tmp_path: Path
) -> None:
    # Given a person with their key on the page, and a CSV above the 4 MB that the API takes in a
    # body (few rows, each with a wide column that the job ignores)
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    rows = [f"http://localhost:{landing}/big/{number}" for number in range(100)]
    padding = "x" * 45_000
    csv_file = tmp_path / "catalogue.csv"
    csv_file.write_text("url,note\n" + "".join(f"{row},{padding}\n" for row in rows), encoding="utf-8")
    assert csv_file.stat().st_size > 4_000_000
    goto(browser, "uploads")
    # When it is uploaded
    browser.find_element(By.ID, "bulk-file").send_keys(str(csv_file))
    browser.find_element(By.ID, "bulk-submit").click()
    # Then the browser sends it to the presigned URL (the storage's CORS answers it), the job reads
    # it, and its results file is linked
    WebDriverWait(browser, JOB_SECONDS, poll_frequency=0.5, ignored_exceptions=RERENDERED).until(
        lambda _: (
            browser.find_element(By.ID, "bulk-results").is_displayed()
            or browser.find_element(By.ID, "bulk-error").is_displayed()
        )
    )
    snap("results")
    error = browser.find_element(By.ID, "bulk-error")
    assert not error.is_displayed(), (error.text, browser.get_log("browser"))
    assert (
        "Done: 100 of 100 rows (100 shortened, 0 with errors)"
        in browser.find_element(By.ID, "bulk-status").text
    )
    assert browser.find_element(By.ID, "bulk-upload-label").text.startswith("Uploading")
    # And the results file, a presigned download from storage, holds one line per row
    href = browser.find_element(By.ID, "bulk-results").get_attribute("href")
    assert href is not None and "X-Amz-Signature=" in href, href
    results = browser.execute_async_script(
        "fetch(arguments[0]).then((r) => r.text(), (e) => 'error: ' + e).then(arguments[1])", href
    )
    lines = results.strip().splitlines()
    assert lines[0] == "row,url,code,short_url,error", lines[:2]
    assert len(lines) == 1 + len(rows)
    assert all(row in line for row, line in zip(rows, lines[1:], strict=True))


def test_a_links_clicks_are_drawn_as_inline_svg_with_its_top_countries(
    browser: WebDriver, stack: RunningStack, snap: Snap
) -> None:
    # Given a link followed twice by a browser, counted by the collector
    created = stack.post_json("/", {"url": "https://example.com/page-clicks", "code": "page-clicks"})
    assert created.status in (200, 201), created.text
    agent = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"}
    for _ in range(2):
        assert stack.request("GET", "page-clicks", headers=agent, api_key=None).status == 301
    WebDriverWait(browser, 90, poll_frequency=0.5, ignored_exceptions=RERENDERED).until(
        lambda _: stack.request("GET", "links/page-clicks/clicks").json()["total"] == 2
    )
    # When the person opens the link's page from the links table
    open_page(browser, stack, stack.api_key)
    short_url = created.json()["short_url"]
    open_link_page(browser, short_url)
    # Then the chart is drawn in the page (an SVG bar per day of the last 30, no other origin)
    assert visible_text(browser, "clicks-summary").startswith("2 clicks in the last 30 days: 2 by people")
    bars = browser.find_elements(By.CSS_SELECTOR, "#clicks-chart rect")
    assert len(bars) == 31
    assert sum(float(bar.get_attribute("height") or 0) > 0 for bar in bars) == 1
    # And the top countries (local requests come from 127.0.0.1: unknown) and referrers are listed
    assert browser.find_element(By.ID, "clicks-countries").text == "unknown: 2"
    assert browser.find_element(By.ID, "clicks-referrers").text == "Not recorded"
    # And which rule answered: a plain link's clicks are all its default destination
    assert browser.find_element(By.ID, "clicks-destinations").text == "default: 2"
    # And the chart's axes are labelled, with dates under the bars
    labels = [text.text for text in browser.find_elements(By.CSS_SELECTOR, "#clicks-chart text")]
    assert "Clicks per day" in labels and "Day (UTC)" in labels
    assert sum(bool(re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}", label)) for label in labels) >= 4, labels
    assert "time zone" in browser.find_element(By.ID, "clicks-tz").text
    snap("clicks")
    # And every label lies within the chart at a desktop's and a phone's width (the last date was cut)
    size = browser.get_window_size()
    try:
        for width, height in ((1280, 800), (390, 844)):
            browser.set_window_size(width, height)
            outside = browser.execute_script(
                "const chart = document.getElementById('clicks-chart'), box = chart.getBoundingClientRect();"
                "return [...chart.querySelectorAll('text')].filter((label) => {"
                " const r = label.getBoundingClientRect();"
                " return r.left < box.left - 0.5 || r.right > box.right + 0.5;"
                "}).map((label) => label.textContent);"
            )
            assert outside == [], (width, outside)
    finally:
        browser.set_window_size(size["width"], size["height"])
    # And its bars are read by keyboard: on the focused chart End reads the last day, Left the one before
    browser.execute_script("document.getElementById('clicks-chart').focus()")
    ActionChains(browser).send_keys(Keys.END).perform()
    assert re.fullmatch(r".+: 2 clicks \(2 by people\)\.", visible_text(browser, "clicks-readout"))
    ActionChains(browser).send_keys(Keys.ARROW_LEFT).perform()
    settled(browser).until(
        lambda _: browser.find_element(By.ID, "clicks-readout").text.endswith(": 0 clicks (0 by people).")
    )
    assert len(browser.find_elements(By.CSS_SELECTOR, "#clicks-chart rect.current")) == 1
    # And the range is chosen by keyboard: the next option of the range, 90 days, is drawn
    browser.find_element(By.ID, "clicks-days").send_keys(Keys.ARROW_DOWN)
    settled(browser).until(
        lambda _: "in the last 90 days" in browser.find_element(By.ID, "clicks-summary").text
    )
    snap("clicks-keyboard")
    # And a breakdown by browser lists the clicks with their visitors, and the clicks are exported
    Select(browser.find_element(By.ID, "clicks-group")).select_by_value("browser")
    settled(browser).until(lambda _: browser.find_element(By.ID, "clicks-groups").is_displayed())
    cells = [
        [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        for row in browser.find_elements(By.CSS_SELECTOR, "#clicks-groups tbody tr")
    ]
    assert sum(int(cell[1]) for cell in cells) == 2 and all(int(cell[3]) >= 1 for cell in cells), cells
    browser.find_element(By.ID, "clicks-export").click()
    settled(browser).until(lambda _: "Saved" in browser.find_element(By.ID, "clicks-export-status").text)
    assert browser.find_element(By.ID, "clicks-export-status").text.endswith("-clicks.csv.")
    # as CSV by default, or in the format chosen beside the button
    Select(browser.find_element(By.ID, "clicks-export-format")).select_by_value("parquet")
    browser.find_element(By.ID, "clicks-export").click()
    settled(browser).until(
        lambda _: browser.find_element(By.ID, "clicks-export-status").text.endswith("-clicks.parquet.")
    )
    snap("clicks-breakdown")
    # And back in the links table, its row shows the 2 clicks with a sparkline of the 30 days
    browser.back()
    row = link_item(browser, short_url)
    settled(browser).until(lambda _: row.find_element(By.CSS_SELECTOR, ".clicks .count").text == "2")
    assert row.find_elements(By.CSS_SELECTOR, ".clicks svg.spark polyline")
    snap("table")


# --- Managing links and uploads ---


def wait_job_done(stack: RunningStack, job_id: str) -> dict[str, Any]:
    """The job's status once it is done (polled until JOB_SECONDS)."""
    deadline = time.monotonic() + JOB_SECONDS
    while (job := stack.request("GET", f"jobs/{job_id}").json())["status"] != "done":
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    return dict(job)


def upload_rows(stack: RunningStack, urls: list[str]) -> str:
    """A job of ``urls`` through POST /bulk, done; its id."""
    accepted = stack.request(
        "POST", "bulk", "url\n" + "".join(f"{url}\n" for url in urls), {"Content-Type": "text/csv"}
    )
    assert accepted.status == 202, accepted.text
    job_id = str(accepted.json()["job_id"])
    wait_job_done(stack, job_id)
    return job_id


def settled(browser: WebDriver) -> WebDriverWait:
    """A wait that reads again when the page replaced an element while it was being read (the
    lists are re-rendered after every change; under load a read can fall between the two)."""
    return WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=RERENDERED)


def listed(browser: WebDriver) -> list[str]:
    """The short URLs the list shows, in order (read again if the list was replaced meanwhile)."""
    (texts,) = settled(browser).until(
        lambda _: ([a.text for a in browser.find_elements(By.CSS_SELECTOR, "#links-list tr .head a")],)
    )
    return texts


def link_item(browser: WebDriver, short_url: str) -> Any:
    """The list item of ``short_url`` (waited for)."""
    return settled(browser).until(
        lambda _: next(
            (tr for tr in browser.find_elements(By.CSS_SELECTOR, "#links-list tr") if short_url in tr.text),
            None,
        )
    )


def upload_item(browser: WebDriver, job_id: str) -> Any:
    """The uploads view's item of ``job_id`` (waited for)."""
    return settled(browser).until(
        lambda _: next(
            (li for li in browser.find_elements(By.CSS_SELECTOR, "#jobs-list li") if job_id in li.text),
            None,
        )
    )


def search(browser: WebDriver, q: str = "", tag: str = "", job_id: str = "") -> None:
    for field, value in (("links-q", q), ("links-tag", tag)):
        element = browser.find_element(By.ID, field)
        element.clear()
        element.send_keys(value)
    browser.execute_script("document.getElementById('links-job').value = arguments[0]", job_id)
    browser.execute_script("window.listed = document.getElementById('links-list').firstChild")
    browser.find_element(By.CSS_SELECTOR, "#links-filter button[type=submit]").click()
    # The answer replaced the list (or emptied it).
    settled(browser).until(
        lambda _: browser.execute_script(
            "const first = document.getElementById('links-list').firstChild;"
            "return first === null ? !document.getElementById('links-empty').hidden : first !== window.listed"
        )
    )


def test_links_are_searched_by_title_and_filtered_by_tag_and_by_upload(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given links with titles and tags, and an upload of three rows, made through the API
    def made(url: str, **fields: Any) -> str:
        answer = stack.post_json("/", {"url": url, **fields})
        assert answer.status in (200, 201), answer.text
        return str(answer.json()["short_url"])

    flyer = made(f"http://localhost:{landing}/search/1", title="Zebra flyer", tags=["zebra", "print"])
    poster = made(f"http://localhost:{landing}/search/2", title="Zebra poster", tags=["print"])
    other = made(f"http://localhost:{landing}/search/3", title="Lion", tags=["zebra"])
    rows = [f"http://localhost:{landing}/search-job/{number}" for number in range(3)]
    job_id = upload_rows(stack, rows)
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    link_item(browser, other)
    # When the person searches for a word of two titles and a third link's tag
    search(browser, q="Zebra")
    snap("searched")
    # Then exactly those three are listed, with their titles, tags, status and creation date
    assert sorted(listed(browser)) == sorted([flyer, poster, other])
    text = link_item(browser, flyer).text
    assert "Zebra flyer" in text and "print, zebra" in text and "Active" in text
    assert link_item(browser, flyer).find_element(By.CSS_SELECTOR, ".created time").get_attribute("datetime")
    assert "3 links" in browser.find_element(By.ID, "links-summary").text
    # And a tag, and then an upload (chosen by its name in the list of uploads), narrow it so
    search(browser, tag="zebra")
    assert sorted(listed(browser)) == sorted([flyer, other])
    settled(browser).until(
        lambda _: browser.find_elements(By.CSS_SELECTOR, f'#links-job option[value="{job_id}"]')
    )
    search(browser, job_id=job_id)
    snap("by-upload")
    assert len(listed(browser)) == 3 and sorted(targets(browser)) == rows
    # And "Show all" brings every link back
    browser.find_element(By.ID, "links-clear").click()
    link_item(browser, other)
    assert browser.find_element(By.ID, "links-summary").text == ""


def test_a_links_target_title_tags_and_expiry_are_edited_on_its_page(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given a link on the page
    created = stack.post_json("/", {"url": f"http://localhost:{landing}/before-edit"}).json()
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    link_item(browser, created["short_url"])
    # When its page's form is filled in with a new target, title, tags, expiry and limit and saved
    open_link_page(browser, created["short_url"])
    form = browser.find_element(By.CSS_SELECTOR, "#link-edit form")
    for name, value in (
        ("url", f"http://localhost:{landing}/after-edit"),
        ("title", "Summer labels"),
        ("tags", "summer, labels"),
        ("max_clicks", "500"),
        ("ios_url", "https://apps.apple.com/app/id1"),
        ("utm_source", "labels"),
    ):
        field = form.find_element(By.NAME, name)
        field.clear()
        field.send_keys(value)
    # (a datetime-local field is typed in the browser's own locale: its value is set as a picker would)
    browser.execute_script(
        "arguments[0].value = '2031-05-01T09:30'", form.find_element(By.NAME, "expires_at")
    )
    snap("editing")
    # (sent from the keyboard, Enter in a field, as a keyboard user does)
    form.find_element(By.NAME, "title").send_keys(Keys.ENTER)
    # Then the page shows what the API kept, and the link has it
    settled(browser).until(lambda _: "Summer labels" in browser.find_element(By.ID, "link-details").text)
    snap("edited")
    text = browser.find_element(By.ID, "link-details").text
    assert f"http://localhost:{landing}/after-edit" in text and "labels, summer" in text
    assert "2031" in text and "500 of 500 clicks left" in text
    assert "iPhone/iPad → https://apps.apple.com/app/id1" in text and "utm_source=labels" in text
    shown = stack.request("GET", f"links/{created['code']}").json()
    expected = browser.execute_script("return new Date('2031-05-01T09:30').toISOString()")
    assert (shown["url"], shown["title"], shown["tags"], shown["max_clicks"]) == (
        f"http://localhost:{landing}/after-edit",
        "Summer labels",
        ["labels", "summer"],
        500,
    )
    assert shown["expires_at"].replace("+00:00", "Z").startswith(expected[:19]), (shown, expected)
    assert (shown["ios_url"], shown["utm"]["source"]) == ("https://apps.apple.com/app/id1", "labels")
    # And an invalid tag is refused in the form, saying why, with the link unchanged
    tags = browser.find_element(By.CSS_SELECTOR, "#link-edit form").find_element(By.NAME, "tags")
    tags.clear()
    tags.send_keys("no spaces allowed")
    tags.send_keys(Keys.ENTER)
    problem = settled(browser).until(
        lambda _: next(
            (p for p in browser.find_elements(By.CSS_SELECTOR, "#link-edit .error") if p.is_displayed()), None
        )
    )
    assert "tags" in problem.text, problem.text
    assert stack.request("GET", f"links/{created['code']}").json()["tags"] == ["labels", "summer"]
    # And Escape undoes what was typed, back on the first field
    tags.send_keys(Keys.ESCAPE)
    field = browser.find_element(By.CSS_SELECTOR, "#link-edit form").find_element(By.NAME, "tags")
    assert field.get_attribute("value") == "labels, summer"
    assert browser.switch_to.active_element.get_attribute("name") == "url"


def test_a_link_is_disabled_enabled_and_deleted_from_the_list(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given a link on the page
    created = stack.post_json("/", {"url": f"http://localhost:{landing}/toggled"}).json()
    code, short_url = created["code"], created["short_url"]
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    # When it is disabled
    link_item(browser, short_url).find_element(By.CSS_SELECTOR, "button.disable").click()
    settled(browser).until(lambda _: "Disabled" in link_item(browser, short_url).text)
    snap("disabled")
    # Then it answers 410 Gone, and the focus stays on its (now Enable) button
    assert stack.request("GET", code, api_key=None).status == 410
    assert browser.switch_to.active_element.get_attribute("aria-label") == f"Enable {short_url}"
    # When it is enabled again, it redirects again
    link_item(browser, short_url).find_element(By.CSS_SELECTOR, "button.enable").click()
    settled(browser).until(lambda _: "Active" in link_item(browser, short_url).text)
    assert stack.request("GET", code, api_key=None).status == 301
    # When its clicks are shown on its page, and then, back in the table, it is deleted (a
    # confirmation first)
    open_link_page(browser, short_url)
    assert visible_text(browser, "clicks-heading") == f"Clicks of {code}"
    browser.back()
    link_item(browser, short_url).find_element(By.CSS_SELECTOR, "button.delete").click()
    confirmation = WebDriverWait(
        browser, STEP_SECONDS, ignored_exceptions=(NoAlertPresentException, *RERENDERED)
    ).until(lambda _: browser.switch_to.alert)
    assert short_url in confirmation.text
    confirmation.accept()
    # Then it leaves the list and answers 410 Gone for good
    settled(browser).until(lambda _: short_url not in listed(browser))
    snap("deleted")
    assert stack.request("GET", f"links/{code}").status == 410
    assert browser.find_element(By.ID, "announce").text == f"Deleted {short_url}."
    # And its page says that it was deleted
    goto(browser, f"link/{code}")
    assert visible_text(browser, "link-error") == f"{code} was deleted: it answers 410 Gone."
    assert not browser.find_element(By.ID, "clicks-panel").is_displayed()


def test_an_upload_that_ended_early_is_listed_by_file_name_with_its_error(
    browser: WebDriver, stack: RunningStack, snap: Snap, tmp_path: Path
) -> None:
    # Given a file uploaded straight to storage whose first line is neither a header nor a URL
    source = tmp_path / "contacts-page.csv"
    source.write_text("Name;Phone\nAda;123\n")
    client = ShortenerClient(stack.api_url, api_key=stack.api_key)
    job = client.start_upload(source.name, source.stat().st_size)
    client.put_file(job["upload"], source, lambda _: None)
    done = wait_job_done(stack, job["job_id"])
    assert done["ended_early"] is True
    # When the person opens the page's uploads
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    goto(browser, "uploads")
    item = upload_item(browser, job["job_id"])
    snap("ended-early")
    # Then the upload is named by its file, and says why it ended early
    assert item.find_element(By.CSS_SELECTOR, ".file").text == "contacts-page.csv"
    assert item.find_element(By.CSS_SELECTOR, ".job-error").text == f"Ended early: {done['error']['message']}"


def test_a_message_that_no_longer_applies_is_cleared(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given a person told that shortening needs a key
    open_page(browser, stack)
    shorten(browser, f"http://localhost:{landing}/stale")
    assert asks_for_a_key(visible_text(browser, "error"))
    # When they enter their key
    assert stack.api_key
    enter_key(browser, stack.api_key)
    visible_text(browser, "key-saved")
    snap("key-entered")
    # Then that message is gone
    assert not browser.find_element(By.ID, "error").is_displayed()


def test_a_jobs_links_are_disabled_then_deleted_from_its_upload(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given an upload of four rows
    rows = [f"http://localhost:{landing}/batch/{number}" for number in range(4)]
    job_id = upload_rows(stack, rows)
    codes = [link["code"] for link in stack.request("GET", f"links?job_id={job_id}").json()["links"]]
    assert len(codes) == 4
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    goto(browser, "uploads")

    def job_item() -> Any:
        return upload_item(browser, job_id)

    # When its links are disabled from the upload's item
    job_item().find_element(By.CSS_SELECTOR, "button.job-disable").click()
    WebDriverWait(browser, JOB_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: job_item().find_element(By.CSS_SELECTOR, ".batch-status").text == "Disabled 4 of 4 links."
    )
    snap("disabled")
    # Then every one answers 410 Gone
    assert [stack.request("GET", code, api_key=None).status for code in codes] == [410] * 4
    # When they are deleted (a confirmation first)
    settled(browser).until(
        lambda _: job_item().find_element(By.CSS_SELECTOR, "button.job-delete").is_enabled()
    )
    job_item().find_element(By.CSS_SELECTOR, "button.job-delete").click()
    WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=(NoAlertPresentException, *RERENDERED)).until(
        lambda _: browser.switch_to.alert
    ).accept()
    WebDriverWait(browser, JOB_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: job_item().find_element(By.CSS_SELECTOR, ".batch-status").text == "Deleted 4 of 4 links."
    )
    # Then they are gone from the owner's links
    assert [stack.request("GET", f"links/{code}").status for code in codes] == [410] * 4


# --- The dashboard: the table's search and selection, an upload's click report, accessibility ---


def test_a_search_typed_in_the_box_finds_a_link_made_500_links_earlier(
    browser: WebDriver, stack: RunningStack, snap: Snap
) -> None:
    # Given a link with a word of its own, and 500 links made after it
    made = stack.post_json(
        "/", {"url": "https://example.com/findme/zanzibar-label", "title": "Zanzibar label"}
    )
    assert made.status in (200, 201), made.text
    newer = stack.post_json(
        "links/bulk", {"links": [{"url": f"https://example.com/newer/{n}"} for n in range(500)]}
    )
    assert newer.status in (200, 201, 207), newer.text
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    settled(browser).until(lambda _: listed(browser))
    # When the word is typed in the search box (no button pressed), in capitals
    browser.find_element(By.ID, "links-q").send_keys("ZANZIB")
    # Then the table shows that link once the typing pauses
    settled(browser).until(lambda _: listed(browser) == [made.json()["short_url"]])
    snap("found")
    assert "1 link" in browser.find_element(By.ID, "links-summary").text


def tagged_links(stack: RunningStack, landing: str, tag: str) -> list[dict[str, Any]]:
    """Three new links with ``tag`` (their POST / answers)."""
    return [
        stack.post_json("/", {"url": f"http://localhost:{landing}/{tag}/{n}", "tags": [tag]}).json()
        for n in range(3)
    ]


def test_three_selected_links_are_disabled_in_one_action(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given three links with a tag of their own
    made = tagged_links(stack, landing, "chosen3")
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    search(browser, tag="chosen3")
    assert sorted(listed(browser)) == sorted(link["short_url"] for link in made)
    # When every link shown is selected and disabled with one button
    browser.find_element(By.ID, "select-all").click()
    assert browser.find_element(By.ID, "selection-count").text == "3 links selected"
    snap("selected")
    browser.find_element(By.ID, "selection-disable").click()
    # Then one batch changes the three, the table says so, and each answers 410 Gone
    WebDriverWait(browser, JOB_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: browser.find_element(By.ID, "selection-status").text == "Disabled 3 of 3 links."
    )
    settled(browser).until(
        lambda _: all("Disabled" in link_item(browser, link["short_url"]).text for link in made)
    )
    snap("disabled")
    assert [stack.request("GET", link["code"], api_key=None).status for link in made] == [410] * 3


def test_all_links_that_match_are_disabled_beyond_the_rows_shown(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given 25 links with a word of their own in the title (more than the 20 rows of a page),
    # and one link without it
    made = stack.post_json(
        "links/bulk",
        {
            "links": [
                {"url": f"http://localhost:{landing}/every/{n}", "title": f"Quetzal {n}"} for n in range(25)
            ]
        },
    )
    assert made.status == 200, made.text
    codes = [outcome["code"] for outcome in made.json()["links"]]
    assert len(codes) == 25 and all(codes), made.text
    other = stack.post_json("/", {"url": f"http://localhost:{landing}/every/other", "title": "Heron"}).json()
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    link_item(browser, other["short_url"])
    search(browser, q="quetzal")
    settled(browser).until(lambda _: len(listed(browser)) == 20 and other["short_url"] not in listed(browser))
    # (counted: the answer's total when the API gives one, else honestly "many")
    count = browser.find_element(By.ID, "links-count").text
    assert count in ("Showing 1\u201320 of 25.", "Showing 1\u201320 of many (more to load)."), count
    # When one row is ticked, all that match are offered (also where the header's box is hidden)
    browser.find_element(By.CSS_SELECTOR, "#links-list input.select").click()
    assert browser.find_element(By.ID, "selection-matches").is_displayed()
    # When every row shown is selected, then all that match, and disabled with one button
    browser.find_element(By.ID, "select-all").click()
    matches = browser.find_element(By.ID, "selection-matches")
    assert matches.is_displayed() and matches.text.startswith("Select all") and "that match" in matches.text
    matches.click()
    assert browser.find_element(By.ID, "selection-count").text.startswith("All ")
    snap("all-that-match")
    browser.find_element(By.ID, "selection-disable").click()
    # Then one batch changes exactly the 25 matches, rows beyond the page included
    WebDriverWait(browser, JOB_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: browser.find_element(By.ID, "selection-status").text == "Disabled 25 of 25 links."
    )
    snap("disabled")
    assert {stack.request("GET", code, api_key=None).status for code in codes} == {410}
    assert stack.request("GET", other["code"], api_key=None).status == 301


def test_the_qr_zip_of_a_selection_holds_one_qr_code_a_selected_link(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given three links with a tag of their own, listed and selected on the page
    made = tagged_links(stack, landing, "zipped3")
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    link_item(browser, made[-1]["short_url"])
    # (the files the page saves are kept for the test to read)
    browser.execute_script(
        "window.saved = []; const make = URL.createObjectURL;"
        "URL.createObjectURL = (blob) => {"
        " const url = make.call(URL, blob); window.saved.push(url); return url; };"
    )
    search(browser, tag="zipped3")
    assert sorted(listed(browser)) == sorted(link["short_url"] for link in made)
    browser.find_element(By.ID, "select-all").click()
    # When "QR ZIP" is pressed
    browser.find_element(By.ID, "selection-qr").click()
    WebDriverWait(browser, JOB_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: browser.find_element(By.ID, "selection-status").text.startswith(
            "Saved the QR codes of 3 links"
        )
    )
    snap("qr-zip")
    # Then the ZIP it saved holds one QR code a selected link, each reading as its short URL
    saved = browser.execute_async_script(
        "const done = arguments[0];"
        "fetch(window.saved.at(-1)).then((r) => r.blob()).then((b) => {"
        " const reader = new FileReader(); reader.onload = () => done(reader.result.split(',')[1]);"
        " reader.readAsDataURL(b); });"
    )
    archive = zipfile.ZipFile(io.BytesIO(base64.b64decode(saved)))
    assert sorted(archive.namelist()) == sorted(f"{link['code']}.png" for link in made)
    for link in made:
        image = Image.open(io.BytesIO(archive.read(f"{link['code']}.png")))
        assert [found.text for found in zxingcpp.read_barcodes(image)] == [link["short_url"]]


def test_an_upload_is_followed_to_its_click_report(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    # Given an upload of four rows, the second followed twice and counted
    rows = [f"http://localhost:{landing}/report/{number}" for number in range(4)]
    job_id = upload_rows(stack, rows)
    codes = [link["code"] for link in stack.request("GET", f"links?job_id={job_id}").json()["links"]]
    second = next(
        link["code"]
        for link in stack.request("GET", f"links?job_id={job_id}").json()["links"]
        if link["url"] == rows[1]
    )
    assert len(codes) == 4
    for _ in range(2):
        assert stack.request("GET", second, api_key=None).status == 301
    WebDriverWait(browser, 90, poll_frequency=0.5, ignored_exceptions=RERENDERED).until(
        lambda _: stack.request("GET", f"links/{second}/clicks").json()["total"] == 2
    )
    assert stack.api_key
    open_page(browser, stack, stack.api_key)
    goto(browser, "uploads")
    # When its click report is opened from the upload's item
    item = upload_item(browser, job_id)
    assert "rows in all" in browser.find_element(By.ID, "jobs-count").text
    item.find_element(By.CSS_SELECTOR, "button.click-report").click()
    summary = settled(browser).until(lambda _: item.find_element(By.CSS_SELECTOR, ".report-summary"))
    snap("click-report")
    # Then it says the share of rows clicked and names the top row, with the report to download
    assert summary.text == "1 of 4 rows clicked (25%), 2 clicks in all (the last 30 days)."
    top = item.find_element(By.CSS_SELECTOR, ".report ol").text
    assert top.startswith("Row ") and top.endswith(f"/{second}: 2"), top
    assert item.find_element(By.CSS_SELECTOR, ".report a[download]").get_attribute("download") == (
        f"{job_id}-clicks.csv"
    )


def axe_findings(browser: WebDriver) -> list[str]:
    """axe-core's serious and critical findings on the page as shown (injected by the test only)."""
    from axe_selenium_python import Axe

    axe = Axe(browser)
    axe.inject()
    results = axe.run()
    return [
        f"{violation['id']} ({violation['impact']}): {[node['target'] for node in violation['nodes']][:5]}"
        for violation in results["violations"]
        if violation["impact"] in ("serious", "critical")
    ]


def axe_on_desktop_and_phone(browser: WebDriver, snap: Snap, name: str) -> dict[int, list[str]]:
    """axe-core's serious and critical findings on the shown view at 1280 and 390 px, by width
    (none: {}); on each, nothing may be wider than the screen."""
    size = browser.get_window_size()
    findings: dict[int, list[str]] = {}
    try:
        for width, height in ((1280, 800), (390, 844)):
            browser.set_window_size(width, height)
            findings[width] = axe_findings(browser)
            widths = browser.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
            )
            assert widths[0] <= widths[1], (width, widths)
            snap(f"{name}-{width}x{height}")
    finally:
        browser.set_window_size(size["width"], size["height"])
    return {width: found for width, found in findings.items() if found}


def test_every_view_passes_the_accessibility_check_on_a_desktop_and_a_phone(
    browser: WebDriver, stack: RunningStack, snap: Snap
) -> None:
    # Given a link with a title and tags, and an upload
    created = stack.post_json(
        "/", {"url": "https://example.com/axe/" + "long-segment/" * 8, "title": "Checked", "tags": ["axe"]}
    ).json()
    upload_rows(stack, ["https://example.com/axe-upload/1"])
    assert stack.api_key
    size = browser.get_window_size()
    findings: dict[str, list[str]] = {}
    try:
        for width, height in ((1280, 800), (390, 844)):
            browser.set_window_size(width, height)
            open_page(browser, stack, stack.api_key)
            link_item(browser, created["short_url"])
            for view in ("links", "link", "uploads", "overview"):
                # When each view is shown
                if view == "link":
                    open_link_page(browser, created["short_url"])
                else:
                    goto(browser, view)
                    if view == "overview":
                        visible_text(browser, "overview-summary")
                snap(f"{view}-{width}x{height}")
                # Then axe-core finds nothing serious or critical
                findings[f"{view} at {width}px"] = axe_findings(browser)
                if view == "link":
                    browser.back()
    finally:
        browser.set_window_size(size["width"], size["height"])
    assert {view: found for view, found in findings.items() if found} == {}


# --- Webhooks ---


@pytest.mark.e2e_timeout(180)
def test_a_webhook_is_added_shows_its_secret_once_and_a_test_delivery_is_listed_as_delivered(
    browser: WebDriver, stack: RunningStack, snap: Snap
) -> None:
    assert stack.api_key
    with webhook_receiver() as receiver:
        hook_url = receiver.url
        # Given a person with their key on the Webhooks view
        open_page(browser, stack, stack.api_key)
        goto(browser, "webhooks")
        settled(browser).until(lambda _: browser.find_element(By.ID, "webhooks-section").is_displayed())
        assert browser.title == "Webhooks \u00b7 Shortener"

        def add(url: str) -> None:
            field = browser.find_element(By.ID, "webhook-url")
            field.clear()
            field.send_keys(url)
            box = browser.find_element(By.ID, "webhook-event-link-created")
            if not box.is_selected():
                box.click()
            browser.find_element(By.ID, "webhook-add").click()

        # When an endpoint the stack may not send to is added, the API's reason is shown
        add("http://10.0.0.1/hook")
        assert "private" in visible_text(browser, "webhook-form-error")
        # When their receiver's URL is added for link.created, with a description
        browser.find_element(By.ID, "webhook-description").send_keys("Page test receiver")
        add(hook_url)
        # Then its signing secret is shown once, with a copy button, saying it will not be shown again
        secret = visible_text(browser, "webhook-secret-value")
        assert secret.startswith("whsec_"), secret
        assert "will not be shown again" in browser.find_element(By.ID, "webhook-secret").text
        assert browser.find_element(By.ID, "webhook-secret-copy").is_displayed()
        assert browser.switch_to.active_element.get_attribute("id") == "webhook-secret-heading"
        assert not browser.find_element(By.ID, "webhook-form-error").is_displayed()
        snap("secret")

        def endpoint() -> Any:
            return settled(browser).until(
                lambda _: next(
                    (
                        li
                        for li in browser.find_elements(By.CSS_SELECTOR, "#webhooks-list > li")
                        if hook_url in li.text
                    ),
                    None,
                )
            )

        # And the endpoint is listed, enabled, with its events
        assert "Enabled" in endpoint().text and "link.created" in endpoint().text
        (listed_by_api,) = [
            hook for hook in stack.request("GET", "webhooks").json()["webhooks"] if hook["url"] == hook_url
        ]
        assert "secret" not in listed_by_api
        # When a test delivery is sent from its item
        endpoint().find_element(By.CSS_SELECTOR, "button.webhook-test").click()
        # Then its deliveries open and, refreshed as it is sent, list it delivered, answered 200
        WebDriverWait(browser, 60, ignored_exceptions=RERENDERED).until(
            lambda _: any(
                "webhook.test" in li.text and "Delivered" in li.text and "response 200" in li.text
                for li in endpoint().find_elements(By.CSS_SELECTOR, ".deliveries li.delivery")
            )
        )
        delivery = endpoint().find_element(By.CSS_SELECTOR, ".deliveries li.delivery")
        assert "answered 200" in delivery.find_element(By.CSS_SELECTOR, "ol.attempts").text
        assert (
            endpoint()
            .find_element(By.CSS_SELECTOR, "button.webhook-deliveries")
            .get_attribute("aria-expanded")
            == "true"
        )
        # And the receiver got it, signed with the secret shown
        headers, body, _ = receiver.deliveries[-1]
        assert headers["shortener-event"] == "webhook.test"
        assert verify(secret, headers["shortener-signature"], body, now=time.time())
        snap("delivered")
        # And axe-core finds nothing serious or critical, on a desktop and on a phone (where nothing
        # is wider than the screen)
        assert axe_on_desktop_and_phone(browser, snap, "webhooks") == {}
        # When the person goes to another view and back, the secret is no longer on the page
        goto(browser, "links")
        goto(browser, "webhooks")
        assert not browser.find_element(By.ID, "webhook-secret").is_displayed()
        assert secret not in browser.page_source
        # When the endpoint is removed (a confirmation first), it leaves the list and the API
        endpoint().find_element(By.CSS_SELECTOR, "button.webhook-remove").click()
        WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=(NoAlertPresentException, *RERENDERED)).until(
            lambda _: browser.switch_to.alert
        ).accept()
        settled(browser).until(lambda _: browser.find_element(By.ID, "webhooks-empty").is_displayed())
        assert hook_url not in [hook["url"] for hook in stack.request("GET", "webhooks").json()["webhooks"]]


# --- The audit log ---


def audit_rows(browser: WebDriver) -> list[dict[str, str]]:
    """The audit view's entries as shown, by column (read again if the table was replaced meanwhile)."""
    (rows,) = settled(browser).until(
        lambda _: (
            [
                {
                    cell.get_attribute("data-label") or "": cell.text
                    for cell in row.find_elements(By.TAG_NAME, "td")
                }
                for row in browser.find_elements(By.CSS_SELECTOR, "#audit-list tr.entry")
            ],
        )
    )
    return rows


@pytest.mark.e2e_timeout(180)
def test_the_audit_log_shows_an_admin_a_links_changes_and_tells_a_member_it_is_for_admins(
    browser: WebDriver, stack: RunningStack, landing: str, snap: Snap
) -> None:
    assert stack.api_key
    admin_id = stack.api_key.split("_")[1]
    # Given a link made, pointed to another URL and then disabled through the API with the admin key
    code = f"audited-{time.time_ns() % 10**9}"
    first, second = f"http://localhost:{landing}/audit/first", f"http://localhost:{landing}/audit/second"
    assert stack.post_json("/", {"url": first, "code": code}).status == 201
    for change in ({"url": second}, {"status": "disabled"}):
        changed = stack.request(
            "PATCH", f"links/{code}", json.dumps(change), {"Content-Type": "application/json"}
        )
        assert changed.status == 200, changed.text
    # When the admin opens the Audit log view and filters it by the link's code
    open_page(browser, stack, stack.api_key)
    goto(browser, "audit")
    assert browser.title == "Audit log \u00b7 Shortener"
    assert browser.switch_to.active_element.get_attribute("id") == "audit-view-heading"
    settled(browser).until(lambda _: browser.find_element(By.ID, "audit-section").is_displayed())
    browser.find_element(By.ID, "audit-code").send_keys(code)
    browser.find_element(By.ID, "audit-show").click()
    settled(browser).until(
        lambda _: (
            code in browser.find_element(By.ID, "audit-summary").text
            and browser.find_element(By.ID, "view-audit").get_attribute("aria-busy") is None
        )
    )
    # Then its three entries are listed newest first, each with the admin key's id as its actor
    rows = audit_rows(browser)
    assert [row["Action"] for row in rows] == ["link.updated", "link.updated", "link.created"], rows
    assert {(row["Actor"], row["Target"], row["Source address"]) for row in rows} == {
        (admin_id, code, "127.0.0.1")
    }
    assert "3 entries" in browser.find_element(By.ID, "audit-summary").text
    assert not browser.find_element(By.ID, "audit-more").is_displayed()
    # When the URL change (the older update) is expanded
    toggle = browser.find_elements(By.CSS_SELECTOR, "#audit-list tr.entry button.audit-toggle")[1]
    toggle.click()
    # Then it shows only the fields that differ, the URL's before -> after among them
    changes = browser.find_element(By.ID, toggle.get_attribute("aria-controls"))
    settled(browser).until(lambda _: changes.is_displayed())
    assert toggle.get_attribute("aria-expanded") == "true" and toggle.text == "Hide changes"
    fields = [dt.text for dt in changes.find_elements(By.TAG_NAME, "dt")]
    assert set(fields) == {"url", "updated_at"}, fields
    assert f"{first} \u2192 {second}" in changes.text, changes.text
    snap("url-change")
    # And the export holds the same entries, newest first, as JSON lines in a file named by the day
    browser.execute_script(
        "window.exported = null; const click = HTMLAnchorElement.prototype.click;"
        "HTMLAnchorElement.prototype.click = function () {"
        "  if (this.download) window.exported = {name: this.download, href: this.href};"
        "  else click.call(this); };"
    )
    browser.find_element(By.ID, "audit-export").click()
    exported = settled(browser).until(lambda _: browser.execute_script("return window.exported"))
    assert re.fullmatch(r"audit-\d{4}-\d{2}-\d{2}\.jsonl", exported["name"]), exported
    text = browser.execute_async_script(
        "fetch(arguments[0]).then((r) => r.text()).then(arguments[1], (e) => arguments[1]('error: ' + e))",
        exported["href"],
    )
    lines = [json.loads(line) for line in text.splitlines()]
    assert [(entry["action"], entry["target"]) for entry in lines] == [
        ("link.updated", code),
        ("link.updated", code),
        ("link.created", code),
    ]
    assert "Saved audit-" in visible_text(browser, "audit-export-status")
    # And axe-core finds nothing serious or critical, on a desktop and on a phone (where nothing is
    # wider than the screen)
    assert axe_on_desktop_and_phone(browser, snap, "audit") == {}
    # When a member opens the view with their own key
    _, member_key = create_key(stack, "e2e-audit-member")
    open_page(browser, stack, member_key)
    goto(browser, "audit")
    # Then the view says plainly that only an admin can read the audit log, with no table
    assert "Only an admin can read the audit log" in visible_text(browser, "audit-denied")
    assert not browser.find_element(By.ID, "audit-section").is_displayed()
    assert not browser.find_elements(By.CSS_SELECTOR, "#audit-list tr")
    assert not browser.find_element(By.ID, "audit-error").is_displayed()
    snap("member")
