"""The links table: links, the id counter, find-if-exists claims and reserved ids.

Every write of a link is conditional on the code being free, except ``put_generated_batch``, which
writes codes that only the counter can produce (see ``insert_reserving_id``), so nothing else can
already hold them.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from shortener.dal import aws
from shortener.models.exceptions import StorageThrottledError
from shortener.models.links import Link

COUNTER_KEY = "#id-counter"
CLAIM_PREFIX = "#url#"
RESERVED_PREFIX = "#reserved#"
# Ids per reservation item: small enough that the item one allocation reads stays small.
RESERVED_PAGE_SIZE = 10_000
_BATCH_WRITE_LIMIT = 25
_BATCH_GET_LIMIT = 100
_MAX_UNPROCESSED_ROUNDS = 10
_TRANSACTION_LIMIT = 100
# A transaction cancelled only because DynamoDB throttled one of its items or another transaction
# was writing the same item is tried again, up to this many times in all, with exponential backoff
# and full jitter (about 5 s at most), then given up as StorageThrottledError: never in a tight
# loop, and never mistaken for a condition that failed.
_TRANSACTION_ATTEMPTS = 8
_RETRYABLE_CANCELLATIONS = frozenset(
    {"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded", "TransactionConflict"}
)
_CONDITION_FAILED = "ConditionalCheckFailed"


class IdAlreadyAllocatedError(Exception):
    """A code in the generated space was asked for after the counter had handed out its id."""


@dataclass(frozen=True, slots=True)
class ClaimOutcome:
    """The result of writing a generated link together with its URL's find-if-exists claim."""

    created: bool
    existing: Link | None = None  # set when the URL already had a link
    code_taken: bool = False  # the code itself was held (by a custom or hash code)


class LinksStore(aws.DynamoDBTable):
    """Data access for the links table."""

    # ---- reads ------------------------------------------------------------------------------

    @aws.throttling_is_busy
    def get(self, code: str, *, consistent: bool = False) -> Link | None:
        """The link stored under ``code``, or None. One GetItem."""
        response = self.client.get_item(
            TableName=self.table_name, Key={"code": {"S": code}}, ConsistentRead=consistent
        )
        item = response.get("Item")
        return _link_from_item(item) if item and "url" in item else None

    def get_many(self, codes: Sequence[str]) -> dict[str, Link]:
        """The links stored under ``codes`` (consistent reads), by code."""
        found: dict[str, Link] = {}
        for item in self._batch_get([{"code": {"S": code}} for code in dict.fromkeys(codes)]):
            if "url" in item:
                link = _link_from_item(item)
                found[link.code] = link
        return found

    @aws.throttling_is_busy
    def find_claim(self, key: str) -> Link | None:
        """The link that find-if-exists returns for the URL whose key is ``key``, or None."""
        response = self.client.get_item(
            TableName=self.table_name, Key={"code": {"S": CLAIM_PREFIX + key}}, ConsistentRead=True
        )
        item = response.get("Item")
        return _claim_to_link(item) if item else None

    def find_claims(self, keys: Sequence[str]) -> dict[str, Link]:
        """find_claim for many URL keys at once, by key."""
        found: dict[str, Link] = {}
        for item in self._batch_get([{"code": {"S": CLAIM_PREFIX + key}} for key in dict.fromkeys(keys)]):
            found[item["code"]["S"].removeprefix(CLAIM_PREFIX)] = _claim_to_link(item)
        return found

    # ---- the counter ------------------------------------------------------------------------

    @aws.throttling_is_busy
    def allocate_ids(self, count: int) -> list[int]:
        """Reserve ``count`` consecutive ids with one counter write and return those of them that
        no custom code has reserved (usually all)."""
        response = self.client.update_item(
            TableName=self.table_name,
            Key={"code": {"S": COUNTER_KEY}},
            UpdateExpression="ADD next_id :count",
            ExpressionAttributeValues={":count": {"N": str(count)}},
            ReturnValues="UPDATED_NEW",
        )
        last = int(response["Attributes"]["next_id"]["N"])
        first = last - count + 1
        reserved = self._reserved_ids(first, last)
        return [link_id for link_id in range(first, last + 1) if link_id not in reserved]

    def _reserved_ids(self, first: int, last: int) -> set[int]:
        pages = range(first // RESERVED_PAGE_SIZE, last // RESERVED_PAGE_SIZE + 1)
        reserved: set[int] = set()
        for item in self._batch_get([{"code": {"S": f"{RESERVED_PREFIX}{page}"}} for page in pages]):
            reserved.update(int(number) for number in item.get("ids", {}).get("NS", []))
        return reserved

    # ---- conditional writes -----------------------------------------------------------------

    @aws.throttling_is_busy
    def insert(self, link: Link) -> Link | None:
        """Write ``link`` if its code is free. None when written; else the link already there."""
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=_link_to_item(link),
                ConditionExpression="attribute_not_exists(code)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            old: Any = exc.response.get("Item")
            return _link_from_item(old) if old else self.get(link.code, consistent=True)
        return None

    def insert_reserving_id(self, link: Link, link_id: int) -> Link | None:
        """Write ``link``, whose code the counter would generate for ``link_id``, and reserve that id
        so the counter skips it; both in one transaction that fails if the counter already handed
        the id out. None when written; else the link already there; IdAlreadyAllocatedError when
        the code is free but its id is in use."""
        page = link_id // RESERVED_PAGE_SIZE
        items: list[Any] = [
            self._put_new(_link_to_item(link), return_old=True),
            {
                "Update": {
                    "TableName": self.table_name,
                    "Key": {"code": {"S": f"{RESERVED_PREFIX}{page}"}},
                    "UpdateExpression": "ADD ids :id",
                    "ExpressionAttributeValues": {":id": {"NS": [str(link_id)]}},
                }
            },
            {
                "ConditionCheck": {
                    "TableName": self.table_name,
                    "Key": {"code": {"S": COUNTER_KEY}},
                    "ConditionExpression": "attribute_not_exists(next_id) OR next_id < :id",
                    "ExpressionAttributeValues": {":id": {"N": str(link_id)}},
                }
            },
        ]
        reasons = self._transact(items)
        if reasons is None:
            return None
        if reasons[0].get("Code") == _CONDITION_FAILED:
            old = reasons[0].get("Item")
            return _link_from_item(old) if old else self.get(link.code, consistent=True)
        if reasons[2].get("Code") == _CONDITION_FAILED:
            raise IdAlreadyAllocatedError(link.code)
        raise TransactionRefusedError(reasons)

    def insert_with_claim(self, link: Link, key: str) -> ClaimOutcome:
        """Write a generated ``link`` and the claim that makes it the one link of its URL, in one
        transaction, so two concurrent requests for one URL cannot both create a link."""
        items: list[Any] = [
            self._put_new(_claim_item(key, link), return_old=True),
            self._put_new(_link_to_item(link)),
        ]
        reasons = self._transact(items)
        if reasons is None:
            return ClaimOutcome(created=True)
        if reasons[0].get("Code") == _CONDITION_FAILED:
            old = reasons[0].get("Item")
            existing = _claim_to_link(old) if old else self.find_claim(key)
            if existing is not None:
                return ClaimOutcome(created=False, existing=existing)
        if reasons[1].get("Code") == _CONDITION_FAILED:
            return ClaimOutcome(created=False, code_taken=True)
        raise TransactionRefusedError(reasons)

    # ---- batched writes (bulk) --------------------------------------------------------------

    def claim_urls(self, claims: Sequence[tuple[str, Link]]) -> dict[str, Link]:
        """Find-if-exists for many URLs at once: make each link (already written) the one link of
        its URL key, unless the key is claimed already. Up to 100 conditional claims go in one
        transaction; a cancelled transaction names the claims that existed (with their links),
        and the rest are tried again (each round settles at least one claim, or it is refused).
        Returns the winning link of every key."""
        winners: dict[str, Link] = {}
        for start in range(0, len(claims), _TRANSACTION_LIMIT):
            pending = dict(claims[start : start + _TRANSACTION_LIMIT])
            while pending:
                items: list[Any] = [
                    self._put_new(_claim_item(key, link), return_old=True) for key, link in pending.items()
                ]
                reasons = self._transact(items)
                if reasons is None:
                    winners.update(pending)
                    break
                settled = 0
                for (key, _), reason in zip(list(pending.items()), reasons, strict=True):
                    if reason.get("Code") == _CONDITION_FAILED:
                        old = reason.get("Item")
                        existing = _claim_to_link(old) if old else self.find_claim(key)
                        if existing is not None:
                            winners[key] = existing
                            del pending[key]
                            settled += 1
                if not settled:
                    # Cancelled for a reason that trying again cannot change (validation, size).
                    raise TransactionRefusedError(reasons)
        return winners

    def put_generated_batch(self, links: Iterable[Link]) -> None:
        """Write generated links with BatchWriteItem (no conditions: only the counter produces
        these codes, and rewriting one with the same content on a redelivery changes nothing).
        Unprocessed items are retried with exponential backoff."""
        requests: list[Any] = [{"PutRequest": {"Item": _link_to_item(link)}} for link in links]
        for start in range(0, len(requests), _BATCH_WRITE_LIMIT):
            self._batch_write(requests[start : start + _BATCH_WRITE_LIMIT])

    def _batch_write(self, requests: list[Any]) -> None:
        pending = requests
        for attempt in range(_MAX_UNPROCESSED_ROUNDS):
            if not pending:
                return
            response = self.client.batch_write_item(RequestItems={self.table_name: pending})
            pending = response.get("UnprocessedItems", {}).get(self.table_name, [])
            if pending:
                self.sleep(min(0.05 * 2**attempt, 2.0))
        if pending:
            raise RuntimeError(f"{len(pending)} links stayed unprocessed after retries")

    def _batch_get(self, keys: list[Any]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for start in range(0, len(keys), _BATCH_GET_LIMIT):
            pending: Any = {
                self.table_name: {"Keys": keys[start : start + _BATCH_GET_LIMIT], "ConsistentRead": True}
            }
            for attempt in range(_MAX_UNPROCESSED_ROUNDS):
                response = self.client.batch_get_item(RequestItems=pending)
                items.extend(response.get("Responses", {}).get(self.table_name, []))
                pending = response.get("UnprocessedKeys") or {}
                if not pending:
                    break
                self.sleep(min(0.05 * 2**attempt, 2.0))
            else:
                raise RuntimeError("keys stayed unprocessed after retries")
        return items

    def _put_new(self, item: dict[str, Any], *, return_old: bool = False) -> dict[str, Any]:
        """A transaction item that puts ``item`` only if its key is free."""
        put: dict[str, Any] = {
            "TableName": self.table_name,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(code)",
        }
        if return_old:
            put["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        return {"Put": put}

    def _transact(self, items: list[Any]) -> list[dict[str, Any]] | None:
        """Run a transaction; None on success, else the cancellation reasons (one per item) when
        a condition failed or the cancellation cannot be cured by trying again. A transaction
        cancelled only for throttling or a conflict with another transaction is retried with
        backoff, up to _TRANSACTION_ATTEMPTS in all, then StorageThrottledError; so is a request
        throttled as a whole once botocore's own retries are spent."""
        delays = aws.backoff_delays(_TRANSACTION_ATTEMPTS, base=0.05, cap=2.0)
        while True:
            try:
                self.client.transact_write_items(TransactItems=items)
            except ClientError as exc:
                if aws.is_throttling(exc):
                    # The whole request was throttled: botocore has already backed off and retried.
                    raise StorageThrottledError(aws.THROTTLED_MESSAGE) from exc
                if aws.error_code(exc) != "TransactionCanceledException":
                    raise
                reasons: list[dict[str, Any]] = [dict(r) for r in exc.response.get("CancellationReasons", [])]
                codes = {reason.get("Code") for reason in reasons}
                if _CONDITION_FAILED in codes or not codes & _RETRYABLE_CANCELLATIONS:
                    return reasons
                delay = next(delays, None)
                if delay is None:
                    raise StorageThrottledError(aws.THROTTLED_MESSAGE) from exc
                self.sleep(delay)
                continue
            return None


class TransactionRefusedError(Exception):
    """A transaction was cancelled for a reason other than a failed condition, throttling or a
    conflict (a validation or size error): a bug or a misconfiguration, not the caller's doing."""

    def __init__(self, reasons: Sequence[dict[str, Any]]) -> None:
        super().__init__(f"transaction cancelled: {[reason.get('Code') for reason in reasons]}")
        self.reasons = list(reasons)


def _link_to_item(link: Link) -> dict[str, Any]:
    item: dict[str, Any] = {
        "code": {"S": link.code},
        "url": {"S": link.url},
        "created_at": {"S": link.created_at.isoformat()},
        "is_custom": {"BOOL": link.is_custom},
    }
    if link.owner:
        item["owner"] = {"S": link.owner}
    return item


def _link_from_item(item: dict[str, Any]) -> Link:
    return Link(
        code=item["code"]["S"],
        url=item["url"]["S"],
        created_at=datetime.fromisoformat(item["created_at"]["S"]),
        is_custom=item.get("is_custom", {}).get("BOOL", False),
        owner=item.get("owner", {}).get("S"),
    )


def _claim_item(key: str, link: Link) -> dict[str, Any]:
    return {
        "code": {"S": CLAIM_PREFIX + key},
        "target": {"S": link.code},
        "url": {"S": link.url},
        "created_at": {"S": link.created_at.isoformat()},
    }


def _claim_to_link(item: dict[str, Any]) -> Link:
    return Link(
        code=item["target"]["S"],
        url=item["url"]["S"],
        created_at=datetime.fromisoformat(item["created_at"]["S"]),
    )
