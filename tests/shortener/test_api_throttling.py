"""Throttling that outlasted a call's retries is the busy service's answer on any route (503
``throttled``, with when to ask again), whichever store made the call; any other AWS error is still
the function's failure."""

from types import ModuleType

import pytest
from botocore.exceptions import ClientError

from shortener.access.store_blocklist import BlocklistStore
from tests.support.api import body, post_json, response_header


def refused_with(code: str) -> ClientError:
    """What botocore raises once its retries gave up on a call DynamoDB refused with ``code``."""
    return ClientError(
        {"Error": {"Code": code, "Message": f"{code} (reached max retries: 2)"}}, "BatchGetItem"
    )


def test_a_throttled_read_on_a_store_of_no_busy_answer_of_its_own_is_a_503_to_ask_again(
    api: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a blocklist whose read is throttled beyond its retries (the blocklist store does not
    # turn throttling into the busy answer itself)
    def throttled(self: BlocklistStore, hosts: object) -> set[str]:
        raise refused_with("ProvisionedThroughputExceededException")

    monkeypatch.setattr(BlocklistStore, "find", throttled)
    # When a link is asked for
    answer = post_json(api, {"url": "https://example.com/throttled"})
    # Then the answer is the busy service's, saying when to ask again, and never kept by a cache
    assert answer["statusCode"] == 503, answer
    assert body(answer)["error"] == "throttled"
    assert response_header(answer, "Retry-After") == "2"
    assert response_header(answer, "Cache-Control") == "no-store"


def test_any_other_aws_error_is_still_the_functions_failure(
    api: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    def denied(self: BlocklistStore, hosts: object) -> set[str]:
        raise refused_with("AccessDeniedException")

    monkeypatch.setattr(BlocklistStore, "find", denied)
    with pytest.raises(ClientError, match="AccessDeniedException"):
        post_json(api, {"url": "https://example.com/denied"})
