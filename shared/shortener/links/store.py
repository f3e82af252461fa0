"""The links table: links, the id counter, find-if-exists claims and reserved ids (the item
formats are in ``link_items``; changes of existing links in ``link_changes``; listings in
``link_listing``).

Every write of a new link is conditional on the code being free, except ``put_generated_batch``,
which writes codes that only the counter can produce (see ``insert_reserving_id``); bulk
processing still reads those codes first (``get_many``), so a link made under an earlier code key,
or a tombstone, is never overwritten.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from shortener import aws
from shortener import aws_usage as usage
from shortener.exceptions import StorageThrottledError
from shortener.links.model import Link
from shortener.links.store_items import (
    CLAIM_PREFIX,
    COUNTER_KEY,
    RESERVED_PREFIX,
    TAKEDOWNS_KEY,
    claim_item,
    claim_to_link,
    is_link_item,
    link_from_item,
    link_to_item,
    tag_items,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Ids per reservation item: small enough that the item one allocation reads stays small.
RESERVED_PAGE_SIZE = 10_000
_BATCH_WRITE_LIMIT = 25
_BATCH_GET_LIMIT = 100
_MAX_UNPROCESSED_ROUNDS = 10
# Paced rounds wait for the pacer's rate, which falls with each throttle: more of them, no sleeps.
_MAX_PACED_ROUNDS = 40
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
_KEY_FINGERPRINT = "key_fingerprint"
_ID_NOT_HANDED_OUT = "attribute_not_exists(next_id) OR next_id < :id"
_SAME_KEY = f"attribute_not_exists({_KEY_FINGERPRINT}) OR {_KEY_FINGERPRINT} = :fp"


class IdAlreadyAllocatedError(Exception):
    """A code in the generated space was asked for after the counter had handed out its id."""


class CounterKeyMismatchError(Exception):
    """The id counter was started under another code key: codes made now could equal codes made
    then, so nothing may be written. ``stored`` is the counter's key fingerprint."""

    def __init__(self, stored: str) -> None:
        super().__init__(f"the id counter's code key fingerprint is {stored}")
        self.stored = stored


@dataclass(frozen=True, slots=True)
class ClaimOutcome:
    """The result of writing a generated link together with its URL's find-if-exists claim."""

    created: bool
    existing: Link | None = None  # set when the URL already had a link
    code_taken: bool = False  # the code itself was held (by a custom or hash code)


class WritePacing(Protocol):
    """What paces batch writes (``shortener.loops.pacing.WritePacer``)."""

    def acquire(self, units: float) -> None: ...
    def throttled(self) -> None: ...
    def succeeded(self, units: float) -> None: ...


@dataclass(frozen=True, slots=True)
class ClickOutcome:
    """A click on a click-limited link: whether it was counted, and the link (None: no link)."""

    link: Link | None
    counted: bool


class LinksStore(aws.DynamoDBTable):
    """Data access for the links table. ``pacer``: bulk writes go at its rate (a loop's)."""

    def __init__(
        self, table_name: str, client: "DynamoDBClient | None" = None, *, pacer: WritePacing | None = None
    ) -> None:
        super().__init__(table_name, client)
        self.pacer = pacer

    # ---- reads ------------------------------------------------------------------------------

    @aws.throttling_is_busy
    def get(self, code: str, *, consistent: bool = False) -> Link | None:
        """The link stored under ``code``, or None. One GetItem."""
        response = self.client.get_item(
            TableName=self.table_name, Key={"code": {"S": code}}, ConsistentRead=consistent
        )
        item = response.get("Item")
        return link_from_item(item) if item and is_link_item(item) else None

    def get_many(self, codes: Sequence[str]) -> dict[str, Link]:
        """The links stored under ``codes`` (consistent reads), by code."""
        found: dict[str, Link] = {}
        for item in self._batch_get([{"code": {"S": code}} for code in dict.fromkeys(codes)]):
            if is_link_item(item):
                link = link_from_item(item)
                found[link.code] = link
        return found

    @aws.throttling_is_busy
    def find_claim(self, key: str) -> Link | None:
        """The link that find-if-exists returns for the URL whose key is ``key``, or None."""
        response = self.client.get_item(
            TableName=self.table_name, Key={"code": {"S": CLAIM_PREFIX + key}}, ConsistentRead=True
        )
        item = response.get("Item")
        return claim_to_link(item) if item else None

    def find_claims(self, keys: Sequence[str]) -> dict[str, Link]:
        """find_claim for many URL keys at once, by key."""
        found: dict[str, Link] = {}
        for item in self._batch_get([{"code": {"S": CLAIM_PREFIX + key}} for key in dict.fromkeys(keys)]):
            found[item["code"]["S"].removeprefix(CLAIM_PREFIX)] = claim_to_link(item)
        return found

    @aws.throttling_is_busy
    def take_click(self, code: str) -> ClickOutcome:
        """Count one redirect of a click-limited link, unless its last allowed click was answered
        already, it is taken down, or it has no limit any more: one conditional UpdateItem, so
        concurrent clicks never get more redirects than the limit. The link as the write left it,
        or (when nothing was counted) as it was."""
        try:
            response = self.client.update_item(
                TableName=self.table_name,
                Key={"code": {"S": code}},
                UpdateExpression="ADD clicks :one",
                ConditionExpression="attribute_exists(max_clicks) AND attribute_not_exists(#status) "
                "AND (attribute_not_exists(clicks) OR clicks < max_clicks)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":one": {"N": "1"}},
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            old: Any = exc.response.get("Item")
            if old is None or not is_link_item(old):
                return ClickOutcome(link=None, counted=False)
            return ClickOutcome(link=link_from_item(old), counted=False)
        return ClickOutcome(link=link_from_item(response["Attributes"]), counted=True)

    def takedown_generation(self) -> int:
        """How many takedowns (deletions, disablings, changes of target) there have been: a
        container's redirect cache is stale when this moved."""
        response = self.client.get_item(
            TableName=self.table_name, Key={"code": {"S": TAKEDOWNS_KEY}}, ConsistentRead=True
        )
        return int(response.get("Item", {}).get("generation", {}).get("N", "0"))

    # ---- the counter ------------------------------------------------------------------------

    def counter_key(self) -> str | None:
        """The code key fingerprint the id counter was started with (None before any id)."""
        response = self.client.get_item(
            TableName=self.table_name, Key={"code": {"S": COUNTER_KEY}}, ConsistentRead=True
        )
        return response.get("Item", {}).get(_KEY_FINGERPRINT, {}).get("S")

    @aws.throttling_is_busy
    def allocate_ids(self, count: int, key_fingerprint: str) -> list[int]:
        """Reserve ``count`` consecutive ids with one counter write and return those of them that
        no custom code has reserved (usually all). The counter keeps the fingerprint of the code
        key it was started with (a counter without one adopts ``key_fingerprint``); under another
        key the write is refused with CounterKeyMismatchError."""
        try:
            response = self.client.update_item(
                TableName=self.table_name,
                Key={"code": {"S": COUNTER_KEY}},
                UpdateExpression=f"SET {_KEY_FINGERPRINT} = if_not_exists({_KEY_FINGERPRINT}, :fp) "
                "ADD next_id :count",
                ConditionExpression=_SAME_KEY,
                ExpressionAttributeValues={":count": {"N": str(count)}, ":fp": {"S": key_fingerprint}},
                ReturnValues="UPDATED_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            raise CounterKeyMismatchError(_stored_key(exc.response.get("Item"))) from exc
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
        """Write ``link`` if its code is free. None when written; else the link already there.
        A tagged link and its tag index entries go in one transaction."""
        if tag_items(link):
            new = self._put_new(link_to_item(link), return_old=True)
            reasons = self._transact([new, *self._tag_puts(link)])
            if reasons is None:
                return None
            if reasons[0].get("Code") == _CONDITION_FAILED:
                stored = reasons[0].get("Item")
                return link_from_item(stored) if stored else self.get(link.code, consistent=True)
            raise TransactionRefusedError(reasons)
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=link_to_item(link),
                ConditionExpression="attribute_not_exists(code)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if aws.error_code(exc) != "ConditionalCheckFailedException":
                raise
            old: Any = exc.response.get("Item")
            return link_from_item(old) if old else self.get(link.code, consistent=True)
        return None

    def insert_reserving_id(self, link: Link, link_id: int, key_fingerprint: str) -> Link | None:
        """Write ``link``, whose code the counter would generate for ``link_id`` under the key
        ``key_fingerprint`` names, and reserve that id so the counter skips it; both in one
        transaction that fails if the counter already handed the id out or runs under another key.
        None when written; else the link already there; IdAlreadyAllocatedError when the code is
        free but its id is in use; CounterKeyMismatchError under another key."""
        page = link_id // RESERVED_PAGE_SIZE
        items: list[Any] = [
            self._put_new(link_to_item(link), return_old=True),
            {
                "Update": {
                    "TableName": self.table_name,
                    "Key": {"code": {"S": f"{RESERVED_PREFIX}{page}"}},
                    "UpdateExpression": "ADD ids :id",
                    "ExpressionAttributeValues": {":id": {"NS": [str(link_id)]}},
                }
            },
            {
                # The reservation only means something under the counter's key: adopt it or match it.
                "Update": {
                    "TableName": self.table_name,
                    "Key": {"code": {"S": COUNTER_KEY}},
                    "UpdateExpression": f"SET {_KEY_FINGERPRINT} = if_not_exists({_KEY_FINGERPRINT}, :fp)",
                    "ConditionExpression": f"({_ID_NOT_HANDED_OUT}) AND ({_SAME_KEY})",
                    "ExpressionAttributeValues": {":id": {"N": str(link_id)}, ":fp": {"S": key_fingerprint}},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            *self._tag_puts(link),
        ]
        reasons = self._transact(items)
        if reasons is None:
            return None
        if reasons[0].get("Code") == _CONDITION_FAILED:
            old = reasons[0].get("Item")
            return link_from_item(old) if old else self.get(link.code, consistent=True)
        if reasons[2].get("Code") == _CONDITION_FAILED:
            stored = _stored_key(reasons[2].get("Item")) or self.counter_key()
            if stored and stored != key_fingerprint:
                raise CounterKeyMismatchError(stored)
            raise IdAlreadyAllocatedError(link.code)
        raise TransactionRefusedError(reasons)

    def insert_with_claim(self, link: Link, key: str) -> ClaimOutcome:
        """Write a generated ``link`` and the claim that makes it the one link of its URL, in one
        transaction, so two concurrent requests for one URL cannot both create a link."""
        items: list[Any] = [
            self._put_new(claim_item(key, link), return_old=True),
            self._put_new(link_to_item(link)),
            *self._tag_puts(link),
        ]
        reasons = self._transact(items)
        if reasons is None:
            return ClaimOutcome(created=True)
        if reasons[0].get("Code") == _CONDITION_FAILED:
            old = reasons[0].get("Item")
            existing = claim_to_link(old) if old else self.find_claim(key)
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
                    self._put_new(claim_item(key, link), return_old=True) for key, link in pending.items()
                ]
                reasons = self._transact(items)
                if reasons is None:
                    winners.update(pending)
                    break
                settled = 0
                for (key, _), reason in zip(list(pending.items()), reasons, strict=True):
                    if reason.get("Code") == _CONDITION_FAILED:
                        old = reason.get("Item")
                        existing = claim_to_link(old) if old else self.find_claim(key)
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
        Unprocessed items are retried with exponential backoff. Each link's tag index entries go
        in the same batch."""
        requests: list[Any] = []
        for link in links:
            requests.append({"PutRequest": {"Item": link_to_item(link)}})
            # Its tag index entries in the same batch (written again on a redelivery: no change).
            requests += [{"PutRequest": {"Item": item}} for item in tag_items(link)]
        for start in range(0, len(requests), _BATCH_WRITE_LIMIT):
            self._batch_write(requests[start : start + _BATCH_WRITE_LIMIT])

    def _batch_write(self, requests: list[Any]) -> None:
        """With a pacer, each request waits for its turn at the pacer's rate, and each throttle
        (items handed back, an attempt refused) slows it; without one, handed-back items are tried
        again after an exponential backoff."""
        pending = requests
        pacer = self.pacer
        for attempt in range(_MAX_UNPROCESSED_ROUNDS if pacer is None else _MAX_PACED_ROUNDS):
            if not pending:
                return
            if pacer is not None:
                pacer.acquire(len(pending))
            with usage.on_throttle(pacer.throttled if pacer is not None else None):
                response = self.client.batch_write_item(RequestItems={self.table_name: pending})
                sent, pending = pending, response.get("UnprocessedItems", {}).get(self.table_name, [])
                if pending:
                    usage.count_throttle()
                elif pacer is not None:
                    pacer.succeeded(len(sent))
            if pending and pacer is None:
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

    def _tag_puts(self, link: Link) -> list[dict[str, Any]]:
        """Transaction items that write ``link``'s tag index entries (shortener.links.store_items)."""
        return [{"Put": {"TableName": self.table_name, "Item": item}} for item in tag_items(link)]

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


def _stored_key(item: Any) -> str:
    return str((item or {}).get(_KEY_FINGERPRINT, {}).get("S", ""))
