"""The embedded DynamoDB's capacity (``--dynamodb-capacity``): each data-plane request to a table of
the template is charged its read and write units (dynamodb_capacity.py: the model and its
citations) before moto serves it, and throttled as AWS throttles it:

- a single-item request or a transaction that does not fit: ProvisionedThroughputExceededException
  (ThrottlingException beyond an ``OnDemandThroughput`` maximum) with its ``ThrottlingReasons``,
  or for TransactWriteItems a TransactionCanceledException whose reasons say ``ThrottlingError``;
- BatchWriteItem and BatchGetItem: the items that do not fit come back in ``UnprocessedItems`` /
  ``UnprocessedKeys``, and only a batch none of whose items fit is refused as a whole
  (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html).

botocore retries both exceptions (standard and adaptive modes list them as throttling errors); it
does not retry a transaction cancellation, which the code handles itself.

Runs inside the embedded AWS's serialising lock (it reads the stored items' sizes from moto).
Reads charge what they returned, after the fact (a Query or Scan cannot know before), once the
table or index has units left; UpdateItem is admitted at the item's size before and charged the
rest once the new size is known."""

import io
import json
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType

from local_stack.dynamodb.capacity import (
    PEAK_SETTLES_SECONDS,
    CapacitySettings,
    Charge,
    ResourceCapacity,
    TableStats,
    Throttle,
    ThroughputSpec,
    admit,
    read_units,
    write_units,
)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
_TARGET_PREFIX = "DynamoDB_20120810."
STATS_PATH = re.compile(r"/_local/dynamodb-capacity")
_JSON = "application/x-amz-json-1.0"
_ERROR_TYPE = "com.amazonaws.dynamodb.v20120810#"
# The message DynamoDB sends an on-demand table's throttled request.
ON_DEMAND_MESSAGE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically "
    "scaling your table or index so please try again shortly. If exceptions persist, check if you "
    "have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
MAXIMUM_MESSAGE = "Throughput exceeds the maximum OnDemandThroughput configured on table or index."


@dataclass
class _Index:
    capacity: ResourceCapacity
    hash_key: str
    range_key: str | None


@dataclass
class _Table:
    name: str
    account: str
    region: str
    hash_key: str
    range_key: str | None
    capacity: ResourceCapacity
    indexes: dict[str, _Index]
    stats: TableStats = field(default_factory=TableStats)


class DynamoDbCapacity:
    """The capacity of each table the template declares, and the middleware that enforces it."""

    def __init__(
        self,
        settings: CapacitySettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        # A table's growth is AWS's time, not the schedules': 30 minutes whatever --time-scale.
        self._settle = PEAK_SETTLES_SECONDS
        self._clock = clock
        self._tables: dict[str, _Table] = {}
        self._lock = threading.Lock()

    def add_table(self, name: str, arn: str, properties: dict[str, Any]) -> None:
        """A table from its template properties (KeySchema, GlobalSecondaryIndexes, WarmThroughput,
        OnDemandThroughput)."""
        now = self._clock()
        _, _, _, region, account, _ = arn.split(":", 5)

        def keys(schema: list[dict[str, str]]) -> tuple[str, str | None]:
            by_type = {entry["KeyType"]: entry["AttributeName"] for entry in schema}
            return by_type["HASH"], by_type.get("RANGE")

        indexes = {}
        for index in properties.get("GlobalSecondaryIndexes") or []:
            index_hash, index_range = keys(index["KeySchema"])
            capacity = ResourceCapacity.of(
                "Index",
                f"{arn}/index/{index['IndexName']}",
                ThroughputSpec.from_properties(index),
                self.settings,
                settle_seconds=self._settle,
                now=now,
            )
            indexes[index["IndexName"]] = _Index(capacity, index_hash, index_range)
        hash_key, range_key = keys(properties["KeySchema"])
        table = ResourceCapacity.of(
            "Table",
            arn,
            ThroughputSpec.from_properties(properties),
            self.settings,
            settle_seconds=self._settle,
            now=now,
        )
        self._tables[name] = _Table(name, account, region, hash_key, range_key, table, indexes)

    def stats(self) -> dict[str, Any]:
        """Per table: units consumed and allowed now, requests and throttles (for benchmarks)."""
        now = self._clock()
        with self._lock:
            return {
                "settings": str(self.settings),
                "tables": {
                    name: {
                        "write_units": table.capacity.write.consumed,
                        "read_units": table.capacity.read.consumed,
                        "write_rate": table.capacity.write.rate(now),
                        "read_rate": table.capacity.read.rate(now),
                        "indexes": {
                            index_name: {
                                "write_units": index.capacity.write.consumed,
                                "write_rate": index.capacity.write.rate(now),
                            }
                            for index_name, index in table.indexes.items()
                        },
                        **table.stats.__dict__,
                    }
                    for name, table in self._tables.items()
                },
            }

    def middleware(self, app: WsgiApp) -> WsgiApp:
        """Wrap the embedded AWS's application (inside its serialising lock)."""

        def gate(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            target = environ.get("HTTP_X_AMZ_TARGET", "")
            if not self.settings.enabled or not target.startswith(_TARGET_PREFIX):
                return app(environ, start_response)
            operation = target.removeprefix(_TARGET_PREFIX)
            handler = _HANDLERS.get(operation)
            if handler is None:
                return app(environ, start_response)
            length = int(environ.get("CONTENT_LENGTH") or 0)
            raw = environ["wsgi.input"].read(length) if length else b"{}"
            environ["wsgi.input"] = io.BytesIO(raw)
            try:
                body = json.loads(raw)
            except ValueError:
                return app(environ, start_response)
            with self._lock:
                return handler(self, _Exchange(app, environ, start_response, body))

        return gate

    # --- what one request costs ------------------------------------------------------------

    def _table(self, name: str) -> _Table | None:
        return self._tables.get(name)

    def _stored(self, table: _Table, key: dict[str, Any]) -> dict[str, DynamoType] | None:
        try:
            item = dynamodb_backends[table.account][table.region].get_item(table.name, key)
        except Exception:
            return None  # moto answers what is wrong with the key
        return None if item is None else dict(item.attrs)

    def _write_charges(
        self,
        table: _Table,
        old: dict[str, DynamoType] | None,
        new: dict[str, DynamoType] | None,
        factor: float = 1.0,
    ) -> list[Charge]:
        """The table's units (the larger of the item before and after) and each index's: a put of
        the new entry, and a delete of the old one when its index key changed."""
        either = new if new is not None else old or {}
        size = max(_size(old), _size(new))
        charges = [
            Charge(table.capacity, "Write", write_units(size) * factor, _key_text(either, table.hash_key))
        ]
        for index in table.indexes.values():
            new_in = new is not None and _in_index(new, index)
            if new is not None and new_in:
                units = write_units(_size(new)) * factor
                charges.append(Charge(index.capacity, "Write", units, _key_text(new, index.hash_key)))
            moved = not new_in or _index_key(old or {}, index) != _index_key(new or {}, index)
            if old is not None and _in_index(old, index) and moved:
                charges.append(Charge(index.capacity, "Write", factor, _key_text(old, index.hash_key)))
        return charges

    def _key_of(self, table: _Table, item: dict[str, Any]) -> dict[str, Any]:
        names = [table.hash_key, *([table.range_key] if table.range_key else [])]
        return {name: item[name] for name in names if name in item}


@dataclass
class _Exchange:
    """One request: moto's application, the WSGI environ, and its parsed JSON body."""

    app: WsgiApp
    environ: dict[str, Any]
    start_response: Callable[..., Any]
    body: dict[str, Any]

    def forward(self, body: dict[str, Any] | None = None) -> tuple[str, list[tuple[str, str]], bytes]:
        """Serve the request (with ``body`` instead, if given); the answer, not yet sent."""
        if body is not None:
            raw = json.dumps(body).encode()
            self.environ["wsgi.input"] = io.BytesIO(raw)
            self.environ["CONTENT_LENGTH"] = str(len(raw))
        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., Any]:
            captured["status"], captured["headers"] = status, headers
            return lambda _: None

        content = b"".join(self.app(self.environ, capture))
        return captured["status"], captured["headers"], content

    def send(self, status: str, headers: list[tuple[str, str]], content: bytes) -> list[bytes]:
        """Send an answer, its length and CRC32 (which botocore checks) recomputed."""
        kept = [(k, v) for k, v in headers if k.lower() not in ("content-length", "x-amz-crc32")]
        kept += [("Content-Length", str(len(content))), ("x-amz-crc32", str(zlib.crc32(content)))]
        self.start_response(status, kept)
        return [content]

    def send_json(self, status: str, headers: list[tuple[str, str]], document: dict[str, Any]) -> list[bytes]:
        return self.send(status, headers, json.dumps(document).encode())

    def throttled(self, throttle: Throttle) -> list[bytes]:
        message = MAXIMUM_MESSAGE if throttle.exception == "ThrottlingException" else ON_DEMAND_MESSAGE
        # The two exceptions spell the member differently in DynamoDB's service model.
        member = "throttlingReasons" if throttle.exception == "ThrottlingException" else "ThrottlingReasons"
        document = {
            "__type": _ERROR_TYPE + throttle.exception,
            "message": message,
            member: [{"reason": throttle.reason, "resource": throttle.resource}],
        }
        return self.send_json("400 Bad Request", [("Content-Type", _JSON)], document)


def _size(item: dict[str, DynamoType] | None) -> int:
    if not item:
        return 0
    return sum(len(name.encode()) + value.size() for name, value in item.items())


def _typed(item: dict[str, Any]) -> dict[str, DynamoType]:
    return {name: DynamoType(value) for name, value in item.items()}


def _key_text(item: dict[str, DynamoType], attribute: str) -> str | None:
    value = item.get(attribute)
    return None if value is None else f"{value.type}:{value.value}"


def _in_index(item: dict[str, DynamoType], index: _Index) -> bool:
    return index.hash_key in item and (index.range_key is None or index.range_key in item)


def _index_key(item: dict[str, DynamoType], index: _Index) -> tuple[str | None, str | None]:
    return _key_text(item, index.hash_key), _key_text(item, index.range_key) if index.range_key else None


def _ok(status: str) -> bool:
    return status.startswith("2")


# --- one handler per operation ---------------------------------------------------------------


def _put_item(capacity: DynamoDbCapacity, exchange: _Exchange) -> Iterable[bytes]:
    return _single_write(capacity, exchange, "Item")


def _delete_item(capacity: DynamoDbCapacity, exchange: _Exchange) -> Iterable[bytes]:
    return _single_write(capacity, exchange, None)


def _update_item(capacity: DynamoDbCapacity, exchange: _Exchange) -> Iterable[bytes]:
    return _single_write(capacity, exchange, "Update")


def _single_write(capacity: DynamoDbCapacity, exchange: _Exchange, new_from: str | None) -> Iterable[bytes]:
    table = capacity._table(exchange.body.get("TableName", ""))
    if table is None:
        return exchange.app(exchange.environ, exchange.start_response)
    request_item = exchange.body.get("Item") if new_from == "Item" else None
    key = capacity._key_of(table, request_item) if request_item else exchange.body.get("Key", {})
    old = capacity._stored(table, key)
    # An update is admitted at the item's size before (or its key's), charged the rest after.
    new = _typed(request_item) if request_item else (old or _typed(key)) if new_from == "Update" else None
    charges = capacity._write_charges(table, old, new)
    table.stats.write_requests += 1
    throttle = admit(charges, capacity._clock())
    if throttle is not None:
        table.stats.throttled_write_requests += 1
        table.stats.count_throttle(throttle)
        return exchange.throttled(throttle)
    status, headers, content = exchange.forward()
    if new_from == "Update" and _ok(status):
        _charge_difference(
            capacity, table, charges, capacity._write_charges(table, old, capacity._stored(table, key))
        )
    return exchange.send(status, headers, content)


def _charge_difference(
    capacity: DynamoDbCapacity, table: _Table, before: list[Charge], after: list[Charge]
) -> None:
    """Charge what a write cost beyond what it was admitted at (never refused: it is done)."""
    now = capacity._clock()
    granted: dict[tuple[int, str | None], float] = {}
    for charge in before:
        slot = (id(charge.resource), charge.key)
        granted[slot] = granted.get(slot, 0.0) + charge.units
    for charge in after:
        slot = (id(charge.resource), charge.key)
        extra = charge.units - granted.get(slot, 0.0)
        granted[slot] = max(0.0, granted.get(slot, 0.0) - charge.units)
        if extra > 0:
            charge.resource.write.take(extra, charge.key, now)


def _batch_write_item(capacity: DynamoDbCapacity, exchange: _Exchange) -> Iterable[bytes]:
    request_items: dict[str, list[dict[str, Any]]] = exchange.body.get("RequestItems", {})
    admitted: dict[str, list[dict[str, Any]]] = {}
    unprocessed: dict[str, list[dict[str, Any]]] = {}
    first_throttle: Throttle | None = None
    now = capacity._clock()
    touched: list[_Table] = []
    for name, requests in request_items.items():
        table = capacity._table(name)
        if table is None or not isinstance(requests, list):
            admitted[name] = requests
            continue
        touched.append(table)
        for request in requests:
            throttle = admit(_batch_write_charges(capacity, table, request), now)
            if throttle is None:
                admitted.setdefault(name, []).append(request)
            else:
                unprocessed.setdefault(name, []).append(request)
                table.stats.count_throttle(throttle)
                first_throttle = first_throttle or throttle
    for table in touched:
        table.stats.write_requests += 1
        if table.name in unprocessed:
            table.stats.throttled_write_requests += 1
    if first_throttle is not None and not admitted:
        return exchange.throttled(first_throttle)
    if not unprocessed:
        return exchange.app(exchange.environ, exchange.start_response)
    status, headers, content = exchange.forward({**exchange.body, "RequestItems": admitted})
    if not _ok(status):
        return exchange.send(status, headers, content)
    answer = json.loads(content or b"{}")
    handed_back = answer.get("UnprocessedItems") or {}
    for name, requests in unprocessed.items():
        handed_back.setdefault(name, []).extend(requests)
    answer["UnprocessedItems"] = handed_back
    return exchange.send_json(status, headers, answer)


def _batch_write_charges(capacity: DynamoDbCapacity, table: _Table, request: dict[str, Any]) -> list[Charge]:
    put, delete = request.get("PutRequest"), request.get("DeleteRequest")
    if put is not None:
        key = capacity._key_of(table, put.get("Item", {}))
        new: dict[str, DynamoType] | None = _typed(put.get("Item", {}))
    else:
        key, new = (delete or {}).get("Key", {}), None
    return capacity._write_charges(table, capacity._stored(table, key), new)


def _transact_write_items(capacity: DynamoDbCapacity, exchange: _Exchange) -> Iterable[bytes]:
    entries: list[dict[str, Any]] = exchange.body.get("TransactItems", [])
    now = capacity._clock()
    planned: list[tuple[_Table, dict[str, Any], dict[str, DynamoType] | None, list[Charge], bool]] = []
    for entry in entries:
        operation, request = next(iter(entry.items()), ("", {}))
        if not isinstance(request, dict):
            continue
        table = capacity._table(request.get("TableName", ""))
        if table is None:
            continue
        item = request.get("Item") if operation == "Put" else None
        key = capacity._key_of(table, item) if item else request.get("Key", {})
        old = capacity._stored(table, key)
        new = (
            _typed(item)
            if item
            else (old or _typed(key))
            if operation in ("Update", "ConditionCheck")
            else None
        )
        if operation == "ConditionCheck":
            charges = [Charge(table.capacity, "Write", 2.0, _key_text(old or _typed(key), table.hash_key))]
        else:
            # A transaction's writes cost twice (prepare and commit).
            charges = capacity._write_charges(table, old, new, factor=2.0)
        planned.append((table, key, old, charges, operation == "Update"))
    tables = {id(plan[0]): plan[0] for plan in planned}
    for table in tables.values():
        table.stats.write_requests += 1
    throttle = admit([charge for plan in planned for charge in plan[3]], now)
    if throttle is not None:
        for table in tables.values():
            table.stats.throttled_write_requests += 1
            table.stats.count_throttle(throttle, len(entries))
        reasons = [{"Code": "ThrottlingError", "Message": ON_DEMAND_MESSAGE} for _ in entries]
        document = {
            "__type": _ERROR_TYPE + "TransactionCanceledException",
            "message": "Transaction cancelled, please refer cancellation reasons for specific reasons "
            f"[{', '.join('ThrottlingError' for _ in entries)}]",
            "CancellationReasons": reasons,
        }
        return exchange.send_json("400 Bad Request", [("Content-Type", _JSON)], document)
    status, headers, content = exchange.forward()
    if _ok(status):
        for table, key, old, charges, is_update in planned:
            if is_update:
                after = capacity._write_charges(table, old, capacity._stored(table, key), factor=2.0)
                _charge_difference(capacity, table, charges, after)
    return exchange.send(status, headers, content)


def _get_item(capacity: DynamoDbCapacity, exchange: _Exchange) -> Iterable[bytes]:
    table = capacity._table(exchange.body.get("TableName", ""))
    if table is None:
        return exchange.app(exchange.environ, exchange.start_response)
    key = exchange.body.get("Key", {})
    units = read_units(_size(capacity._stored(table, key)), bool(exchange.body.get("ConsistentRead")))
    table.stats.read_requests += 1
    throttle = admit(
        [Charge(table.capacity, "Read", units, _key_text(_typed(key), table.hash_key))], capacity._clock()
    )
    if throttle is not None:
        table.stats.throttled_read_requests += 1
        table.stats.count_throttle(throttle)
        return exchange.throttled(throttle)
    return exchange.app(exchange.environ, exchange.start_response)


def _batch_get_item(capacity: DynamoDbCapacity, exchange: _Exchange) -> Iterable[bytes]:
    request_items: dict[str, dict[str, Any]] = exchange.body.get("RequestItems", {})
    admitted: dict[str, dict[str, Any]] = {}
    unprocessed: dict[str, dict[str, Any]] = {}
    first_throttle: Throttle | None = None
    now = capacity._clock()
    for name, request in request_items.items():
        table = capacity._table(name)
        if table is None or not isinstance(request, dict):
            admitted[name] = request
            continue
        table.stats.read_requests += 1
        consistent = bool(request.get("ConsistentRead"))
        for key in request.get("Keys", []):
            units = read_units(_size(capacity._stored(table, key)), consistent)
            charge = Charge(table.capacity, "Read", units, _key_text(_typed(key), table.hash_key))
            throttle = admit([charge], now)
            target = admitted if throttle is None else unprocessed
            target.setdefault(name, {**request, "Keys": []})["Keys"].append(key)
            if throttle is not None:
                table.stats.count_throttle(throttle)
                first_throttle = first_throttle or throttle
        if name in unprocessed:
            table.stats.throttled_read_requests += 1
    if first_throttle is not None and not admitted:
        return exchange.throttled(first_throttle)
    if not unprocessed:
        return exchange.app(exchange.environ, exchange.start_response)
    status, headers, content = exchange.forward({**exchange.body, "RequestItems": admitted})
    if not _ok(status):
        return exchange.send(status, headers, content)
    answer = json.loads(content or b"{}")
    handed_back = answer.get("UnprocessedKeys") or {}
    for name, request in unprocessed.items():
        if name in handed_back:
            handed_back[name]["Keys"].extend(request["Keys"])
        else:
            handed_back[name] = request
    answer["UnprocessedKeys"] = handed_back
    return exchange.send_json(status, headers, answer)


def _query_or_scan(capacity: DynamoDbCapacity, exchange: _Exchange) -> Iterable[bytes]:
    """Admitted while the table (or the index read) has units left; charged what it returned, in
    proportion to what it examined (a filter does not make a read cheaper)."""
    table = capacity._table(exchange.body.get("TableName", ""))
    if table is None:
        return exchange.app(exchange.environ, exchange.start_response)
    index = table.indexes.get(exchange.body.get("IndexName", ""))
    resource = index.capacity if index is not None else table.capacity
    table.stats.read_requests += 1
    now = capacity._clock()
    limit = resource.read.shortfall(1.0, now)
    if limit is not None:
        throttle = Throttle(f"{resource.kind}Read{limit}", resource.arn)
        table.stats.throttled_read_requests += 1
        table.stats.count_throttle(throttle)
        return exchange.throttled(throttle)
    status, headers, content = exchange.forward()
    if _ok(status):
        answer = json.loads(content or b"{}")
        items = answer.get("Items", [])
        returned = sum(_size(_typed(item)) for item in items)
        examined = returned * max(1.0, answer.get("ScannedCount", 0) / max(1, answer.get("Count", 0)))
        consistent = bool(exchange.body.get("ConsistentRead"))
        resource.read.take(read_units(int(examined), consistent), None, capacity._clock())
    return exchange.send(status, headers, content)


_HANDLERS: dict[str, Callable[[DynamoDbCapacity, _Exchange], Iterable[bytes]]] = {
    "PutItem": _put_item,
    "DeleteItem": _delete_item,
    "UpdateItem": _update_item,
    "BatchWriteItem": _batch_write_item,
    "TransactWriteItems": _transact_write_items,
    "GetItem": _get_item,
    "BatchGetItem": _batch_get_item,
    "Query": _query_or_scan,
    "Scan": _query_or_scan,
}


def attach(moto: Any, settings: CapacitySettings) -> "DynamoDbCapacity | None":
    """The capacity model put in front of ``moto`` (an EmbeddedAws not yet started), with its
    figures at ``GET /_local/dynamodb-capacity``; None when ``--dynamodb-capacity off``."""
    if not settings.enabled:
        return None
    capacity = DynamoDbCapacity(settings)
    moto.inner_gate = capacity.middleware
    moto.control_routes.append(("GET", STATS_PATH, lambda _: (200, json.dumps(capacity.stats()).encode())))
    return capacity


def add_tables(
    capacity: "DynamoDbCapacity | None", tables: dict[str, dict[str, Any]], arn_of: Callable[[str], str]
) -> None:
    """Each table of the template (physical name -> resolved properties)."""
    if capacity is None:
        return
    for name, properties in tables.items():
        capacity.add_table(name, arn_of(name), properties)
