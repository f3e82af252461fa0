"""Short codes: generated from counter ids, derived from a URL hash, or chosen by the user."""

import base64
import hashlib
import re
from collections.abc import Iterator
from functools import lru_cache

from sqids import Sqids
from sqids.constants import DEFAULT_BLOCKLIST

from shortener.models.exceptions import InvalidCodeError

MIN_GENERATED_LENGTH = 4
MIN_HASH_LENGTH = 4
CUSTOM_CODE_PATTERN = re.compile(r"[A-Za-z0-9_-]{3,64}")

# Route names of the API and words kept for future routes; never a code, in any letter case.
RESERVED_WORDS = frozenset(
    {
        "bulk",
        "jobs",
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
    }
)

# A fixed shuffle of A-Z a-z 0-9. Deployments set their own (CODE_ALPHABET) so that nobody can
# decode their codes back to ids.
DEFAULT_ALPHABET = "kR3uXoTbV8Lq1NjZmWf6yHcE0SgAiP4rD9hKszCnYe7GwQa2vMBtJ5dOlFxIUp"


class CodeGenerator:
    """Turns counter ids into codes: at least 4 characters, neighbouring ids give unrelated codes,
    offensive words and reserved route words never appear (sqids skips them)."""

    def __init__(self, alphabet: str = "") -> None:
        self._sqids = Sqids(
            alphabet=alphabet or DEFAULT_ALPHABET,
            min_length=MIN_GENERATED_LENGTH,
            blocklist=sorted(set(DEFAULT_BLOCKLIST) | RESERVED_WORDS),
        )

    def encode(self, link_id: int) -> str:
        """The code of counter id ``link_id`` (a positive integer)."""
        return self._sqids.encode([link_id])

    def id_of(self, code: str) -> int | None:
        """The counter id that generates exactly ``code``, or None when no id ever would. Custom and
        hash codes that fall in the generated space must be reserved against the counter."""
        try:
            numbers = self._sqids.decode(code)
        except (ValueError, IndexError):
            return None
        if len(numbers) != 1 or numbers[0] < 1:
            return None
        return numbers[0] if self._sqids.encode(numbers) == code else None


@lru_cache(maxsize=4)
def code_generator(alphabet: str = "") -> CodeGenerator:
    """One generator per alphabet per container (building the blocklist is not free)."""
    return CodeGenerator(alphabet)


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


def hash_code_candidates(normalised_url: str) -> Iterator[str]:
    """Ever longer prefixes (from 4 characters) of the URL-safe base64 SHA-1 of the URL."""
    digest = base64.urlsafe_b64encode(hashlib.sha1(normalised_url.encode()).digest()).decode()  # noqa: S324 - a short id, not security
    digest = digest.rstrip("=")
    for length in range(MIN_HASH_LENGTH, len(digest) + 1):
        candidate = digest[:length]
        if not is_reserved(candidate):
            yield candidate
