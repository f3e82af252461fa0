"""Signing in to the page in a real browser (issue 36): against a local stack with its user pool and
hosted sign-in (`--auth-port`), a person signs in with the user the stack prints, makes a link and
sees it listed, passes the accessibility check signed in, and signs out; afterwards the page is
signed out and the API refuses their token. Errors from the hosted sign-in and a failed exchange
are said in words.

Screenshots go to test-artifacts/page-sign-in/. Skipped without
chromium, as the page's other browser tests are."""

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.wait import WebDriverWait

from tests.e2e import test_page_browser as page_tests
from tests.e2e.conftest import PROJECT_ROOT, RunningStack, _factory, http_request
from tests.e2e.test_page_browser import (
    RERENDERED,
    STEP_SECONDS,
    Snap,
    axe_on_desktop_and_phone,
    listed,
    shorten,
    visible_text,
)

# The page tests' fixtures (importing them skips this module without chromium, as theirs): one
# browser, its screenshots, and the long links' landing server.
browser = page_tests.browser
snap = page_tests.snap
landing = page_tests.landing

pytestmark = pytest.mark.e2e_timeout(240)
ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "page-sign-in"


@pytest.fixture(scope="module")
def artifacts(request: pytest.FixtureRequest) -> Iterator[Path]:
    """Where this module's screenshots go (apart from the other page tests')."""
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    yield ARTIFACTS
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"\nsign-in screenshots: {ARTIFACTS}")


@pytest.fixture(scope="module")
def signing_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """A local stack with its user pool's hosted sign-in on a free port, and two more domains; the
    authorizer keeps no answers (TTL 0), so a token is refused as soon as it is revoked."""
    started: list[RunningStack] = []
    start = _factory(tmp_path_factory.mktemp("signing-stack"), started)
    params = {
        "AuthorizerCacheTtlSeconds": 0,
        "Domains": "go.example,shop.example",
        "EdgeCertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/e2e-page",
    }
    yield start("--auth-port", "0", "--edge-port", "0", params=params)
    for running in started:
        running.stop()


def sign_in_config(browser: WebDriver) -> dict[str, str] | None:
    """What the page was told of the sign-in (its meta element), as the page reads it."""
    return browser.execute_script(  # type: ignore[no-any-return]
        "const m = document.querySelector('meta[name=\"shortener-sign-in\"]');"
        "return m && m.content ? JSON.parse(m.content) : null"
    )


def local_user(stack: RunningStack) -> dict[str, Any]:
    """The local user pool's user, as the stack's READY line says it (username and password)."""

    def found(value: Any) -> Iterator[dict[str, Any]]:
        if isinstance(value, dict):
            if isinstance(value.get("username"), str) and isinstance(value.get("password"), str):
                yield value
            for item in value.values():
                yield from found(item)
        elif isinstance(value, list):
            for item in value:
                yield from found(item)

    users = list(found(stack.info))
    assert users, f"the stack's READY line names no user to sign in with: {sorted(stack.info)}"
    return users[0]


def open_signed_out(browser: WebDriver, stack: RunningStack) -> dict[str, str]:
    """The page as a first visit sees it (no key, no tokens, no sign-in under way); its sign-in."""
    browser.get(stack.api_url)
    browser.execute_script("localStorage.clear(); sessionStorage.clear()")
    browser.get(stack.api_url)
    config = sign_in_config(browser)
    assert config, "the stack's page has no sign-in (its API function has no SIGN_IN_URL)"
    return config


def kept_tokens(browser: WebDriver) -> dict[str, Any] | None:
    kept = browser.execute_script("return sessionStorage.getItem('shortener.signIn.tokens')")
    return json.loads(kept) if kept else None


def sign_in(browser: WebDriver, config: dict[str, str], user: dict[str, Any]) -> None:
    """Through the hosted sign-in, as a person does: the button, the form, back to the page."""
    browser.find_element(By.ID, "sign-in-button").click()
    WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: "/oauth2/authorize" in browser.current_url
    )
    assert browser.current_url.startswith(config["url"] + "/oauth2/authorize?")
    form = WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: browser.find_element(By.CSS_SELECTOR, "input[name=username]")
    )
    form.send_keys(user["username"])
    browser.find_element(By.CSS_SELECTOR, "input[name=password]").send_keys(user["password"])
    browser.find_element(By.CSS_SELECTOR, "form [type=submit]").click()
    WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: browser.find_element(By.ID, "signed-in").is_displayed()
    )


def test_a_person_signs_in_makes_a_link_sees_it_listed_and_signs_out(
    browser: WebDriver, signing_stack: RunningStack, landing: str, snap: Snap
) -> None:
    stack = signing_stack
    user = local_user(stack)
    # Given the page, where nobody is signed in: "Sign in" is the first choice, and has the focus
    config = open_signed_out(browser, stack)
    assert browser.find_element(By.ID, "sign-in-button").is_displayed()
    assert not browser.find_element(By.ID, "key-form").is_displayed()
    assert browser.switch_to.active_element.get_attribute("id") == "sign-in-button"
    snap("signed-out")

    # When they sign in with the local user pool's user
    sign_in(browser, config, user)

    # Then they are back on the page, which says who is signed in, with the code gone from the address
    assert visible_text(browser, "signed-in-name") == user["username"]
    assert visible_text(browser, "signed-in-role") in ("admin", "member")
    assert urlsplit(browser.current_url).query == ""
    assert browser.current_url.split("#", 1)[0] == stack.api_url
    # And the tokens are kept in this tab's session only: nothing in localStorage, no cookie
    tokens = kept_tokens(browser)
    assert tokens and tokens["access_token"] and tokens["refresh_token"]
    assert browser.execute_script("return localStorage.length") == 0
    assert browser.get_cookies() == []

    # When they make a link
    url = f"http://127.0.0.1:{landing}/signed-in/person"
    shorten(browser, url)
    short_url = visible_text(browser, "short")
    # Then it is listed among their links, as it would be with a key
    WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: short_url in listed(browser)
    )
    # And the API takes their token as it takes a key: the link is theirs
    mine = stack.request("GET", "links?limit=100", api_key=tokens["access_token"])
    assert mine.status == 200, mine.text
    assert url in [link["url"] for link in mine.json()["links"]]
    # And the signed-in page passes the accessibility check on a desktop and a phone
    assert axe_on_desktop_and_phone(browser, snap, "signed-in") == {}

    # When they sign out
    browser.find_element(By.ID, "sign-out").click()

    # Then the page is back to signed out, says so, and has forgotten the tokens
    WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: browser.find_element(By.ID, "sign-in-button").is_displayed()
    )
    assert visible_text(browser, "sign-in-status") == "You have signed out."
    assert not browser.find_element(By.ID, "signed-in").is_displayed()
    assert not browser.find_element(By.ID, "mine").is_displayed()
    assert kept_tokens(browser) is None
    assert browser.current_url.split("#", 1)[0] == stack.api_url
    snap("signed-out-again")
    # And the API refuses the token: its refresh token was revoked, and the access tokens with it
    refused = stack.request("GET", "links", api_key=tokens["access_token"])
    assert refused.status in (401, 403), refused.text


def test_a_sign_in_the_hosted_page_refused_is_said_in_words(
    browser: WebDriver, signing_stack: RunningStack, snap: Snap
) -> None:
    # Given the page, where nobody is signed in
    open_signed_out(browser, signing_stack)
    # When the hosted sign-in sends the person back with an error (they cancelled)
    browser.get(signing_stack.api_url + "?error=access_denied&state=abc")
    # Then the page says so, the address is clean, and signing in is offered again
    message = visible_text(browser, "sign-in-error")
    assert message == "Signing in did not finish: the sign-in was cancelled or refused.", message
    assert urlsplit(browser.current_url).query == ""
    assert browser.find_element(By.ID, "sign-in-button").is_displayed()
    snap("cancelled")


def test_an_answer_for_another_sign_in_or_a_code_refused_is_said_in_words(
    browser: WebDriver, signing_stack: RunningStack
) -> None:
    # Given the page, where nobody is signed in
    open_signed_out(browser, signing_stack)
    # When an answer arrives that this page did not ask for (no sign-in under way: another state)
    browser.get(signing_stack.api_url + "?code=made-up&state=forged")
    # Then no code is exchanged, and the page says why
    assert "was not for a sign-in this page started" in visible_text(browser, "sign-in-error")
    assert kept_tokens(browser) is None
    # When the state matches but the sign-in service refuses the code
    pending = json.dumps({"state": "s1", "verifier": "v" * 43})
    browser.execute_script("sessionStorage.setItem('shortener.signIn.pending', arguments[0])", pending)
    browser.get(signing_stack.api_url + "?code=made-up&state=s1")
    # Then the page says the sign-in did not finish, and nobody is signed in
    message = visible_text(browser, "sign-in-error")
    assert message.startswith("Signing in did not finish: ") and message.endswith("Sign in again."), message
    assert kept_tokens(browser) is None
    assert browser.find_element(By.ID, "sign-in-button").is_displayed()


def test_an_api_key_is_still_taken_where_sign_in_is_set_up(
    browser: WebDriver, signing_stack: RunningStack
) -> None:
    # Given the page with sign-in set up
    open_signed_out(browser, signing_stack)
    # When the person chooses a key instead, and enters the stack's key
    toggle = browser.find_element(By.ID, "key-instead")
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    assert browser.switch_to.active_element.get_attribute("id") == "api-key"
    assert signing_stack.api_key
    browser.find_element(By.ID, "api-key").send_keys(signing_stack.api_key)
    browser.find_element(By.ID, "key-save").click()
    # Then the key is used as before, and "Sign in" makes way for it
    assert "Using the key" in visible_text(browser, "key-saved")
    assert not browser.find_element(By.ID, "sign-in").is_displayed()


def test_a_member_signed_in_sees_only_their_own_links_and_is_told_the_audit_log_is_for_admins(
    browser: WebDriver, signing_stack: RunningStack, landing: str
) -> None:
    stack = signing_stack
    # Given a link of the admin's, and a member of the user pool (in no group)
    admins = stack.post_json("/", {"url": f"http://127.0.0.1:{landing}/admins-only"})
    assert admins.status in (200, 201), admins.text
    pool = stack.boto3_client("cognito-idp")
    pool_id = pool.list_user_pools(MaxResults=10)["UserPools"][0]["Id"]
    member = {"username": "member@example.com", "password": "Member-passw0rd"}
    pool.admin_create_user(
        UserPoolId=pool_id,
        Username=member["username"],
        MessageAction="SUPPRESS",
        UserAttributes=[{"Name": "email", "Value": member["username"]}],
    )
    pool.admin_set_user_password(
        UserPoolId=pool_id, Username=member["username"], Password=member["password"], Permanent=True
    )
    # When the member signs in on the audit log's view
    config = open_signed_out(browser, stack)
    browser.execute_script("location.hash = '#/audit'")
    sign_in(browser, config, member)
    # Then the page names them as a member, back on the view they started from
    assert visible_text(browser, "signed-in-role") == "member"
    assert browser.current_url == stack.api_url + "#/audit"
    assert "you are signed in as a member" in visible_text(browser, "audit-denied")
    # And their links are theirs alone: none of the admin's
    browser.execute_script("location.hash = '#/links'")
    visible_text(browser, "links-empty")
    assert admins.json()["short_url"] not in listed(browser)


def add_person(
    stack: RunningStack, username: str, password: str, groups: tuple[str, ...] = ()
) -> dict[str, str]:
    """A person of the local user pool (made through the embedded AWS, as an admin would), in
    ``groups`` (made when missing)."""
    pool = stack.boto3_client("cognito-idp")
    pool_id = pool.list_user_pools(MaxResults=10)["UserPools"][0]["Id"]
    pool.admin_create_user(
        UserPoolId=pool_id,
        Username=username,
        MessageAction="SUPPRESS",
        UserAttributes=[{"Name": "email", "Value": username}],
    )
    pool.admin_set_user_password(UserPoolId=pool_id, Username=username, Password=password, Permanent=True)
    for group in groups:
        existing = {item["GroupName"] for item in pool.list_groups(UserPoolId=pool_id)["Groups"]}
        if group not in existing:
            pool.create_group(UserPoolId=pool_id, GroupName=group)
        pool.admin_add_user_to_group(UserPoolId=pool_id, Username=username, GroupName=group)
    return {"username": username, "password": password}


def test_a_person_of_one_brand_makes_links_on_its_domain_and_filters_the_list_by_domain(
    browser: WebDriver, signing_stack: RunningStack, landing: str, snap: Snap
) -> None:
    stack = signing_stack
    go_url = stack.info["domain_urls"]["go.example"]
    # Given a member whose group allows the go.example domain only
    person = add_person(stack, "brand-go@example.com", "Brand-go-passw0rd", ("domain:go.example",))
    # When they sign in
    config = open_signed_out(browser, stack)
    sign_in(browser, config, person)
    # Then the page offers that domain only when making a link
    WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: browser.find_element(By.ID, "domain-field").is_displayed()
    )
    offered = [option.text for option in browser.find_elements(By.CSS_SELECTOR, "#domain option")]
    assert offered == ["go.example"]
    # And the link they make answers on it
    shorten(browser, f"http://127.0.0.1:{landing}/brand/go")
    short_url = visible_text(browser, "short")
    assert short_url.startswith(go_url), short_url
    code = short_url.removeprefix(go_url)
    assert http_request(go_url, "GET", code).status == 301
    assert http_request(stack.info["domain_urls"]["shop.example"], "GET", code).status == 404
    # And the list can be narrowed to one domain: every domain of the stack is a choice there
    WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: short_url in listed(browser)
    )
    choices = [option.text for option in browser.find_elements(By.CSS_SELECTOR, "#links-domain option")]
    assert choices[1:] == [urlsplit(stack.edge_url).netloc, "go.example", "shop.example"]
    Select(browser.find_element(By.ID, "links-domain")).select_by_visible_text("shop.example")
    WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: browser.find_element(By.ID, "links-empty").is_displayed()
    )
    Select(browser.find_element(By.ID, "links-domain")).select_by_visible_text("go.example")
    WebDriverWait(browser, STEP_SECONDS, ignored_exceptions=RERENDERED).until(
        lambda _: listed(browser) == [short_url]
    )
    assert axe_on_desktop_and_phone(browser, snap, "domains") == {}
