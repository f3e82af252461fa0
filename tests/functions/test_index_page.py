"""The index page's bulk script, run by Node.js against a minimal DOM and a fake API: a large file
goes straight to storage with an upload bar, then the file read and the rows, and the results link
is the whole results file. Skipped where Node.js is not installed."""

import base64
import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

PAGE = Path(__file__).parents[2] / "functions" / "api" / "index.html"
NODE = shutil.which("node")

# A DOM with the page's elements, fetch and XMLHttpRequest answering like the API and S3, timers
# that fire at once; the script runs, its bulk form is submitted, and what it did is printed.
HARNESS = r"""
const elements = {};
const element = (id) => elements[id] || (elements[id] = {
  id, hidden: true, textContent: "", value: 0, max: 1, href: "#", listeners: {}, disabled: false,
  files: id === "bulk-file" ? [FILE] : [],
  addEventListener(type, listener) { this.listeners[type] = listener; },
  focus() {}, setAttribute() {}, removeAttribute() {}, replaceChildren() {}, append() {},
  dataset: {}, options: [], selectedOptions: [], childElementCount: 0, children: [],
  querySelector: () => null,
});
const kept = {};
globalThis.localStorage = {
  getItem: (name) => kept[name] ?? null, setItem: (name, value) => { kept[name] = String(value); },
  removeItem: (name) => { delete kept[name]; },
};
const FILE = {name: "catalogue.csv", size: SIZE, type: "text/csv"};
globalThis.document = {getElementById: element, querySelectorAll: () => []};
globalThis.location = {pathname: "/", hash: ""};
globalThis.window = {addEventListener() {}};
globalThis.navigator = {clipboard: {writeText: async () => {}}};
globalThis.FormData = class { constructor(form) { this.form = form.id; } };
globalThis.setTimeout = (callback) => { callback(); return 0; };
const calls = [];
const statuses = STATUSES;
const answer = (status, body) => ({ok: status < 300, status, headers: new Headers(), json: async () => body});
globalThis.fetch = async (url, options = {}) => {
  // The caller's recent links, domains and jobs (none here) are answered apart from the calls under test.
  if (url.startsWith("/links?")) return answer(200, {links: []});
  if (url === "/domains") return answer(200, {domains: []});
  if (url.startsWith("/jobs?")) return answer(200, {jobs: []});
  const body = options.body instanceof FormData ? "form" : options.body || null;
  calls.push([options.method || "GET", url, body]);
  if (url === "/bulk/uploads") return answer(201, {job_id: "j1", status_url: "/jobs/j1", upload: {
    method: "PUT", url: "https://bucket.s3/uploads/j1.csv?X-Amz-Signature=s",
    headers: {"Content-Length": String(SIZE)}}});
  if (url.split("?")[0] === "/bulk") return answer(202, {job_id: "j1", total: 2, status_url: "/jobs/j1"});
  return answer(200, statuses.length > 1 ? statuses.shift() : statuses[0]);
};
globalThis.XMLHttpRequest = class {
  constructor() { this.upload = {}; }
  open(method, url) { calls.push([method, url, "xhr"]); }
  send(body) {
    this.upload.onprogress({loaded: SIZE / 2, total: SIZE});
    seen.halfway = element("bulk-upload-label").textContent;
    this.upload.onprogress({loaded: SIZE, total: SIZE});
    this.status = 200; this.onload();
  }
};
const seen = {};
SCRIPT
(async () => {
  element("bulk-domain").value = BULK_DOMAIN;
  await element("bulk-form").listeners.submit({preventDefault() {}});
  console.log(JSON.stringify({calls, seen, results: element("bulk-results"), error: element("bulk-error"),
    status: element("bulk-status").textContent}));
})();
"""

DONE = {
    "status": "done",
    "phase": "done",
    "total": 3,
    "succeeded": 3,
    "failed": 0,
    "results_ready": True,
    "results_url": "/jobs/j1/results",
    "results_file_url": "https://bucket.s3/results/j1.csv?X-Amz-Signature=r",
    "error": None,
    "upload": {"file_name": "catalogue.csv", "size": 1, "bytes_read": 1},
}


def run_page(size: int, statuses: list[dict], domain: str = "") -> dict:
    """What the page did for a file of ``size`` bytes, the job answering ``statuses`` in turn;
    ``domain``: the upload form's domain choice ("" the stack's default)."""
    page = PAGE.read_text(encoding="utf-8")
    script = page[page.index("<script>") + len("<script>") : page.index("</script>")]
    program = (
        HARNESS.replace("SCRIPT", script)
        .replace("SIZE", str(size))
        .replace("STATUSES", json.dumps(statuses))
        .replace("BULK_DOMAIN", json.dumps(domain))
    )
    assert NODE is not None
    output = subprocess.run([NODE, "-e", program], capture_output=True, text=True, timeout=60, check=True)
    return dict(json.loads(output.stdout))


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_a_large_file_goes_straight_to_storage_and_the_link_is_the_whole_results_file() -> None:
    # Given a 12 MB file, and a job that is read, processed, then done with its file written
    splitting = {**DONE, "status": "running", "phase": "splitting", "results_ready": False}
    splitting["upload"] = {"file_name": "catalogue.csv", "size": 100, "bytes_read": 40}
    done_without_file = {**DONE, "phase": "writing_results", "results_ready": False, "results_file_url": None}
    seen = run_page(12_000_000, [splitting, done_without_file, DONE])
    methods_and_urls = [(method, url) for method, url, _ in seen["calls"]]
    # Then the page announced the file, PUT it to the presigned URL with an upload bar, and
    # followed the job until its results file was ready
    assert methods_and_urls[:2] == [
        ("POST", "/bulk/uploads"),
        ("PUT", "https://bucket.s3/uploads/j1.csv?X-Amz-Signature=s"),
    ]
    assert json.loads(seen["calls"][0][2]) == {"file_name": "catalogue.csv", "size": 12_000_000}
    assert seen["seen"]["halfway"] == "Uploading: 6.0 MB of 12.0 MB"
    assert methods_and_urls[2:] == [("GET", "/jobs/j1")] * 3
    # And the download link is the results file itself, complete, not a first page of results
    assert seen["results"]["href"] == DONE["results_file_url"] and not seen["results"]["hidden"]
    assert seen["error"]["hidden"]


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_a_small_file_is_sent_in_the_request_as_before() -> None:
    seen = run_page(2_000, [DONE])
    assert seen["calls"][0] == ["POST", "/bulk", "form"]
    assert not any(call[2] == "xhr" for call in seen["calls"])
    assert seen["results"]["href"] == DONE["results_file_url"]


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_the_domain_chosen_for_an_upload_is_the_jobs_default_either_way() -> None:
    # A small file: in the URL of POST /bulk (the form's fields are the file alone)
    small = run_page(2_000, [DONE], domain="go.example")["calls"][0]
    assert small == ["POST", "/bulk?domain=go.example", "form"]
    # A large one: in the body of POST /bulk/uploads
    large = run_page(12_000_000, [DONE], domain="go.example")["calls"][0]
    assert large[:2] == ["POST", "/bulk/uploads"]
    assert json.loads(large[2]) == {"file_name": "catalogue.csv", "size": 12_000_000, "domain": "go.example"}


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_a_file_that_stopped_early_says_why_next_to_its_results() -> None:
    stopped = {
        **DONE,
        "ended_early": True,
        "error": {"error": "file_replaced", "message": "The file was replaced while it was being read."},
    }
    seen = run_page(2_000, [stopped])
    assert seen["error"]["textContent"] == (
        "Ended early: the file was not read to its end. The file was replaced while it was being read."
    )
    assert not seen["error"]["hidden"]


def test_the_status_filters_options_are_the_values_get_links_accepts() -> None:
    from typing import get_args

    from shortener.http.api import ListLinksQuery

    # The page's Status select sends its options' values as GET /links?status=: a value the API
    # does not take would answer 400 to every person who picks it.
    page = (Path(__file__).parents[2] / "functions" / "api" / "index.html").read_text(encoding="utf-8")
    select = page[page.index('id="links-status"') : page.index("</select>", page.index('id="links-status"'))]
    offered = {value for value in re.findall(r'<option value="([^"]*)"', select) if value}
    accepted = set(get_args(get_args(ListLinksQuery.model_fields["status"].annotation)[0]))
    assert offered and offered <= accepted, (offered, accepted)


# --- Sign-in: the page is told where people sign in ---

SIGN_IN_META = re.compile(r'<meta name="shortener-sign-in" content="([^"]*)">')


def sign_in_config(body: str) -> dict | None:
    """What the page reads from its sign-in meta element (None: sign-in is off)."""
    from html import unescape

    (content,) = SIGN_IN_META.findall(body)
    return json.loads(unescape(content)) if content else None


@pytest.mark.integration
def test_the_page_says_where_to_sign_in_when_the_api_function_is_told(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shortener.settings import api_settings
    from tests.support.api import call, response_header
    from tests.support.events import api_event

    # Given the API function's sign-in settings, with characters that must not end the attribute
    monkeypatch.setenv("SIGN_IN_URL", "http://127.0.0.1:3934/")
    monkeypatch.setenv("SIGN_IN_CLIENT_ID", "client\"'<&>")
    api_settings.cache_clear()
    # When the page is asked for
    answer = call(api, api_event("GET", "/"))
    # Then its meta element holds them as JSON (the URL without a trailing slash), one attribute
    assert answer["statusCode"] == 200
    assert sign_in_config(answer["body"]) == {"url": "http://127.0.0.1:3934", "client_id": "client\"'<&>"}
    # And the page may post to the sign-in's origin (the token and revoke endpoints)
    policy = response_header(answer, "Content-Security-Policy") or ""
    connect = next(part for part in policy.split("; ") if part.startswith("connect-src "))
    assert "http://127.0.0.1:3934" in connect.split()


@pytest.mark.integration
def test_without_sign_in_settings_the_page_asks_for_a_key_only(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shortener.settings import api_settings
    from tests.support.api import call
    from tests.support.events import api_event

    # Given a client id but no sign-in URL (half a configuration is none)
    monkeypatch.delenv("SIGN_IN_URL", raising=False)
    monkeypatch.setenv("SIGN_IN_CLIENT_ID", "abc")
    api_settings.cache_clear()
    # Then the page's meta element is empty: sign-in is off
    assert sign_in_config(call(api, api_event("GET", "/"))["body"]) is None


# --- Sign-in on the page: its script run by Node.js against a DOM of stand-ins (as above) ---

SIGN_IN = {"url": "https://shortener.auth.eu-west-1.amazoncognito.com", "client_id": "page-client"}
PAGE_URL = "https://abc.execute-api.eu-west-1.amazonaws.com/prod/"

SIGN_IN_HARNESS = r"""
process.on("unhandledRejection", () => {});
const elements = {};
const focused = [];
const element = (id) => elements[id] || (elements[id] = {
  id, hidden: true, textContent: "", value: "", listeners: {}, disabled: false, dataset: {}, attributes: {},
  files: [], options: [], selectedOptions: [], children: [], childElementCount: 0,
  addEventListener(type, listener) { this.listeners[type] = listener; },
  focus() { focused.push(id); }, setAttribute(name, value) { this.attributes[name] = String(value); },
  getAttribute(name) { return this.attributes[name] ?? null; },
  removeAttribute(name) { delete this.attributes[name]; },
  replaceChildren() {}, append() {}, querySelector: () => null,
});
const storage = (kept) => ({
  kept, getItem: (name) => kept[name] ?? null, setItem: (name, value) => { kept[name] = String(value); },
  removeItem: (name) => { delete kept[name]; },
});
globalThis.localStorage = storage({});
globalThis.sessionStorage = storage(SESSION);
globalThis.document = {
  getElementById: element, querySelectorAll: () => [], title: "",
  querySelector: (selector) => (selector.includes("shortener-sign-in") ? {content: META} : null),
};
const went = [], replaced = [];
globalThis.location = {
  pathname: "/prod/", origin: "https://abc.execute-api.eu-west-1.amazonaws.com", search: SEARCH, hash: "",
  assign: (url) => went.push(url),
};
globalThis.history = {replaceState: (state, title, url) => replaced.push(url)};
globalThis.window = {addEventListener() {}};
globalThis.isSecureContext = true;
globalThis.navigator = {clipboard: {writeText: async () => {}}};
globalThis.FormData = class {};
const calls = [];
const answer = (status, body) => ({ok: status < 300, status, headers: new Headers(), json: async () => body});
globalThis.fetch = async (url, options = {}) => {
  const key = new Headers(options.headers || {}).get("X-Api-Key");
  calls.push({url, method: options.method || "GET", body: options.body ? String(options.body) : null, key});
  if (url.endsWith("/oauth2/token")) return answer(200, TOKEN_ANSWER);
  if (url.endsWith("/oauth2/revoke")) return answer(200, {});
  if (key === "refused-token") return answer(403, {error: "invalid_api_key", message: "Refused"});
  if (url.startsWith("/prod/links?")) return answer(200, {links: []});
  if (url.startsWith("/prod/jobs?")) return answer(200, {jobs: []});
  return answer(200, {});
};
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
SCRIPT
(async () => {
  await settle();
  ACTION
  await settle();
  const shown = (id) => (element(id).hidden ? null : element(id).textContent);
  const person = element("signed-in").hidden ? null : element("signed-in-name").textContent;
  console.log(JSON.stringify({
    went, replaced, calls, focused, session: sessionStorage.kept, local: localStorage.kept,
    error: shown("sign-in-error"), status: element("sign-in-status").textContent, name: person,
    role: element("signed-in-role").textContent,
  }));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
"""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def unsigned_jwt(claims: dict) -> str:
    return f"{b64url(b'{}')}.{b64url(json.dumps(claims).encode())}.sig"


ID_TOKEN = unsigned_jwt(
    {"cognito:username": "alice", "email": "alice@example.com", "cognito:groups": ["admin"]}
)
TOKEN_ANSWER = {
    "id_token": ID_TOKEN,
    "access_token": "access-1",
    "refresh_token": "refresh-1",
    "expires_in": 3600,
    "token_type": "Bearer",
}
SIGNED_IN = {
    "shortener.signIn.tokens": json.dumps(
        {
            "access_token": "access-0",
            "id_token": ID_TOKEN,
            "refresh_token": "refresh-0",
            "refresh_at": 4_000_000_000_000,
        }
    )
}


def run_sign_in(
    search: str = "",
    session: dict[str, str] | None = None,
    action: str = "",
    token_answer: dict | None = None,
) -> dict:
    page = PAGE.read_text(encoding="utf-8")
    script = page[page.index("<script>") + len("<script>") : page.index("</script>")]
    program = (
        SIGN_IN_HARNESS.replace("SESSION", json.dumps(session or {}))
        .replace("META", json.dumps(json.dumps(SIGN_IN)))
        .replace("SEARCH", json.dumps(search))
        .replace("TOKEN_ANSWER", json.dumps(token_answer or TOKEN_ANSWER))
        .replace("ACTION", action)
        .replace("SCRIPT", script)
    )
    assert NODE is not None
    output = subprocess.run([NODE, "-e", program], capture_output=True, text=True, timeout=60, check=True)
    return dict(json.loads(output.stdout))


def form(body: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(body).items()}


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_sign_in_goes_to_the_hosted_page_with_an_s256_challenge_of_the_kept_verifier() -> None:
    # Given the page with sign-in set up, nobody signed in: "Sign in" has the focus
    # When the person presses "Sign in"
    seen = run_sign_in(action='element("sign-in-button").listeners.click(); await settle();')
    assert seen["focused"][0] == "sign-in-button"
    # Then the browser goes to the hosted sign-in's authorize endpoint, code grant with PKCE
    (target,) = seen["went"]
    assert target.startswith(SIGN_IN["url"] + "/oauth2/authorize?")
    query = form(urlsplit(target).query)
    pending = json.loads(seen["session"]["shortener.signIn.pending"])
    assert query == {
        "response_type": "code",
        "client_id": "page-client",
        "redirect_uri": PAGE_URL,
        "state": pending["state"],
        "scope": "openid email profile",
        "code_challenge": b64url(hashlib.sha256(pending["verifier"].encode()).digest()),
        "code_challenge_method": "S256",
    }
    # And the verifier is 32 random bytes (43 characters of RFC 7636's alphabet), kept for this tab only
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", pending["verifier"])
    assert len(pending["state"]) >= 22 and seen["local"] == {}


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_back_from_the_hosted_page_the_code_is_exchanged_and_the_token_sent_as_the_key() -> None:
    # Given a sign-in under way from the Uploads view, and the hosted page's answer to it
    pending = {"state": "s1", "verifier": "v" * 43, "view": "#/uploads"}
    seen = run_sign_in("?code=c1&state=s1", {"shortener.signIn.pending": json.dumps(pending)})
    # Then the code is exchanged at the token endpoint, form-encoded, with the verifier
    exchange = seen["calls"][0]
    assert (exchange["method"], exchange["url"]) == ("POST", SIGN_IN["url"] + "/oauth2/token")
    assert form(exchange["body"]) == {
        "client_id": "page-client",
        "grant_type": "authorization_code",
        "code": "c1",
        "redirect_uri": PAGE_URL,
        "code_verifier": "v" * 43,
    }
    # And the address loses the code and gets its view back
    assert seen["replaced"] == ["/prod/#/uploads"]
    # And the tokens are kept in sessionStorage only; nothing of the sign-in stays pending
    kept = json.loads(seen["session"]["shortener.signIn.tokens"])
    assert (kept["access_token"], kept["refresh_token"]) == ("access-1", "refresh-1")
    assert "shortener.signIn.pending" not in seen["session"] and seen["local"] == {}
    # And the page names the person and their role, and sends the access token as X-Api-Key
    assert (seen["name"], seen["role"]) == ("alice", "admin")
    api_calls = [call for call in seen["calls"][1:] if call["url"].startswith("/prod/")]
    assert api_calls and {call["key"] for call in api_calls} == {"access-1"}


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_an_answer_with_another_state_is_not_exchanged_and_said_in_words() -> None:
    pending = {"state": "s1", "verifier": "v" * 43, "view": ""}
    seen = run_sign_in("?code=c1&state=forged", {"shortener.signIn.pending": json.dumps(pending)})
    assert not any(call["url"].endswith("/oauth2/token") for call in seen["calls"])
    assert seen["error"] == (
        "Signing in did not finish: the answer was not for a sign-in this page started. Sign in again."
    )
    assert seen["replaced"] == ["/prod/"] and "shortener.signIn.tokens" not in seen["session"]


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_a_refused_token_is_refreshed_once_and_the_request_sent_again() -> None:
    # Given a person signed in whose access token the API now refuses
    tokens = json.loads(SIGNED_IN["shortener.signIn.tokens"])
    session = {"shortener.signIn.tokens": json.dumps({**tokens, "access_token": "refused-token"})}
    # When the page lists their links (a refresh answers a new access token, no new refresh token)
    refreshed = {"id_token": ID_TOKEN, "access_token": "access-2", "expires_in": 3600, "token_type": "Bearer"}
    seen = run_sign_in(session=session, token_answer=refreshed)
    # Then the refused request was followed by one refresh, and sent again with the new token
    links = [call for call in seen["calls"] if call["url"].startswith("/prod/links?")]
    assert [call["key"] for call in links[:2]] == ["refused-token", "access-2"]
    refreshes = [form(call["body"]) for call in seen["calls"] if call["url"].endswith("/oauth2/token")]
    assert refreshes == [
        {"client_id": "page-client", "grant_type": "refresh_token", "refresh_token": "refresh-0"}
    ]
    # And the refresh token stays the one first given
    kept = json.loads(seen["session"]["shortener.signIn.tokens"])
    assert (kept["access_token"], kept["refresh_token"]) == ("access-2", "refresh-0")
    assert seen["error"] is None


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_sign_out_revokes_the_refresh_token_forgets_the_tokens_and_goes_through_logout() -> None:
    # Given a person signed in
    seen = run_sign_in(session=dict(SIGNED_IN), action='await element("sign-out").listeners.click();')
    # Then the refresh token was revoked
    revokes = [call for call in seen["calls"] if call["url"].endswith("/oauth2/revoke")]
    assert [form(call["body"]) for call in revokes] == [{"token": "refresh-0", "client_id": "page-client"}]
    # And the tokens are forgotten, and the hosted logout brings the person back to the page
    assert "shortener.signIn.tokens" not in seen["session"]
    (target,) = seen["went"]
    assert target.startswith(SIGN_IN["url"] + "/logout?")
    assert form(urlsplit(target).query) == {"client_id": "page-client", "logout_uri": PAGE_URL}
    assert seen["session"]["shortener.signIn.said"] == "You have signed out."
