"""A link's password, kept only as a slow salted hash (scrypt, from the standard library), and
checked in constant time. No AWS calls.

The stored text names its parameters (``scrypt$<n>$<r>$<p>$<salt>$<digest>``), so they may grow
later without making older hashes unreadable. A hash costs tens of milliseconds on purpose (a
stolen table must not give the passwords back quickly), which a bulk file with one password on
every row cannot pay per row: within one scope (a bulk job) rows with the same password share one
hash (``hash_password``'s cache), so a file keeps its speed (docs/figures.md)."""

import base64
import hashlib
import hmac
import os
import threading
from collections import OrderedDict

# scrypt's cost: 2**14 blocks of 8 x 128 bytes (16 MiB), one lane; OWASP's minimum for scrypt is
# N=2**17 with r=8 or the equivalent (2**14 here with p=1 keeps the Lambda's memory small) ("Password
# Storage Cheat Sheet", https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html).
_N, _R, _P = 2**14, 8, 1
_SALT_BYTES = 16
_DIGEST_BYTES = 32
_MAX_MEMORY = 64 * 1024 * 1024
_SCHEME = "scrypt"
# Hashes shared within a scope (a job), the most recent first out; the plain text stays only here.
_CACHE_SIZE = 256
_cache: OrderedDict[tuple[str, str], str] = OrderedDict()
_lock = threading.Lock()


def hash_password(password: str, scope: str | None = None) -> str:
    """``password`` as stored: a fresh salt and its scrypt digest. With a ``scope`` (a bulk job's
    id) the same password within it gets the hash made first, so a file's rows sharing a password
    cost one hash, not one each."""
    if scope is None:
        return _hash(password)
    key = (scope, password)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    made = _hash(password)
    with _lock:
        made = _cache.setdefault(key, made)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return made


def password_matches(password: str, stored: str) -> bool:
    """Whether ``password`` is the one ``stored`` was made from (compared in constant time); False
    for a stored text this code cannot read."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != _SCHEME:
            return False
        expected = base64.b64decode(digest)
        given = _digest(password, base64.b64decode(salt), (int(n), int(r), int(p)), len(expected))
    except ValueError:
        return False
    return hmac.compare_digest(given, expected)


def _hash(password: str) -> str:
    salt = os.urandom(_SALT_BYTES)
    digest = _digest(password, salt, (_N, _R, _P), _DIGEST_BYTES)
    encoded = (base64.b64encode(part).decode() for part in (salt, digest))
    return "$".join((_SCHEME, str(_N), str(_R), str(_P), *encoded))


def _digest(password: str, salt: bytes, cost: tuple[int, int, int], size: int) -> bytes:
    n, r, p = cost
    return hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=_MAX_MEMORY, dklen=size)
