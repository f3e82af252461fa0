"""Signed-in people: the authorizer's judgement of Cognito access tokens, with tokens signed here by
an RSA key made for the test (its public half is the user pool's JWKS)."""

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from shortener.access.keys import authorize
from shortener.access.sign_in import SignInConfig, TokenJudge, TokenRefused, caller_of, looks_like_token

ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Pool"
CLIENT = "pageclient123"
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
ARN = "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/GET/links"
STAGE = "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/*"
POOL_KEY = RSAKey.generate_key(2048, parameters={"kid": "pool-key-1"})


class FakePoolKeys:
    """The pool's JWKS; ``rotated`` is what a refresh reads."""

    def __init__(self, *keys: RSAKey, rotated: tuple[RSAKey, ...] = ()) -> None:
        self.keys = keys
        self.rotated = rotated
        self.reads: list[bool] = []

    def key_set(self, *, refresh: bool = False) -> Mapping[str, Any]:
        self.reads.append(refresh)
        keys = self.rotated if refresh and self.rotated else self.keys
        return {"keys": [key.as_dict(private=False) for key in keys]}


class FakeUsers:
    """Cognito's GetUser over a set of revoked tokens."""

    def __init__(self) -> None:
        self.revoked: set[str] = set()
        self.asked: list[str] = []

    def is_active(self, access_token: str) -> bool:
        self.asked.append(access_token)
        return access_token not in self.revoked


def token(key: RSAKey = POOL_KEY, **overrides: Any) -> str:
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "sub": "5c1e1d1f-0000-4000-8000-000000000001",
        "client_id": CLIENT,
        "token_use": "access",
        "scope": "openid email profile",
        "username": "ada@example.com",
        "cognito:groups": ["member"],
        "iat": int(NOW.timestamp()) - 60,
        "exp": int((NOW + timedelta(hours=1)).timestamp()),
    }
    claims.update(overrides)
    claims = {name: value for name, value in claims.items() if value is not None}
    return jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)


def judge(keys: FakePoolKeys | None = None, users: FakeUsers | None = None) -> TokenJudge:
    return TokenJudge(
        SignInConfig(ISSUER, CLIENT, "people-usage"),
        keys or FakePoolKeys(POOL_KEY),
        users or FakeUsers(),
        lambda: NOW,
    )


def test_a_valid_access_token_is_its_username_as_a_member() -> None:
    caller = judge().caller(token())

    assert (caller.owner_id, caller.role, caller.key_id, caller.key_name) == (
        "ada@example.com",
        "member",
        "",
        "ada@example.com",
    )
    assert caller.domains == ""


def test_the_admin_group_makes_an_admin_and_domain_groups_the_domains() -> None:
    groups = ["admin", "domain:Go.example", "domain:shop.example"]

    caller = judge().caller(token(**{"cognito:groups": groups}))

    assert caller.role == "admin"
    assert caller.domains == "go.example,shop.example"


def test_a_token_signed_by_another_key_with_the_pools_kid_is_refused() -> None:
    forger = RSAKey.generate_key(2048, parameters={"kid": POOL_KEY.kid})

    with pytest.raises(TokenRefused, match="bad token"):
        judge().caller(token(forger))


def test_a_tampered_payload_is_refused() -> None:
    header, _, signature = token().split(".")
    other_payload = token(username="mallory").split(".")[1]

    with pytest.raises(TokenRefused):
        judge().caller(f"{header}.{other_payload}.{signature}")


def test_an_expired_token_is_refused() -> None:
    with pytest.raises(TokenRefused, match="expired"):
        judge().caller(token(exp=int(NOW.timestamp()) - 1))


def test_an_id_token_is_refused() -> None:
    id_token = token(token_use="id", client_id=None, aud=CLIENT)

    with pytest.raises(TokenRefused, match="not an access token"):
        judge().caller(id_token)


def test_a_token_of_another_app_client_is_refused() -> None:
    with pytest.raises(TokenRefused, match="another app client"):
        judge().caller(token(client_id="someoneelse"))


def test_a_token_of_another_user_pool_is_refused() -> None:
    with pytest.raises(TokenRefused, match="another issuer"):
        judge().caller(token(iss="https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Other"))


def test_a_revoked_token_is_refused_by_cognito() -> None:
    users = FakeUsers()
    revoked = token()
    users.revoked.add(revoked)

    with pytest.raises(TokenRefused, match="revoked"):
        judge(users=users).caller(revoked)


def test_cognito_is_asked_only_about_tokens_that_are_otherwise_good() -> None:
    users = FakeUsers()

    with pytest.raises(TokenRefused):
        judge(users=users).caller(token(exp=int(NOW.timestamp()) - 1))

    assert users.asked == []


@pytest.mark.parametrize("username", ["anonymous", "a b", "x/y", ""])
def test_a_username_that_is_no_owner_id_is_refused(username: str) -> None:
    with pytest.raises(TokenRefused, match="username"):
        judge().caller(token(username=username))


def test_a_rotated_key_is_found_by_reading_the_keys_again() -> None:
    new_key = RSAKey.generate_key(2048, parameters={"kid": "pool-key-2"})
    keys = FakePoolKeys(POOL_KEY, rotated=(POOL_KEY, new_key))

    caller = judge(keys).caller(token(new_key))

    assert caller.owner_id == "ada@example.com"
    assert keys.reads == [False, True]


def test_a_key_the_pool_never_published_is_refused() -> None:
    stranger = RSAKey.generate_key(2048, parameters={"kid": "not-the-pools"})

    with pytest.raises(TokenRefused, match="does not publish"):
        judge().caller(token(stranger))


def test_a_key_and_a_token_are_told_apart_by_shape() -> None:
    assert looks_like_token(token())
    assert not looks_like_token("shk_0123456789ab_" + "x" * 43)
    assert not looks_like_token("a.b")


def test_the_authorizer_allows_a_person_on_the_whole_stage_metered_by_the_people_key() -> None:
    decision = authorize(
        token(), ARN, _NoKeys(), access="keys", people=judge(), people_usage_key="people-usage"
    )

    response = decision.response()
    assert decision.allow
    assert response["principalId"] == "person:ada@example.com"
    assert response["policyDocument"]["Statement"][0]["Resource"] == [STAGE]
    assert response["context"]["owner_id"] == "ada@example.com"
    assert response["usageIdentifierKey"] == "people-usage"


def test_the_authorizer_refuses_a_bad_token_saying_sign_in_again() -> None:
    decision = authorize(token(exp=int(NOW.timestamp()) - 1), ARN, _NoKeys(), access="keys", people=judge())

    response = decision.response()
    assert not decision.allow
    assert response["context"]["refusal"] == "invalid_api_key"
    assert "sign in again" in response["context"]["refusal_message"]


def test_without_sign_in_a_token_is_a_malformed_key() -> None:
    decision = authorize(token(), ARN, _NoKeys(), access="keys")

    assert not decision.allow
    assert decision.reason == "malformed key"


def test_caller_of_ignores_groups_that_are_not_text() -> None:
    assert caller_of("bob", ["admin", 3, None]).role == "admin"
    assert caller_of("bob", "admin").role == "member"


class _NoKeys:
    def get_key(self, key_id: str) -> None:
        return None
