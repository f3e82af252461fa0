"""Sign-in for people, end to end at the HTTP level (the browser test drives the page itself): a
person signs in through the local hosted sign-in with the code grant and PKCE, as the page does,
and calls the API with the access token in X-Api-Key.

The stack runs with AuthorizerCacheTtlSeconds=1 (API Gateway serves a cached Allow for that long
after a revocation; 60 s by default) and with tokens valid 5 minutes at --time-scale 30, so an
access token really expires after 10 s (its exp claim is in the past; nothing is faked)."""

import base64
import hashlib
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.e2e.conftest import RunningStack, _factory, http_request

TOKEN_SECONDS = 10  # SignInTokenMinutes=5 at --time-scale 30
MEMBER = "mia@example.com"
MEMBER_PASSWORD = "Member-password-42"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """A stack with a short authorizer cache and short-lived tokens, and a member besides the
    banner's admin person."""
    started: list[RunningStack] = []
    running = _factory(tmp_path_factory.mktemp("sign-in"), started)(
        time_scale=30, params={"AuthorizerCacheTtlSeconds": 1, "SignInTokenMinutes": 5}
    )
    cognito = running.boto3_client("cognito-idp")
    pool = running.sign_in["user_pool_id"]
    cognito.admin_create_user(UserPoolId=pool, Username=MEMBER, MessageAction="SUPPRESS")
    cognito.admin_set_user_password(
        UserPoolId=pool, Username=MEMBER, Password=MEMBER_PASSWORD, Permanent=True
    )
    cognito.admin_add_user_to_group(UserPoolId=pool, Username=MEMBER, GroupName="member")
    yield running
    for each in started:
        each.stop()


@dataclass(frozen=True)
class Tokens:
    access_token: str
    refresh_token: str
    expires_in: int


def sign_in(stack: RunningStack, username: str, password: str) -> Tokens:
    """The page's sign-in, step by step: authorize, the form, the code back at the page, the
    exchange with the verifier."""
    settings = stack.sign_in
    page = stack.api_url
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urlencode(
        {
            "response_type": "code",
            "client_id": settings["client_id"],
            "redirect_uri": page,
            "state": "e2e-state",
            "scope": "openid email profile",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    form = http_request(settings["url"], "GET", f"/oauth2/authorize?{query}")
    assert form.status == 200 and 'name="password"' in form.text
    answer = http_request(
        settings["url"],
        "POST",
        f"/login?{query}",
        urlencode({"username": username, "password": password}),
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answer.status == 302, answer.text
    back = urlsplit(answer.headers["Location"])
    assert f"{back.scheme}://{back.netloc}{back.path}" == page
    assert parse_qs(back.query)["state"] == ["e2e-state"]
    exchange = http_request(
        settings["url"],
        "POST",
        "/oauth2/token",
        urlencode(
            {
                "grant_type": "authorization_code",
                "client_id": settings["client_id"],
                "code": parse_qs(back.query)["code"][0],
                "redirect_uri": page,
                "code_verifier": verifier,
            }
        ),
        {"Content-Type": "application/x-www-form-urlencoded", "Origin": page.rstrip("/")},
    )
    assert exchange.status == 200, exchange.text
    assert exchange.headers["Access-Control-Allow-Origin"] == page.rstrip("/")
    document = exchange.json()
    return Tokens(document["access_token"], document["refresh_token"], document["expires_in"])


def admin(stack: RunningStack) -> Tokens:
    person = stack.sign_in
    return sign_in(stack, person["username"], person["password"])


def shorten(stack: RunningStack, token: str, url: str) -> Any:
    return stack.post_json("/", {"url": url}, api_key=token)


def listed_urls(stack: RunningStack, token: str, query: str = "") -> set[str]:
    answer = stack.request("GET", f"/links{query}", api_key=token)
    assert answer.status == 200, answer.text
    return {link["url"] for link in answer.json()["links"]}


def test_the_banners_person_signs_in_and_makes_and_lists_links(stack: RunningStack) -> None:
    tokens = admin(stack)

    made = shorten(stack, tokens.access_token, "https://example.com/e2e/signed-in")

    assert made.status == 201, made.text
    assert "https://example.com/e2e/signed-in" in listed_urls(stack, tokens.access_token)
    link = stack.request("GET", f"/links/{made.json()['code']}", api_key=tokens.access_token).json()
    assert link["owner"] == stack.sign_in["username"]


def test_a_members_token_sees_only_their_own_links(stack: RunningStack) -> None:
    admins = admin(stack)
    admins_link = shorten(stack, admins.access_token, "https://example.com/e2e/admins-own")
    assert admins_link.status == 201
    members = sign_in(stack, MEMBER, MEMBER_PASSWORD)

    made = shorten(stack, members.access_token, "https://example.com/e2e/members-own")

    assert made.status == 201, made.text
    assert listed_urls(stack, members.access_token) == {"https://example.com/e2e/members-own"}
    code = admins_link.json()["code"]
    assert stack.request("GET", f"/links/{code}", api_key=members.access_token).status == 404
    # An admin (group admin) sees the member's links by owner; the member's username owns them.
    owned = listed_urls(stack, admins.access_token, f"?owner={MEMBER}")
    assert owned == {"https://example.com/e2e/members-own"}


def test_a_sign_in_is_in_the_audit_log_for_admins(stack: RunningStack) -> None:
    # Given the member signed in (the pool's post-authentication trigger ran the audit function)
    members = sign_in(stack, MEMBER, MEMBER_PASSWORD)
    admins = admin(stack)
    # When an admin reads the sign-ins in the audit log
    answer = stack.request("GET", f"/audit?action=user.signed_in&code={MEMBER}", api_key=admins.access_token)
    # Then the member's sign-in is there, by their username, with their sub and the page's client
    assert answer.status == 200, answer.text
    entries = answer.json()["entries"]
    assert entries and {(e["actor"], e["action"], e["target"]) for e in entries} == {
        (MEMBER, "user.signed_in", MEMBER)
    }
    attributes = stack.boto3_client("cognito-idp").admin_get_user(
        UserPoolId=stack.sign_in["user_pool_id"], Username=MEMBER
    )["UserAttributes"]
    sub = next(item["Value"] for item in attributes if item["Name"] == "sub")
    assert entries[0]["after"]["sub"] == sub
    assert entries[0]["after"]["client_id"] == stack.sign_in["client_id"]
    # and the admin's own sign-in too; a member may not read the log
    mine = stack.request("GET", "/audit?action=user.signed_in", api_key=admins.access_token).json()
    assert stack.sign_in["username"] in {entry["actor"] for entry in mine["entries"]}
    assert stack.request("GET", "/audit", api_key=members.access_token).status == 403


def test_a_wrong_password_gets_no_code(stack: RunningStack) -> None:
    settings = stack.sign_in
    query = urlencode(
        {
            "response_type": "code",
            "client_id": settings["client_id"],
            "redirect_uri": stack.api_url,
            "code_challenge": "x" * 43,
            "code_challenge_method": "S256",
        }
    )

    answer = http_request(
        settings["url"],
        "POST",
        f"/login?{query}",
        urlencode({"username": MEMBER, "password": "wrong-password-1"}),
        {"Content-Type": "application/x-www-form-urlencoded"},
    )

    assert answer.status == 400
    assert "Location" not in answer.headers


def test_after_sign_out_the_token_is_refused(stack: RunningStack) -> None:
    tokens = sign_in(stack, MEMBER, MEMBER_PASSWORD)
    assert stack.request("GET", "/links", api_key=tokens.access_token).status == 200
    settings = stack.sign_in

    revoked = http_request(
        settings["url"],
        "POST",
        "/oauth2/revoke",
        urlencode({"token": tokens.refresh_token, "client_id": settings["client_id"]}),
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    time.sleep(1.5)  # AuthorizerCacheTtlSeconds=1: the cached Allow is gone

    assert revoked.status == 200
    refused = stack.request("GET", "/links", api_key=tokens.access_token)
    assert refused.status == 403
    assert refused.json()["error"] == "invalid_api_key"


def test_an_expired_token_is_refused(stack: RunningStack) -> None:
    tokens = sign_in(stack, MEMBER, MEMBER_PASSWORD)
    assert tokens.expires_in == TOKEN_SECONDS
    assert stack.request("GET", "/links", api_key=tokens.access_token).status == 200

    time.sleep(TOKEN_SECONDS + 1.5)

    refused = stack.request("GET", "/links", api_key=tokens.access_token)
    assert refused.status == 403
    assert "sign in again" in refused.json()["message"]


def test_keys_still_work_beside_tokens(stack: RunningStack) -> None:
    assert stack.post_json("/", {"url": "https://example.com/e2e/by-key"}).status == 201


@pytest.mark.e2e_timeout(300)
def test_people_and_the_banners_password_survive_kill_9(stack: RunningStack) -> None:
    person = dict(stack.sign_in)
    stack.kill()

    stack.restart()

    assert stack.sign_in["password"] == person["password"]
    assert stack.request("GET", "/links", api_key=admin(stack).access_token).status == 200
    assert (
        stack.request("GET", "/links", api_key=sign_in(stack, MEMBER, MEMBER_PASSWORD).access_token).status
        == 200
    )
    assert (Path(stack.info["data_dir"]) / "sign-in-person").stat().st_mode & 0o777 == 0o600
