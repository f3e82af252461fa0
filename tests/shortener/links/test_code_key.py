"""The id counter's code key fingerprint under moto: adopted by a counter that has none, required
of every later allocation and of custom codes that reserve a generated id."""

import boto3
import pytest

from shortener.exceptions import CodeKeyChangedError
from shortener.links.codes import CodeGenerator
from shortener.links.domains import ShortUrls
from shortener.links.model import ShortenRequest
from shortener.links.shortening import LinkService
from shortener.links.store import CounterKeyMismatchError, LinksStore
from shortener.links.store_items import COUNTER_KEY
from shortener.links.urls import UrlPolicy

pytestmark = pytest.mark.integration

POLICY = UrlPolicy(allowed_schemes=frozenset({"https"}), max_length=2048)


def test_a_counter_from_before_fingerprints_adopts_the_key_it_is_next_used_with(
    tables: dict[str, str],
) -> None:
    # Given a counter that handed out ids before the fingerprint existed
    table = tables["LINKS_TABLE"]
    boto3.client("dynamodb").put_item(
        TableName=table, Item={"code": {"S": COUNTER_KEY}, "next_id": {"N": "41"}}
    )
    store = LinksStore(table)
    first, second = CodeGenerator(key="stack-one"), CodeGenerator(key="stack-two")
    # When a function allocates under its key
    assert store.allocate_ids(3, first.fingerprint) == [42, 43, 44]
    # Then the counter keeps that key's fingerprint, and another key is refused from then on
    assert store.counter_key() == first.fingerprint
    with pytest.raises(CounterKeyMismatchError) as refused:
        store.allocate_ids(3, second.fingerprint)
    assert refused.value.stored == first.fingerprint
    assert store.allocate_ids(1, first.fingerprint) == [45]


def test_a_custom_code_in_the_generated_space_needs_the_counters_key(tables: dict[str, str]) -> None:
    # Given a counter started under one key
    table = tables["LINKS_TABLE"]
    LinksStore(table).allocate_ids(1, CodeGenerator(key="stack-one").fingerprint)
    # When a container under another key is asked for a custom code that its own counter would
    # generate (so the id would have to be reserved, which means nothing under the wrong key)
    other = CodeGenerator(key="stack-two")
    service = LinkService(LinksStore(table), other, cache_seconds=0)
    request = ShortenRequest(url="https://example.com/custom", code=other.encode(1000))
    # Then it is refused with the 503 that says what changed, and nothing is written
    with pytest.raises(CodeKeyChangedError, match="CodeAlphabet"):
        service.shorten(request, POLICY, ShortUrls("https://sho.rt/"))
    assert LinksStore(table).get(other.encode(1000)) is None


def test_a_custom_code_outside_the_generated_space_is_still_accepted(tables: dict[str, str]) -> None:
    # A code no key's counter can produce cannot collide with generated codes: it is safe to write.
    table = tables["LINKS_TABLE"]
    LinksStore(table).allocate_ids(1, CodeGenerator(key="stack-one").fingerprint)
    service = LinkService(LinksStore(table), CodeGenerator(key="stack-two"), cache_seconds=0)
    request = ShortenRequest(url="https://example.com/custom", code="spring-sale-2026")
    assert service.shorten(request, POLICY, ShortUrls("https://sho.rt/")).code == "spring-sale-2026"
