"""Short codes: generated from counter ids, derived from a URL hash, or chosen by the user."""

import base64
import hashlib
import hmac
import itertools
import re
import string
import sys
from collections.abc import Callable, Iterator
from functools import lru_cache

from sqids import Sqids
from sqids.constants import DEFAULT_BLOCKLIST

from shortener.exceptions import InvalidCodeError

MIN_GENERATED_LENGTH = 4
MIN_HASH_LENGTH = 4
CUSTOM_CODE_PATTERN = re.compile(r"[A-Za-z0-9_-]{3,64}")

# Route names of the API and words kept for future routes; never a code, in any letter case.
RESERVED_WORDS = frozenset(
    {
        "bulk",
        "jobs",
        "links",
        "blocklist",
        "well-known",
        "apple-app-site-association",
        "api",
        "admin",
        "health",
        "static",
        "assets",
        "favicon",
        "robots",
        "index",
        "loops",
        "docs",
        # GET /clicks (the caller's top links); a link made with this code before keeps its
        # management routes, but /clicks no longer redirects (docs/clicks.md).
        "clicks",
        # POST /links/batch, GET /links/batch/{batch_id} (changes in bulk).
        "batch",
        # GET /audit (the audit log), /webhooks (endpoints told of events).
        "audit",
        "webhooks",
        # GET /domains (the stack's domains).
        "domains",
    }
)

# A fixed shuffle of A-Z a-z 0-9. It is public (it is in this repository), so codes made with it
# alone can be counted through; a deployment's codes are keyed by its CODE_ALPHABET or, without
# one, by its stack's own key (CODE_KEY), and this only serves tests and tools without either.
DEFAULT_ALPHABET = "kR3uXoTbV8Lq1NjZmWf6yHcE0SgAiP4rD9hKszCnYe7GwQa2vMBtJ5dOlFxIUp"


# Ids below 2**17 give 4-character codes; each later power-of-two band is permuted on its own, so
# codes grow with the counter instead of starting long.
_FIRST_BAND_BITS = 17
_FEISTEL_ROUNDS = 4
# Input widths whose round outputs forward keeps in full tables: at most 4 rounds of 2**16
# entries a width, for ids below 2**33 (some 8 billion links); wider ones use the cache.
_TABLE_BITS = 16
# Round outputs kept per permutation: a round's input has half a band's bits, so ids below 2**26
# (67 million links) need at most 4 * 2**13 of them; beyond, the least recently used go.
_ROUND_CACHE_SIZE = 1 << 15


class IdPermutation:
    """A keyed bijection on the non-negative integers that keeps each band [2**k, 2**(k+1)) (and
    [0, 2**17)) in itself: a balanced Feistel network over the band's bits, with cycle-walking for
    odd widths. Neighbouring ids come out unrelated, so codes cannot be guessed by counting."""

    def __init__(self, key: str) -> None:
        self._key = hashlib.blake2b(key.encode(), digest_size=32).digest()
        # A keyed hash per round was most of a code's CPU (make bench ARGS=cpu); its inputs repeat
        # (half a band's bits each), so each is computed once.
        self._cached_round: Callable[[int, int, int], int] = lru_cache(maxsize=_ROUND_CACHE_SIZE)(self._round)
        # forward's own memory of the round outputs, a table per round for each input width up to
        # _TABLE_BITS (a list index costs a fraction of a cache lookup, and forward runs per code).
        self._tables: dict[int, list[list[int | None]]] = {}

    def forward(self, number: int) -> int:
        # _walk and _feistel forwards, in one frame: this runs for every generated code, and the
        # calls were half its CPU (make bench ARGS=cpu). tests/shortener/links/test_codes.py checks it
        # against inverse and against codes stored before.
        base, bits = self._band(number)
        half = (bits + 1) // 2
        if half > _TABLE_BITS:
            return base + self._walk(number - base, bits, inverse=False)
        tables = self._tables.get(half) or self._new_tables(half)
        mask = (1 << half) - 1
        value = number - base
        while True:
            left, right = value >> half, value & mask
            for round_number, table in enumerate(tables):
                output = table[right]
                if output is None:
                    output = table[right] = self._round(round_number, right, half)
                left, right = right, left ^ output
            value = (left << half) | right
            if value < 1 << bits:
                return base + value

    def _new_tables(self, half: int) -> list[list[int | None]]:
        tables: list[list[int | None]] = [[None] * (1 << half) for _ in range(_FEISTEL_ROUNDS)]
        self._tables[half] = tables
        return tables

    def inverse(self, number: int) -> int:
        base, bits = self._band(number)
        return base + self._walk(number - base, bits, inverse=True)

    @staticmethod
    def _band(number: int) -> tuple[int, int]:
        if number < 1 << _FIRST_BAND_BITS:
            return 0, _FIRST_BAND_BITS
        bits = number.bit_length() - 1
        return 1 << bits, bits

    def _walk(self, value: int, bits: int, *, inverse: bool) -> int:
        half = (bits + 1) // 2
        while True:
            value = self._feistel(value, half, inverse=inverse)
            if value < 1 << bits:
                return value

    def _feistel(self, value: int, half: int, *, inverse: bool) -> int:
        mask = (1 << half) - 1
        left, right = value >> half, value & mask
        rounds = range(_FEISTEL_ROUNDS - 1, -1, -1) if inverse else range(_FEISTEL_ROUNDS)
        for round_number in rounds:
            if inverse:
                left, right = right ^ self._cached_round(round_number, left, half), left
            else:
                left, right = right, left ^ self._cached_round(round_number, right, half)
        return (left << half) | right

    def _round(self, round_number: int, value: int, half: int) -> int:
        digest = hashlib.blake2b(
            f"{round_number}:{half}:{value}".encode(), key=self._key, digest_size=16
        ).digest()
        return int.from_bytes(digest) & ((1 << half) - 1)


class _OneNumberSqids:
    """``Sqids.encode([number])`` with less CPU per code, giving exactly the same codes: sqids'
    algorithm for one number, with the alphabet's rotations computed once and the blocklist checked
    by looking the code's substrings up in a set instead of scanning every word (that scan was most
    of sqids' time). A code that sqids would pad to the minimum length, or generate again because
    its first form holds a blocked word, is left to sqids itself. tests/shortener/links/test_codes.py holds
    codes generated before this class existed, and compares it with sqids."""

    def __init__(self, sqids: Sqids, alphabet: str, min_length: int, blocklist: list[str]) -> None:
        self._sqids = sqids
        # Three-character codes are checked against the blocklist differently: left to sqids.
        self._shortest = max(min_length, 4)
        # As in sqids: the alphabet is shuffled once; the number picks a rotation of it, whose
        # first character is the code's prefix and whose other characters, reversed, are the
        # digits the number is written in.
        self._alphabet = _sqids_shuffle(alphabet)
        self._rotations: list[tuple[str, str]] = []
        for offset in range(len(alphabet)):
            rotation = self._alphabet[offset:] + self._alphabet[:offset]
            self._rotations.append((rotation[0], rotation[::-1][1:]))
        # sqids' partition of the blocklist: three-letter words only ever match a whole
        # three-letter code (never one of ours); words with a digit match at either end; other
        # words anywhere.
        words = {word.lower() for word in blocklist if len(word) > 3}
        # Each looked up by the code's substrings of its lengths (a set lookup each, where
        # str.startswith over every word was most of a code's CPU).
        self._blocked_at_ends = frozenset(word for word in words if set(word) & _DIGITS)
        self._at_ends_lengths = sorted({len(word) for word in self._blocked_at_ends})
        self._blocked_anywhere = frozenset(word for word in words if not set(word) & _DIGITS)
        self._anywhere_lengths = sorted({len(word) for word in self._blocked_anywhere})

    def encode(self, number: int) -> str:
        size = len(self._alphabet)
        if not 0 <= number <= sys.maxsize:
            return self._sqids.encode([number])  # sqids' own error
        prefix, digits = self._rotations[(ord(self._alphabet[number % size]) + 1) % size]
        base = size - 1
        written: list[str] = []
        rest = number
        while True:
            written.append(digits[rest % base])
            rest //= base
            if not rest:
                break
        code = prefix + "".join(reversed(written))
        if len(code) < self._shortest or self._is_blocked(code.lower()):
            return self._sqids.encode([number])
        return code

    def _is_blocked(self, code: str) -> bool:
        for length in self._at_ends_lengths:
            if length > len(code):
                break
            if code[:length] in self._blocked_at_ends or code[-length:] in self._blocked_at_ends:
                return True
        for length in self._anywhere_lengths:
            if length > len(code):
                break
            for start in range(len(code) - length + 1):
                if code[start : start + length] in self._blocked_anywhere:
                    return True
        return False


_DIGITS = frozenset(string.digits)


def _sqids_shuffle(alphabet: str) -> str:
    """sqids' deterministic shuffle of an alphabet (``Sqids.__shuffle``)."""
    chars = list(alphabet)
    i, j = 0, len(chars) - 1
    while j > 0:
        r = (i * j + ord(chars[i]) + ord(chars[j])) % len(chars)
        chars[i], chars[r] = chars[r], chars[i]
        i += 1
        j -= 1
    return "".join(chars)


class CodeGenerator:
    """Turns counter ids into codes: at least 4 characters, neighbouring ids give unrelated codes
    (a keyed permutation, then sqids), offensive words never appear and reserved route words are
    never a whole code (sqids skips them).

    The key: ``alphabet`` when given (it was the only key before stacks had their own, so codes of
    deployments that set one do not change); else ``key`` (the stack's own secret, CODE_KEY), from
    which both the alphabet's order and the permutation are derived; else the public built-in
    alphabet. ``fingerprint`` names the key without revealing it."""

    def __init__(self, alphabet: str = "", key: str = "") -> None:
        if alphabet:
            material, permutation_key = f"alphabet:{alphabet}", alphabet
        elif key:
            material = permutation_key = f"stack:{key}"
            alphabet = keyed_shuffle(DEFAULT_ALPHABET, material)
        else:
            alphabet = permutation_key = DEFAULT_ALPHABET
            material = f"alphabet:{alphabet}"
        self.fingerprint = hmac.new(material.encode(), b"shortener code key", hashlib.sha256).hexdigest()[:16]
        self._material = material
        self._permutation = IdPermutation(permutation_key)
        blocklist = sorted(set(DEFAULT_BLOCKLIST) | RESERVED_WORDS)
        self._sqids = Sqids(alphabet=alphabet, min_length=MIN_GENERATED_LENGTH, blocklist=blocklist)
        self._encoder = _OneNumberSqids(self._sqids, alphabet, MIN_GENERATED_LENGTH, blocklist)

    def encode(self, link_id: int) -> str:
        """The code of counter id ``link_id`` (a positive integer)."""
        return self._encoder.encode(self._permutation.forward(link_id))

    def hash_candidates(self, normalised_url: str) -> Iterator[str]:
        """The ``CodeStrategy=hash`` codes of a URL, keyed with this generator's key."""
        return hash_code_candidates(normalised_url, self._material)

    def id_of(self, code: str) -> int | None:
        """The counter id that generates exactly ``code``, or None when no id ever would. Custom and
        hash codes that fall in the generated space must be reserved against the counter."""
        try:
            numbers = self._sqids.decode(code)
            if len(numbers) != 1 or self._sqids.encode(numbers) != code:
                return None
        except (ValueError, IndexError):
            return None
        link_id = self._permutation.inverse(numbers[0])
        return link_id if link_id >= 1 else None


@lru_cache(maxsize=4)
def code_generator(alphabet: str = "", key: str = "") -> CodeGenerator:
    """One generator per key per container (building the blocklist is not free)."""
    return CodeGenerator(alphabet, key)


def keyed_shuffle(characters: str, key: str) -> str:
    """``characters`` in an order only ``key`` determines: Fisher-Yates driven by HMAC-SHA256 in
    counter mode (written out rather than random.shuffle, whose algorithm Python may change: the
    order must stay the same forever, or a deployment's codes would change)."""
    stream = _keyed_stream(key.encode())
    order = list(characters)
    for last in range(len(order) - 1, 0, -1):
        # Rejection sampling: an unbiased index in [0, last].
        limit = 256 - 256 % (last + 1)
        while (byte := next(stream)) >= limit:
            pass
        swap = byte % (last + 1)
        order[last], order[swap] = order[swap], order[last]
    return "".join(order)


def _keyed_stream(key: bytes) -> Iterator[int]:
    for counter in itertools.count():
        yield from hmac.new(key, f"alphabet:{counter}".encode(), hashlib.sha256).digest()


def is_reserved(code: str) -> bool:
    return code.lower() in RESERVED_WORDS


def is_well_formed(code: str) -> bool:
    """Whether ``code`` could name a link at all; anything else is a 404 with no database call."""
    return CUSTOM_CODE_PATTERN.fullmatch(code) is not None and not is_reserved(code)


def validate_custom_code(code: str) -> str:
    """``code`` if a user may choose it, else InvalidCodeError saying why."""
    if CUSTOM_CODE_PATTERN.fullmatch(code) is None:
        raise InvalidCodeError("A custom code is 3 to 64 characters of letters, digits, '-' and '_'.")
    if is_reserved(code):
        raise InvalidCodeError(f"'{code}' is a reserved word and cannot be a code.")
    return code


def hash_code_candidates(normalised_url: str, key: str) -> Iterator[str]:
    """Ever longer prefixes (from 4 characters) of the URL-safe base64 HMAC-SHA-256 of the URL under
    ``key`` (the stack's code key): a bare digest would let anyone test whether a URL was shortened
    by computing its code and following it."""
    mac = hmac.new(key.encode(), normalised_url.encode(), hashlib.sha256).digest()
    digest = base64.urlsafe_b64encode(mac).decode()
    digest = digest.rstrip("=")
    for length in range(MIN_HASH_LENGTH, len(digest) + 1):
        candidate = digest[:length]
        if not is_reserved(candidate):
            yield candidate
