"""The authorizer's service, one per container."""

from functools import lru_cache

from shortener.access.store_keys import KeysStore
from shortener.settings import authorizer_settings


@lru_cache(maxsize=1)
def keys() -> KeysStore:
    return KeysStore(authorizer_settings().KEYS_TABLE)
