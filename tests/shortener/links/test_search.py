"""The words of a link and of a search (shortener.links.search): any letter case, any prefix, the
code, host, path, title and tags; the status the link list shows."""

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from shortener.links.model import Link
from shortener.links.search import LinkFilter, link_words, listed_status, words

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def link(url: str = "https://Shop.example/Spring-Sale/shoes?x=hidden", **fields: object) -> Link:
    return Link.model_validate({"code": "aB3xY9", "url": url, "created_at": NOW, **fields})


def test_a_links_words_are_its_code_host_path_title_and_tags_case_folded() -> None:
    found = link(title="Big Flyer", tags=("Campaign-2026",))
    assert link_words(found) == {
        "ab3xy9",
        "shop",
        "example",
        "spring",
        "sale",
        "shoes",
        "big",
        "flyer",
        "campaign",
        "2026",
    }


def test_the_query_string_is_not_searched() -> None:
    assert not LinkFilter.of(q="hidden").matches(link(), NOW)


def test_each_word_of_a_search_must_start_a_word_of_the_link() -> None:
    assert LinkFilter.of(q="spring sa").matches(link(), NOW)
    assert LinkFilter.of(q="shop.example/spring").matches(link(), NOW)
    assert not LinkFilter.of(q="spring autumn").matches(link(), NOW)
    # a part inside a word is not the start of one
    assert not LinkFilter.of(q="pring").matches(link(), NOW)


letters = st.text(st.characters(categories=("Ll", "Lu", "Nd")), min_size=1, max_size=12)


@given(word=letters, cut=st.integers(min_value=1, max_value=12), upper=st.lists(st.booleans(), max_size=12))
def test_any_prefix_of_any_word_in_any_letter_case_finds_the_link(
    word: str, cut: int, upper: list[bool]
) -> None:
    # Given a link whose title holds the word, and a search for its start in a mixed case
    prefix = word[:cut]
    mixed = "".join(c.upper() if n < len(upper) and upper[n] else c.lower() for n, c in enumerate(prefix))
    # Then the search finds it (unless case folding made it something else: ß and friends)
    if words(mixed) == words(prefix):
        assert LinkFilter.of(q=mixed).matches(link(title=f"x {word} y"), NOW)


@given(code=st.text(st.characters(categories=("Lu", "Ll", "Nd")), min_size=1, max_size=10))
def test_a_code_is_found_in_any_letter_case(code: str) -> None:
    made = link(code=code)
    assert LinkFilter.of(q=code.swapcase()).matches(made, NOW) or words(code.swapcase()) != words(code)


def test_tag_job_and_status_filters() -> None:
    tagged = link(tags=("spring",), job_id="j1")
    assert LinkFilter.of(tag="spring", job_id="j1", status="active").matches(tagged, NOW)
    assert not LinkFilter.of(tag="Spring").matches(tagged, NOW)  # tags are exact, as they are stored
    assert not LinkFilter.of(job_id="j2").matches(tagged, NOW)
    assert LinkFilter.of(q=" . ", tag="", status=None).empty  # no words: no search


def test_the_listed_status_is_disabled_then_expired_then_enabled() -> None:
    past = NOW - timedelta(days=1)
    assert listed_status(link(), NOW) == "active"
    assert listed_status(link(expires_at=past), NOW) == "expired"
    assert listed_status(link(max_clicks=1, clicks=1), NOW) == "expired"
    assert listed_status(link(status="disabled", expires_at=past), NOW) == "disabled"
