"""The authorizer's service, one per container."""

from functools import lru_cache

from shortener.access import keys as access
from shortener.access.store_keys import KeysStore
from shortener.settings import authorizer_settings


@lru_cache(maxsize=1)
def keys() -> KeysStore:
    return KeysStore(authorizer_settings().KEYS_TABLE)


def authorize(presented: str | None, method_arn: str) -> access.Decision:
    """The decision on the key a request presented (None or "" when it sent none), against this
    stack's keys table and access mode."""
    settings = authorizer_settings()
    return access.authorize(
        presented,
        method_arn,
        keys(),
        access=settings.ACCESS,
        anonymous_usage_key=settings.ANONYMOUS_USAGE_KEY,
    )
