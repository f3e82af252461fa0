"""Code generation, custom-code rules and hash-keyed codes."""

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shortener.logic.codes import (
    DEFAULT_ALPHABET,
    RESERVED_WORDS,
    CodeGenerator,
    IdPermutation,
    hash_code_candidates,
    is_well_formed,
    keyed_shuffle,
    validate_custom_code,
)
from shortener.models.exceptions import InvalidCodeError

GENERATOR = CodeGenerator()
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
    other = CodeGenerator("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
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
    candidates = list(hash_code_candidates("https://example.com/"))
    assert len(candidates[0]) == 4
    assert all(later.startswith(candidates[0]) for later in candidates)
    assert candidates == list(hash_code_candidates("https://example.com/"))
    assert candidates[0] != next(hash_code_candidates("https://example.org/"))
