"""Code generation, custom-code rules and hash-keyed codes."""

import base64
import hashlib
import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqids import Sqids
from sqids.constants import DEFAULT_BLOCKLIST

from shortener.exceptions import InvalidCodeError
from shortener.links.codes import (
    DEFAULT_ALPHABET,
    RESERVED_WORDS,
    CodeGenerator,
    IdPermutation,
    hash_code_candidates,
    is_well_formed,
    keyed_shuffle,
    validate_custom_code,
)

GENERATOR = CodeGenerator()
OTHER_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
URL_SAFE = re.compile(r"[A-Za-z0-9_-]+")
ids = st.integers(min_value=1, max_value=2**53)


@given(ids)
def test_generated_codes_are_url_safe_and_at_least_four_characters(link_id: int) -> None:
    code = GENERATOR.encode(link_id)
    assert len(code) >= 4
    assert URL_SAFE.fullmatch(code)
    assert is_well_formed(code)


@given(ids)
def test_a_generated_code_decodes_to_its_id(link_id: int) -> None:
    assert GENERATOR.id_of(GENERATOR.encode(link_id)) == link_id


@given(ids, ids)
def test_different_ids_never_share_a_code(first: int, second: int) -> None:
    if first != second:
        assert GENERATOR.encode(first) != GENERATOR.encode(second)


def common_prefix(first: str, second: str) -> int:
    return next((n for n in range(min(len(first), len(second)), 0, -1) if first[:n] == second[:n]), 0)


@pytest.mark.parametrize("start", [1, 2**17, 10**9])
def test_neighbouring_ids_do_not_give_neighbouring_codes(start: int) -> None:
    # Counting up must not reveal the next code: consecutive codes rarely share a prefix (random
    # strings share a first character 1 time in 62) and are in no particular order.
    codes = [GENERATOR.encode(link_id) for link_id in range(start, start + 20_000)]
    pairs = list(itertools.pairwise(codes))
    shared = [common_prefix(this, following) for this, following in pairs]
    assert sum(length >= 1 for length in shared) / len(pairs) < 0.05
    assert sum(length >= 2 for length in shared) / len(pairs) < 0.01
    assert max(shared) <= 3
    assert 0.4 < sum(this < following for this, following in pairs) / len(pairs) < 0.6


@given(ids)
def test_permuted_ids_stay_in_their_band_and_invert(link_id: int) -> None:
    permutation = IdPermutation(DEFAULT_ALPHABET)
    permuted = permutation.forward(link_id)
    assert permutation.inverse(permuted) == link_id
    assert permuted.bit_length() == link_id.bit_length() or max(permuted, link_id) < 2**17


def test_the_first_131072_ids_have_four_character_codes() -> None:
    assert {len(GENERATOR.encode(link_id)) for link_id in range(1, 2**17, 97)} == {4}


def test_generated_codes_are_never_a_reserved_word_nor_contain_an_offensive_one() -> None:
    codes = [GENERATOR.encode(link_id).lower() for link_id in range(1, 200_000, 7)]
    assert not set(codes) & RESERVED_WORDS
    for word in ("fuck", "shit", "cunt", "porn"):
        assert not any(word in code for code in codes), word


def test_another_alphabet_gives_other_codes() -> None:
    other = CodeGenerator(OTHER_ALPHABET)
    assert [other.encode(n) for n in range(1, 50)] != [GENERATOR.encode(n) for n in range(1, 50)]


def test_a_stack_key_gives_its_own_codes_and_its_own_fingerprint() -> None:
    # Given two stacks with no alphabet set, each with its own key
    first, second = CodeGenerator(key="5f1c0e9a-stack-one"), CodeGenerator(key="0b7d2c44-stack-two")
    # Then their codes differ from each other and from the public built-in sequence
    built_in = [GENERATOR.encode(n) for n in range(1, 50)]
    assert [first.encode(n) for n in range(1, 50)] != built_in
    assert [first.encode(n) for n in range(1, 50)] != [second.encode(n) for n in range(1, 50)]
    # And the fingerprints tell the three keys apart without containing them
    fingerprints = {GENERATOR.fingerprint, first.fingerprint, second.fingerprint}
    assert len(fingerprints) == 3
    assert all("stack" not in fingerprint for fingerprint in fingerprints)


def test_the_built_in_sequence_is_the_documented_one() -> None:
    # The README and the issue quote these: they are what a key-less deployment used to give.
    assert [GENERATOR.encode(n) for n in (1, 2, 3)] == ["i55K", "U0iJ", "4zNY"]


def test_a_keyed_generator_is_stable_and_round_trips() -> None:
    # Codes of a stack must never change between containers or Python versions.
    keyed = CodeGenerator(key="stable-key")
    again = CodeGenerator(key="stable-key")
    assert [keyed.encode(n) for n in range(1, 20)] == [again.encode(n) for n in range(1, 20)]
    assert keyed.fingerprint == again.fingerprint
    assert all(keyed.id_of(keyed.encode(n)) == n for n in (1, 2**17, 10**12))


def test_an_alphabet_keeps_its_codes_whatever_the_stack_key() -> None:
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    assert CodeGenerator(alphabet, key="any").encode(7) == CodeGenerator(alphabet).encode(7)


def test_the_keyed_shuffle_is_a_permutation() -> None:
    shuffled = keyed_shuffle(DEFAULT_ALPHABET, "k")
    assert sorted(shuffled) == sorted(DEFAULT_ALPHABET)
    assert shuffled != DEFAULT_ALPHABET
    assert shuffled == keyed_shuffle(DEFAULT_ALPHABET, "k") != keyed_shuffle(DEFAULT_ALPHABET, "j")


@given(
    st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", min_size=1, max_size=20
    )
)
def test_id_of_is_none_unless_the_string_is_exactly_a_generated_code(text: str) -> None:
    link_id = GENERATOR.id_of(text)
    assert link_id is None or GENERATOR.encode(link_id) == text


@pytest.mark.parametrize("code", ["abc", "Summer-Sale_2026", "x" * 64])
def test_valid_custom_codes_are_accepted(code: str) -> None:
    assert validate_custom_code(code) == code


@pytest.mark.parametrize(
    "code", ["ab", "x" * 65, "has space", "dot.ted", "ümlaut", "slash/ed", "", "BULK", "jobs"]
)
def test_invalid_or_reserved_custom_codes_are_refused(code: str) -> None:
    with pytest.raises(InvalidCodeError):
        validate_custom_code(code)


def test_hash_codes_are_growing_prefixes_of_one_digest() -> None:
    candidates = list(hash_code_candidates("https://example.com/", "stack:k1"))
    assert len(candidates[0]) == 4
    assert all(later.startswith(candidates[0]) for later in candidates)
    assert candidates == list(hash_code_candidates("https://example.com/", "stack:k1"))
    assert candidates[0] != next(hash_code_candidates("https://example.org/", "stack:k1"))


def test_hash_codes_are_keyed_so_nobody_can_compute_a_urls_code() -> None:
    # The bare SHA-1 prefix anyone could compute to test whether a URL was shortened
    url = "https://example.com/private/report"
    bare = base64.urlsafe_b64encode(hashlib.sha1(url.encode()).digest()).decode()
    keyed = list(CodeGenerator(key="stack-a").hash_candidates(url))
    # Then the codes are not its prefixes, and depend on the stack's key
    assert not bare.startswith(keyed[0])
    assert keyed != list(CodeGenerator(key="stack-b").hash_candidates(url))
    assert keyed == list(CodeGenerator(key="stack-a").hash_candidates(url))


# Codes are a stored contract: links written with them exist. These were generated before code
# generation was made faster, for a spread of ids, for ids whose permuted number sqids pads to four
# characters (permuted 1, 2, 61, 62, 3843), and for ids whose first code held a blocked word (sqids
# generated another: the codes differ from those of a Sqids without a blocklist).
STORED_CODES = {
    "": {
        1: "i55K", 2: "U0iJ", 3: "4zNY", 62: "at5g", 3843: "feAl", 3844: "GAVX", 131071: "7aCd",
        131072: "c6Xz", 131073: "qXzm", 999999: "Lmkj4", 5000000: "IMleY", 2147483647: "1voD6rj",
        2147483648: "vs11aAt", 1000000000000: "BcPKoegq", 9007199254740992: "4TkNJhRitA",
        117723: "GMoH", 117643: "yaBK", 95311: "mO7U", 119078: "hHHw", 47756: "mOy7",
        2758: "i74j", 58689: "YfYo", 83379: "ycpl", 148192: "hRL3", 151661: "Zcpl", 151750: "AmL0",
        5016387: "RjKnt", 5022075: "RZG7Z", 5023345: "kKjR5", 1000001177: "Fo8tTHG",
        1000003296: "rexOYo", 1000003427: "Pcm0RV", 1099511631604: "5kC4KLRn",
        1099511631655: "6Ht3ocJd", 1099511632117: "m1yQnYvI",
    },
    OTHER_ALPHABET: {
        1: "E8Xx", 2: "jVKh", 3: "UGdH", 62: "Yc28", 3843: "nG2s", 3844: "5SRO", 131071: "qLSi",
        131072: "a2ao", 131073: "b414", 999999: "y35z7", 5000000: "I2UIU", 2147483647: "ghOnaKE",
        2147483648: "4t4M5xG", 1000000000000: "Ub7c9J2Q", 9007199254740992: "2ZS6K2L3CxI",
        15517: "GmNt", 98508: "qltY", 3165: "OGT5", 102998: "5NNT", 16440: "OGNT",
        1328: "bZ30", 18271: "ymGz", 47614: "5adz", 193552: "JIjz", 201905: "JFpq", 273223: "tjCN1",
        5019049: "T3Ej2", 5020478: "bDfyk", 5032032: "6yG7B", 1000000990: "bjzmsrJ",
        1000001639: "IIKcSX", 1000004819: "a38txjt", 1099511629274: "y5YlmYyk",
        1099511629636: "RmMCxMpE", 1099511630441: "gZ0Q2x3r",
    },
}  # fmt: skip


@pytest.mark.parametrize("alphabet", list(STORED_CODES))
def test_ids_keep_the_codes_they_were_given(alphabet: str) -> None:
    # Given ids whose codes were stored, some of them padded or re-generated around a blocked word
    generator = CodeGenerator(alphabet)
    # When they are encoded (twice: the second time from the permutation's cache)
    first = {link_id: generator.encode(link_id) for link_id in STORED_CODES[alphabet]}
    again = {link_id: generator.encode(link_id) for link_id in STORED_CODES[alphabet]}
    # Then the codes are those stored
    assert first == again == STORED_CODES[alphabet]


def sqids_reference(alphabet: str) -> tuple[Sqids, IdPermutation]:
    """sqids itself with the generator's alphabet, minimum length and blocklist, and the permutation."""
    alphabet = alphabet or DEFAULT_ALPHABET
    blocklist = sorted(set(DEFAULT_BLOCKLIST) | RESERVED_WORDS)
    return Sqids(alphabet=alphabet, min_length=4, blocklist=blocklist), IdPermutation(alphabet)


REFERENCES = {alphabet: sqids_reference(alphabet) for alphabet in STORED_CODES}
GENERATORS = {alphabet: CodeGenerator(alphabet) for alphabet in STORED_CODES}
# A stack's own key: its alphabet's order and its permutation both derive from it.
REFERENCES["key"] = (
    Sqids(
        alphabet=keyed_shuffle(DEFAULT_ALPHABET, "stack:a-stack-key"),
        min_length=4,
        blocklist=sorted(set(DEFAULT_BLOCKLIST) | RESERVED_WORDS),
    ),
    IdPermutation("stack:a-stack-key"),
)
GENERATORS["key"] = CodeGenerator(key="a-stack-key")


@settings(max_examples=1000)
@given(st.sampled_from(list(REFERENCES)), st.integers(min_value=1, max_value=2**62))
def test_codes_are_sqids_of_the_permuted_id(alphabet: str, link_id: int) -> None:
    # Given sqids itself and the permutation, When an id is encoded
    reference, permutation = REFERENCES[alphabet]
    code = GENERATORS[alphabet].encode(link_id)
    # Then its code is sqids' code of the permuted id
    assert code == reference.encode([permutation.forward(link_id)])


def test_every_first_band_number_gets_sqids_code_blocked_and_padded_ones_included() -> None:
    # Given numbers of the first band, where sqids pads short codes and meets blocked words
    reference, permutation = REFERENCES[""]
    numbers = range(1, 2**17, 7)
    # When the ids the permutation maps to them are encoded, Then each code is sqids' own
    codes = [GENERATOR.encode(permutation.inverse(n)) for n in numbers]
    assert codes == [reference.encode([n]) for n in numbers]
