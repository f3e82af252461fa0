"""The local hosted sign-in (local_stack/cognito/hosted_ui.py) over the embedded AWS's cognito-idp,
with the template's user pool and page client: the code grant with PKCE as Cognito answers it, and
tokens signed with the data folder's key, not moto's published one."""

import base64
import hashlib
import json
import secrets
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import boto3
import pytest
from botocore.exceptions import ClientError
from joserfc import jwt
from joserfc.errors import BadSignatureError, InvalidKeyIdError
from joserfc.jwk import KeySet

from local_stack.cloudformation import ACCOUNT_ID
from local_stack.cloudformation.resources import template_resources
from local_stack.cognito import resource_types, tokens
from local_stack.cognito.hosted_ui import CODE_SECONDS, HostedSignIn
from local_stack.cognito.triggers import TriggerFailed
from local_stack.embedded.server import EmbeddedAws
from local_stack.ports import listening_socket

pytestmark = pytest.mark.integration

REGION = "us-east-1"
PAGE = "http://127.0.0.1:3000/"
PASSWORD = "Correct-horse-42"


@dataclass
class SignIn:
    server: HostedSignIn
    aws: EmbeddedAws
    pool_id: str
    client_id: str
    clock: list[float]
    # The post-authentication trigger's invocations (function ARN, event), and what it raises.
    triggered: list[tuple[str, dict[str, Any]]]
    trigger_arn: str
    trigger_failure: list[Exception]

    @property
    def cognito(self) -> Any:
        return boto3.client(
            "cognito-idp",
            endpoint_url=self.aws.url,
            region_name=REGION,
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )


@pytest.fixture
def sign_in(aws: EmbeddedAws, tmp_path: Path) -> Iterator[SignIn]:
    """The template's UserPool and PageClient (its callback the local page), one person, and the
    hosted sign-in in front of them; tokens signed with a key made in ``tmp_path``."""
    tokens.install()
    tokens.use(tokens.Signing(tokens.signing_key(tmp_path, persist=True), time_scale=60))
    resources = template_resources(f"signin{secrets.token_hex(3)}", REGION, aws.url)
    pool = resource_types.UserPoolProvider().create(
        resources.physical_id("UserPool"), resources.properties("UserPool"), ACCOUNT_ID, REGION
    )
    client_properties = {**resources.properties("PageClient"), "CallbackURLs": [PAGE], "LogoutURLs": [PAGE]}
    client = resource_types.UserPoolClientProvider().create(
        resources.physical_id("PageClient"), client_properties, ACCOUNT_ID, REGION
    )
    for group in ("AdminGroup", "MemberGroup"):
        resource_types.UserPoolGroupProvider().create(group, resources.properties(group), ACCOUNT_ID, REGION)
    clock = [1000.0]
    triggered: list[tuple[str, dict[str, Any]]] = []
    trigger_failure: list[Exception] = []

    def invoke_trigger(function_arn: str, event: dict[str, Any]) -> dict[str, Any]:
        triggered.append((function_arn, event))
        if trigger_failure:
            raise trigger_failure[0]
        return event

    server = HostedSignIn(
        lambda: tokens.backend(ACCOUNT_ID, REGION),
        pool.physical_id,
        listening_socket(0),
        jwks=tokens.public_jwks,
        clock=lambda: clock[0],
        invoke_trigger=invoke_trigger,
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    trigger = resources.resolver.get_att("SignInAuditFunction", "Arn")
    state = SignIn(
        server, aws, pool.physical_id, client.physical_id, clock, triggered, trigger, trigger_failure
    )
    state.cognito.admin_create_user(UserPoolId=state.pool_id, Username="ada", MessageAction="SUPPRESS")
    state.cognito.admin_set_user_password(
        UserPoolId=state.pool_id, Username="ada", Password=PASSWORD, Permanent=True
    )
    state.cognito.admin_add_user_to_group(UserPoolId=state.pool_id, Username="ada", GroupName="admin")
    yield state
    server.shutdown()
    server.server_close()
    tokens.use(None)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any) -> None:
        return None


def call(url: str, form: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> Answer:
    data = urlencode(form).encode() if form is not None else None
    request = urllib.request.Request(url, data=data, headers=headers or {})
    opener = urllib.request.build_opener(_NoRedirects)
    try:
        with opener.open(request, timeout=10) as answer:
            return Answer(answer.status, dict(answer.headers), answer.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, dict(error.headers), error.read())


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize_query(state: SignIn, challenge: str, **overrides: str) -> str:
    query = {
        "response_type": "code",
        "client_id": state.client_id,
        "redirect_uri": PAGE,
        "state": "xyz",
        "scope": "openid email profile",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    return urlencode({**query, **overrides})


def code_for(state: SignIn, challenge: str, password: str = PASSWORD) -> Answer:
    query = authorize_query(state, challenge)
    return call(f"{state.server.url}/login?{query}", {"username": "ada", "password": password})


def signed_in_code(state: SignIn, challenge: str) -> str:
    answer = code_for(state, challenge)
    assert answer.status == 302, answer.body
    return parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]


def exchange(state: SignIn, code: str, verifier: str) -> Answer:
    form = {
        "grant_type": "authorization_code",
        "client_id": state.client_id,
        "code": code,
        "redirect_uri": PAGE,
        "code_verifier": verifier,
    }
    return call(f"{state.server.url}/oauth2/token", form)


def test_the_authorize_page_is_a_labelled_sign_in_form(sign_in: SignIn) -> None:
    answer = call(f"{sign_in.server.url}/oauth2/authorize?{authorize_query(sign_in, pkce()[1])}")

    page = answer.body.decode()
    assert answer.status == 200
    assert '<label for="username">' in page and '<label for="password">' in page
    assert answer.headers["X-Frame-Options"] == "DENY"


def test_a_signed_in_person_is_sent_back_with_a_code_and_the_state(sign_in: SignIn) -> None:
    answer = code_for(sign_in, pkce()[1])

    location = urlsplit(answer.headers["Location"])
    assert answer.status == 302
    assert f"{location.scheme}://{location.netloc}{location.path}" == PAGE
    assert parse_qs(location.query)["state"] == ["xyz"]


def test_a_wrong_password_says_so_in_words_and_sends_no_code(sign_in: SignIn) -> None:
    answer = code_for(sign_in, pkce()[1], password="not-the-password")

    assert answer.status == 400
    assert "Location" not in answer.headers
    assert 'role="alert">Incorrect username or password.' in answer.body.decode()


def test_a_sign_in_invokes_the_pools_post_authentication_trigger_with_cognitos_event(
    sign_in: SignIn,
) -> None:
    # Given the template's pool, whose LambdaConfig names the sign-in audit function
    # When ada signs in with the right password
    answer = code_for(sign_in, pkce()[1])
    # Then the trigger ran once, before the code was handed out, with the event Cognito sends
    assert answer.status == 302
    [(function_arn, event)] = sign_in.triggered
    assert function_arn == sign_in.trigger_arn
    sub = sign_in.cognito.admin_get_user(UserPoolId=sign_in.pool_id, Username="ada")["UserAttributes"]
    assert event == {
        "version": "1",
        "triggerSource": "PostAuthentication_Authentication",
        "region": REGION,
        "userPoolId": sign_in.pool_id,
        "userName": "ada",
        "callerContext": {"awsSdkVersion": "aws-sdk-unknown-unknown", "clientId": sign_in.client_id},
        "request": {
            "userAttributes": {
                **{item["Name"]: item["Value"] for item in sub},
                "cognito:user_status": "CONFIRMED",
            },
            "newDeviceUsed": False,
        },
        "response": {},
    }
    assert event["request"]["userAttributes"]["sub"]


def test_a_wrong_password_invokes_no_trigger(sign_in: SignIn) -> None:
    code_for(sign_in, pkce()[1], password="not-the-password")

    assert sign_in.triggered == []


def test_a_failing_trigger_fails_the_sign_in_and_the_page_says_why(sign_in: SignIn) -> None:
    # Given a post-authentication function that fails
    sign_in.trigger_failure.append(TriggerFailed("audit table unreachable"))
    # When ada signs in with the right password
    answer = code_for(sign_in, pkce()[1])
    # Then she gets no code, and the form says what Cognito's managed login says
    assert answer.status == 400
    assert "Location" not in answer.headers
    assert "PostAuthentication failed with error audit table unreachable." in answer.body.decode()


def test_the_tokens_verify_against_the_served_jwks_and_say_who_signed_in(sign_in: SignIn) -> None:
    verifier, challenge = pkce()

    answer = exchange(sign_in, signed_in_code(sign_in, challenge), verifier)

    assert answer.status == 200
    document = answer.json()
    assert document["token_type"] == "Bearer"
    for jwks_url in (
        f"{sign_in.server.url}/.well-known/jwks.json",
        f"{sign_in.aws.url}/{sign_in.pool_id}/.well-known/jwks.json",  # where the authorizer reads it
    ):
        keys = KeySet.import_key_set(json.loads(urllib.request.urlopen(jwks_url, timeout=10).read()))
        claims = jwt.decode(document["access_token"], keys, algorithms=["RS256"]).claims
        assert claims["iss"] == sign_in.server.issuer
        assert (claims["token_use"], claims["client_id"], claims["username"]) == (
            "access",
            sign_in.client_id,
            "ada",
        )
        assert claims["cognito:groups"] == ["admin"]


def test_tokens_do_not_verify_with_motos_published_key(sign_in: SignIn) -> None:
    verifier, challenge = pkce()
    access = exchange(sign_in, signed_in_code(sign_in, challenge), verifier).json()["access_token"]
    motos = KeySet.import_key_set(json.loads(tokens.MOTOS_PUBLISHED_JWKS))

    with pytest.raises((BadSignatureError, InvalidKeyIdError)):
        jwt.decode(access, motos, algorithms=["RS256"])


def test_the_access_token_lasts_the_clients_validity_over_the_time_scale(sign_in: SignIn) -> None:
    verifier, challenge = pkce()

    document = exchange(sign_in, signed_in_code(sign_in, challenge), verifier).json()

    payload = document["access_token"].split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    # The template's SignInTokenMinutes default (60 minutes), at --time-scale 60.
    assert claims["exp"] - claims["iat"] == 60 == document["expires_in"]


def test_a_wrong_verifier_is_refused_and_spends_the_code(sign_in: SignIn) -> None:
    verifier, challenge = pkce()
    code = signed_in_code(sign_in, challenge)

    wrong = exchange(sign_in, code, pkce()[0])
    again = exchange(sign_in, code, verifier)

    assert (wrong.status, wrong.json()) == (400, {"error": "invalid_grant"})
    assert (again.status, again.json()) == (400, {"error": "invalid_grant"})


def test_a_code_is_good_once(sign_in: SignIn) -> None:
    verifier, challenge = pkce()
    code = signed_in_code(sign_in, challenge)

    first = exchange(sign_in, code, verifier)
    second = exchange(sign_in, code, verifier)

    assert first.status == 200
    assert (second.status, second.json()) == (400, {"error": "invalid_grant"})


def test_a_code_expires_after_five_minutes(sign_in: SignIn) -> None:
    verifier, challenge = pkce()
    code = signed_in_code(sign_in, challenge)
    sign_in.clock[0] += CODE_SECONDS

    assert exchange(sign_in, code, verifier).status == 400


@pytest.mark.parametrize(
    "overrides",
    [{"redirect_uri": "https://evil.example/"}, {"client_id": "unknownclient"}],
    ids=["redirect_uri", "client_id"],
)
def test_a_bad_client_or_redirect_gets_an_error_page_never_a_redirect(
    sign_in: SignIn, overrides: dict[str, str]
) -> None:
    query = authorize_query(sign_in, pkce()[1], **overrides)

    page = call(f"{sign_in.server.url}/oauth2/authorize?{query}")
    login = call(f"{sign_in.server.url}/login?{query}", {"username": "ada", "password": PASSWORD})

    for answer in (page, login):
        assert answer.status == 400
        assert "Location" not in answer.headers


def test_an_authorization_without_pkce_is_sent_back_with_an_error(sign_in: SignIn) -> None:
    query = authorize_query(sign_in, "", code_challenge_method="plain")

    answer = call(f"{sign_in.server.url}/oauth2/authorize?{query}")

    assert answer.status == 302
    assert parse_qs(urlsplit(answer.headers["Location"]).query)["error"] == ["invalid_request"]


def test_revoking_the_refresh_token_ends_its_access_token_and_refreshes(sign_in: SignIn) -> None:
    verifier, challenge = pkce()
    document = exchange(sign_in, signed_in_code(sign_in, challenge), verifier).json()
    sign_in.cognito.get_user(AccessToken=document["access_token"])  # good before

    revoked = call(
        f"{sign_in.server.url}/oauth2/revoke",
        {"token": document["refresh_token"], "client_id": sign_in.client_id},
    )
    refresh = call(
        f"{sign_in.server.url}/oauth2/token",
        {
            "grant_type": "refresh_token",
            "client_id": sign_in.client_id,
            "refresh_token": document["refresh_token"],
        },
    )

    assert revoked.status == 200
    assert refresh.status == 400
    with pytest.raises(ClientError, match="NotAuthorizedException"):
        sign_in.cognito.get_user(AccessToken=document["access_token"])


def test_a_refresh_token_gives_new_tokens(sign_in: SignIn) -> None:
    verifier, challenge = pkce()
    document = exchange(sign_in, signed_in_code(sign_in, challenge), verifier).json()

    refreshed = call(
        f"{sign_in.server.url}/oauth2/token",
        {
            "grant_type": "refresh_token",
            "client_id": sign_in.client_id,
            "refresh_token": document["refresh_token"],
        },
    )

    assert refreshed.status == 200
    assert "refresh_token" not in refreshed.json()
    sign_in.cognito.get_user(AccessToken=refreshed.json()["access_token"])


def test_the_token_endpoint_allows_the_pages_origin_only(sign_in: SignIn) -> None:
    form = {"grant_type": "refresh_token", "client_id": sign_in.client_id, "refresh_token": "nothing"}

    page = call(f"{sign_in.server.url}/oauth2/token", form, {"Origin": "http://127.0.0.1:3000"})
    other = call(f"{sign_in.server.url}/oauth2/token", form, {"Origin": "https://evil.example"})

    assert page.headers.get("Access-Control-Allow-Origin") == "http://127.0.0.1:3000"
    assert "Access-Control-Allow-Origin" not in other.headers


def test_logout_returns_to_a_registered_page_only(sign_in: SignIn) -> None:
    good = call(
        f"{sign_in.server.url}/logout?{urlencode({'client_id': sign_in.client_id, 'logout_uri': PAGE})}"
    )
    bad = call(
        f"{sign_in.server.url}/logout?{urlencode({'client_id': sign_in.client_id, 'logout_uri': 'https://evil.example/'})}"
    )

    assert (good.status, good.headers["Location"]) == (302, PAGE)
    assert bad.status == 400 and "Location" not in bad.headers


def test_the_openid_configuration_names_the_issuer_and_endpoints(sign_in: SignIn) -> None:
    document = call(f"{sign_in.server.url}/.well-known/openid-configuration").json()

    assert document["issuer"] == f"https://cognito-idp.{REGION}.amazonaws.com/{sign_in.pool_id}"
    assert document["token_endpoint"] == f"{sign_in.server.url}/oauth2/token"
    assert document["code_challenge_methods_supported"] == ["S256"]


def test_the_signing_key_is_kept_private_in_the_data_folder(tmp_path: Path) -> None:
    key = tokens.signing_key(tmp_path, persist=True)

    assert (tmp_path / tokens.SIGNING_KEY_FILE).stat().st_mode & 0o777 == 0o600
    assert tokens.signing_key(tmp_path, persist=True).kid == key.kid
    assert tokens.signing_key(tmp_path / "other", persist=True).kid != key.kid
