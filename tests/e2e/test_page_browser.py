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
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import PROJECT_ROOT, RunningStack, StartStack

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
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

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
    browser.execute_script("localStorage.clear()")
    if key is not None:
        browser.execute_script("localStorage.setItem('shortener.apiKey', arguments[0])", key)
    browser.get(stack.api_url)


def visible_text(browser: WebDriver, element_id: str, seconds: float = STEP_SECONDS) -> str:
    """The text of an element once it is shown (polled until the deadline)."""
    element = browser.find_element(By.ID, element_id)
    WebDriverWait(browser, seconds).until(lambda _: element.is_displayed() and element.text.strip())
    return str(element.text)


def enter_key(browser: WebDriver, key: str) -> None:
    browser.find_element(By.ID, "api-key").send_keys(key)
    browser.find_element(By.ID, "key-save").click()


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
    assert "needs an API key" in message, message


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
    assert short_url.startswith(stack.api_url), short_url
    WebDriverWait(browser, STEP_SECONDS).until(
        lambda _: short_url in browser.find_element(By.ID, "links-list").text
    )
    assert long_url in browser.find_element(By.ID, "links-list").text
    snap("listed")
    # And following it leads to the long link's page
    browser.find_element(By.ID, "short").click()
    WebDriverWait(browser, STEP_SECONDS).until(lambda _: browser.title == "Landed")
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
    WebDriverWait(browser, STEP_SECONDS).until(lambda _: browser.find_element(By.ID, "copy").text == "Copied")
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
    WebDriverWait(browser, STEP_SECONDS).until(
        lambda _: short_url in browser.find_element(By.ID, "links-list").text
    )
    # When its QR code button is pressed in the list
    item = next(li for li in browser.find_elements(By.CSS_SELECTOR, "#links-list li") if short_url in li.text)
    button = item.find_element(By.CSS_SELECTOR, "button.show-qr")
    button.click()
    WebDriverWait(browser, STEP_SECONDS).until(lambda _: item.find_elements(By.CSS_SELECTOR, ".qr img"))
    image = item.find_element(By.CSS_SELECTOR, ".qr img")
    WebDriverWait(browser, STEP_SECONDS).until(
        lambda _: browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image)
    )
    snap("qr-code")
    # Then the image shown is the short URL's QR code, named for people using a screen reader
    assert button.get_attribute("aria-expanded") == "true"
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
    downloads = {a.get_attribute("download") for a in item.find_elements(By.CSS_SELECTOR, ".qr a[download]")}
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
    WebDriverWait(browser, JOB_SECONDS, poll_frequency=0.5).until(
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
    browser.execute_script("localStorage.setItem('shortener.job', arguments[0])", job_id)
    # When the page is loaded again
    browser.refresh()
    # Then it shows that job's progress through to its results
    WebDriverWait(browser, JOB_SECONDS, poll_frequency=0.5).until(
        lambda _: browser.find_element(By.ID, "bulk-results").is_displayed()
    )
    snap("resumed")
    assert "20 of 20 rows" in browser.find_element(By.ID, "bulk-status").text
    assert job_id in browser.find_element(By.ID, "jobs-list").text


def test_the_page_fits_a_phone_and_labels_every_field(
    browser: WebDriver, stack: RunningStack, snap: Snap
) -> None:
    # Given a phone-sized window
    assert stack.api_key
    size = browser.get_window_size()
    browser.set_window_size(390, 844)
    try:
        # When the page is shown with a key and its lists
        open_page(browser, stack, stack.api_key)
        WebDriverWait(browser, STEP_SECONDS).until(
            lambda _: (
                browser.find_element(By.ID, "links-list").text
                or browser.find_element(By.ID, "links-empty").is_displayed()
            )
        )
        snap("phone")
        # Then nothing is wider than the screen, and every field has a label
        widths = browser.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        unlabelled = browser.execute_script(
            "return [...document.querySelectorAll('input')].filter((i) => !i.labels.length).map((i) => i.id)"
        )
    finally:
        browser.set_window_size(size["width"], size["height"])
    assert widths[0] <= widths[1], widths
    assert unlabelled == []


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
            WebDriverWait(browser, STEP_SECONDS).until(
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
    # When it is uploaded
    browser.find_element(By.ID, "bulk-file").send_keys(str(csv_file))
    browser.find_element(By.ID, "bulk-submit").click()
    # Then the browser sends it to the presigned URL (the storage's CORS answers it), the job reads
    # it, and its results file is linked
    WebDriverWait(browser, JOB_SECONDS, poll_frequency=0.5).until(
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
    WebDriverWait(browser, 90, poll_frequency=0.5).until(
        lambda _: stack.request("GET", "links/page-clicks/clicks").json()["total"] == 2
    )
    # When the person opens the link's clicks from their recent links
    open_page(browser, stack, stack.api_key)
    short_url = created.json()["short_url"]
    button = WebDriverWait(browser, STEP_SECONDS).until(
        lambda _: browser.find_element(By.CSS_SELECTOR, f'button[aria-label="Clicks of {short_url}"]')
    )
    button.click()
    # Then the chart is drawn in the page (an SVG bar per day of the last 30, no other origin)
    assert visible_text(browser, "clicks-summary").startswith("2 clicks in the last 30 days: 2 by people")
    bars = browser.find_elements(By.CSS_SELECTOR, "#clicks-chart rect")
    assert len(bars) == 31
    assert sum(float(bar.get_attribute("height") or 0) > 0 for bar in bars) == 1
    # And the top countries (local requests come from 127.0.0.1: unknown) and referrers are listed
    assert browser.find_element(By.ID, "clicks-countries").text == "unknown: 2"
    assert browser.find_element(By.ID, "clicks-referrers").text == "Not recorded"
    snap("clicks")
