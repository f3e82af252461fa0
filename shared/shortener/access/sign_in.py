"""People who sign in: the authorizer's judgement of a Cognito access token sent in X-Api-Key.

A token is a JWT (``<header>.<payload>.<signature>``, base64url parts), never ``shk_...``, so the
authorizer tells a person from a program's key by its shape. It is allowed when (AWS: "Verifying a
JSON Web Token", https://docs.aws.amazon.com/cognito/latest/developerguide/amazon-cognito-user-pools-using-tokens-verifying-a-jwt.html):
- its RS256 signature verifies with a key of the user pool's JWKS (by ``kid``);
- ``iss`` is the user pool, ``token_use`` is ``access`` (an id token is refused), ``client_id`` is
  the page's app client, ``exp`` is in the future;
- Cognito still knows it (GetUser with the token): a token revoked with its refresh token, or of a
  person signed out everywhere, disabled or deleted, is refused before its ``exp``.

The caller is the token's ``username``; its groups give the role (``admin``) and the domains
(``domain:<name>``). Caches: the JWKS per container; API Gateway caches the whole answer per token
for AuthorizerCacheTtlSeconds, which bounds how long a revoked token may still be served."""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from shortener.access.model import ANONYMOUS_OWNER, Caller

# Three base64url parts: a JWT in its compact serialisation (RFC 7519 section 3.1).
_JWT_SHAPE = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")
_OWNER_PATTERN = re.compile(r"^[A-Za-z0-9._@+-]{1,128}$")
ADMIN_GROUP = "admin"
DOMAIN_GROUP_PREFIX = "domain:"


def looks_like_token(presented: str) -> bool:
    """Whether ``presented`` has the shape of a JWT (a key ``shk_...`` never has)."""
    return len(presented) <= 16_384 and _JWT_SHAPE.match(presented) is not None


class TokenRefused(Exception):
    """A token that is not (or no longer) a signed-in person's: the reason is for the log only."""


class JsonWebKeys(Protocol):
    """The user pool's signing keys (its ``/.well-known/jwks.json``)."""

    def key_set(self, *, refresh: bool = False) -> Mapping[str, Any]: ...


class SignedInUsers(Protocol):
    """Cognito's GetUser: whether an access token is still good (not revoked, user enabled)."""

    def is_active(self, access_token: str) -> bool: ...


@dataclass(frozen=True)
class SignInConfig:
    """What the authorizer trusts: the user pool (issuer) and the page's app client."""

    issuer: str
    client_id: str
    # The API Gateway API key every signed-in person is metered by (the usage plan's identifier).
    usage_key: str = ""

    @property
    def enabled(self) -> bool:
        return bool(self.issuer and self.client_id)


class TokenJudge:
    """Verifies access tokens against one user pool: signature, claims, then Cognito."""

    def __init__(
        self,
        config: SignInConfig,
        keys: JsonWebKeys,
        users: SignedInUsers,
        now: Callable[[], datetime],
    ) -> None:
        self._config = config
        self._keys = keys
        self._users = users
        self._now = now

    def caller(self, token: str) -> Caller:
        """The caller a valid access token stands for; TokenRefused otherwise."""
        claims = self._verified_claims(token)
        config = self._config
        if claims.get("iss") != config.issuer:
            raise TokenRefused("another issuer")
        if claims.get("token_use") != "access":
            raise TokenRefused(f"not an access token ({claims.get('token_use')!r})")
        if claims.get("client_id") != config.client_id:
            raise TokenRefused("another app client")
        expires = claims.get("exp")
        if not isinstance(expires, int | float) or expires <= self._now().timestamp():
            raise TokenRefused("expired")
        username = claims.get("username")
        if not isinstance(username, str) or not _OWNER_PATTERN.match(username) or username == ANONYMOUS_OWNER:
            raise TokenRefused("a username that is no owner id")
        # Last, since it is a call to Cognito: only tokens that are otherwise good get it.
        if not self._users.is_active(token):
            raise TokenRefused("revoked, or the user is disabled")
        return caller_of(username, claims.get("cognito:groups"))

    def _verified_claims(self, token: str) -> dict[str, Any]:
        try:
            return self._decode(token, refresh=False)
        except _UnknownKeyId:
            # A key the cached set does not have: the pool may have rotated its keys.
            try:
                return self._decode(token, refresh=True)
            except _UnknownKeyId as exc:
                raise TokenRefused("signed with a key the user pool does not publish") from exc

    def _decode(self, token: str, *, refresh: bool) -> dict[str, Any]:
        try:
            key_set = KeySet.import_key_set(dict(self._keys.key_set(refresh=refresh)))  # type: ignore[arg-type]
        except (JoseError, ValueError, KeyError, TypeError) as exc:
            raise TokenRefused("the user pool's keys could not be read") from exc
        try:
            decoded = jwt.decode(token, key_set, algorithms=["RS256"])
        except JoseError as exc:
            if isinstance(exc, InvalidKeyIdError):
                raise _UnknownKeyId() from exc
            raise TokenRefused(f"bad token: {exc.error}") from exc
        except (ValueError, TypeError) as exc:
            raise TokenRefused("malformed token") from exc
        return dict(decoded.claims)


class _UnknownKeyId(Exception):
    pass


def caller_of(username: str, groups: Any) -> Caller:
    """The caller of a signed-in person: role admin if in group ``admin``, else member; the domains
    of their ``domain:<name>`` groups (none: every domain)."""
    names = [group for group in groups if isinstance(group, str)] if isinstance(groups, list) else []
    domains = [
        group[len(DOMAIN_GROUP_PREFIX) :].strip().lower()
        for group in names
        if group.startswith(DOMAIN_GROUP_PREFIX) and group[len(DOMAIN_GROUP_PREFIX) :].strip()
    ]
    return Caller(
        owner_id=username,
        role="admin" if ADMIN_GROUP in names else "member",
        key_id="",
        key_name=username,
        domains=",".join(sorted(set(domains))),
    )
