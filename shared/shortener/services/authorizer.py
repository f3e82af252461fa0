"""The authorizer's service, one per container."""

from functools import lru_cache

from shortener import clock
from shortener.access import keys as access
from shortener.access.sign_in import SignInConfig, TokenJudge
from shortener.access.store_keys import KeysStore
from shortener.access.store_sign_in import CognitoUsers, PoolKeys
from shortener.settings import authorizer_settings


@lru_cache(maxsize=1)
def keys() -> KeysStore:
    return KeysStore(authorizer_settings().KEYS_TABLE)


@lru_cache(maxsize=1)
def people() -> TokenJudge | None:
    """The judge of signed-in people's tokens, or None when sign-in is off."""
    settings = authorizer_settings()
    config = SignInConfig(
        issuer=settings.SIGN_IN_ISSUER,
        client_id=settings.SIGN_IN_CLIENT_ID,
        usage_key=settings.SIGN_IN_USAGE_KEY,
    )
    if not config.enabled:
        return None
    users = CognitoUsers()
    return TokenJudge(config, PoolKeys(users.jwks_url(settings.SIGN_IN_USER_POOL_ID)), users, clock.now)


def authorize(presented: str | None, method_arn: str) -> access.Decision:
    """The decision on the key (or signed-in person's token) a request presented (None or "" when
    it sent none), against this stack's keys table, user pool and access mode."""
    settings = authorizer_settings()
    return access.authorize(
        presented,
        method_arn,
        keys(),
        access=settings.ACCESS,
        anonymous_usage_key=settings.ANONYMOUS_USAGE_KEY,
        people=people(),
        people_usage_key=settings.SIGN_IN_USAGE_KEY,
    )
