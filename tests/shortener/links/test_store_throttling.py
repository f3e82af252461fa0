"""Throttled transactions, against a stub DynamoDB client that counts its calls: a cancellation for
throttling or a conflict is retried with growing, jittered pauses and a bound, never in a tight
loop, and never taken for a failed condition (a taken code); after the bound, StorageThrottledError."""

from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from shortener.exceptions import StorageThrottledError
from shortener.links.codes import code_generator
from shortener.links.domains import ShortUrls
from shortener.links.model import Link, ShortenRequest
from shortener.links.shortening import LinkService
from shortener.links.store import LinksStore, TransactionRefusedError
from shortener.links.store_changes import LinkChangesStore
from shortener.links.urls import UrlPolicy

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
POLICY = UrlPolicy(allowed_schemes=frozenset({"https"}), max_length=2048)


class TransactionStub:
    """transact_write_items that is cancelled with ``reasons`` (per item) for its first ``times``
    calls (every call if None), then succeeds."""

    def __init__(self, reasons: list[str] | str = "ThrottlingError", times: int | None = None) -> None:
        self.reasons = reasons
        self.times = times
        self.calls = 0

    def transact_write_items(self, TransactItems: list[Any]) -> dict[str, Any]:
        self.calls += 1
        if self.times is not None and self.calls > self.times:
            return {}
        codes = self.reasons if isinstance(self.reasons, list) else [self.reasons] * len(TransactItems)
        raise ClientError(
            {
                "Error": {
                    "Code": "TransactionCanceledException",
                    "Message": f"Transaction cancelled {codes}",
                },
                "CancellationReasons": [{"Code": code} for code in codes],
            },
            "TransactWriteItems",
        )


def store_over(stub: TransactionStub) -> tuple[LinksStore, list[float]]:
    store = LinksStore("links", client=stub)  # type: ignore[arg-type]
    pauses: list[float] = []
    store.sleep = pauses.append  # type: ignore[method-assign]
    return store, pauses


def claims(count: int) -> list[tuple[str, Link]]:
    return [
        (f"key{n}", Link(code=f"c{n}", url=f"https://example.com/{n}", created_at=NOW)) for n in range(count)
    ]


@pytest.mark.parametrize(
    "reason", ["ThrottlingError", "ProvisionedThroughputExceeded", "TransactionConflict"]
)
def test_bulk_claims_under_persistent_throttling_back_off_and_give_up(reason: str) -> None:
    # Given transactions that are always cancelled for throttling (or a conflict)
    stub = TransactionStub(reason)
    store, pauses = store_over(stub)
    # When a chunk's URLs are claimed
    with pytest.raises(StorageThrottledError):
        store.claim_urls(claims(3))
    # Then a bounded number of transactions was tried (not thousands in a tight loop), with a
    # pause before each retry that may grow with each attempt
    assert stub.calls == 8
    assert len(pauses) == 7
    assert all(0 <= pause <= min(2.0, 0.05 * 2**attempt) for attempt, pause in enumerate(pauses))
    assert sum(pauses) > 0


def test_a_throttled_transaction_that_then_goes_through_succeeds() -> None:
    # Given transactions throttled three times, then accepted
    stub = TransactionStub("ThrottlingError", times=3)
    store, pauses = store_over(stub)
    # When a chunk's URLs are claimed
    winners = store.claim_urls(claims(2))
    # Then every claim was made, after three pauses
    assert sorted(winners) == ["key0", "key1"]
    assert (stub.calls, len(pauses)) == (4, 3)


def test_a_throttled_custom_code_is_never_reported_as_taken() -> None:
    # Given a custom code in the generated space (its write reserves an id in a transaction), and
    # DynamoDB throttling that transaction every time
    stub = TransactionStub(["ThrottlingError", "None", "None"])
    store, _ = store_over(stub)
    service = LinkService(store, code_generator(""))
    request = ShortenRequest(url="https://example.com/custom", code=code_generator("").encode(42))
    # When it is asked for
    # Then the answer is "throttled" (503), not "code taken" (409)
    with pytest.raises(StorageThrottledError) as raised:
        service.shorten(request, POLICY, ShortUrls("https://sho.rt/"))
    assert raised.value.status_code == 503
    assert stub.calls == 8


def test_a_cancellation_no_retry_can_cure_is_an_error_at_once() -> None:
    # Given a transaction refused for a validation error
    stub = TransactionStub("ValidationError")
    store, pauses = store_over(stub)
    # When URLs are claimed
    # Then it fails at once, without retries, and not as a taken code
    with pytest.raises(TransactionRefusedError):
        store.claim_urls(claims(2))
    assert (stub.calls, pauses) == (1, [])


def test_a_change_that_meets_another_transaction_waits_apart_before_each_retry() -> None:
    # Given a change whose transaction meets another one on the takedown generation twice
    stub = TransactionStub(["None", "None", "TransactionConflict"], times=2)
    store = LinkChangesStore("links", client=stub)  # type: ignore[arg-type]
    pauses: list[float] = []
    store.sleep = pauses.append  # type: ignore[method-assign]
    link = Link(code="c1", url="https://example.com/a", created_at=NOW)
    # When it is written
    store.replace(link, link.model_copy(update={"status": "disabled"}), drop_claim="key", takedown=True)
    # Then it went through on the third try, after two jittered pauses (not at once, in step with
    # every other writer)
    assert stub.calls == 3
    assert len(pauses) == 2 and all(0 <= pause <= 0.02 * 2**n for n, pause in enumerate(pauses))
