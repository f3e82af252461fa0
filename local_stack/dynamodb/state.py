"""DynamoDB's part of the durable state: every item write, as the item's image after the request.

Recording hooks moto's three ways of changing an item (``Table.put_item``, ``Table.delete_item``
and ``DynamoDBBackend.update_item``, which changes an item in place); BatchWriteItem,
TransactWriteItems, PartiQL and the embedded AWS's transaction rollback all go through them. Each
request only notes which keys it touched; when the request ends (the embedded AWS calls
``end_request`` before the answer leaves), the current image of each is journaled in one frame,
or a tombstone for a key that no longer exists. So a transaction is journaled whole or not at all,
a failed one journals the items as they were, and replaying images is idempotent.

Records: ``["dynamodb", "put", table, image]``, ``["dynamodb", "del", table, key]``, and in
snapshots ``["dynamodb", "items", table, [image, ...]]``; images and keys are in DynamoDB's JSON
(``{"S": ...}``, binary values as base64 text, as on the wire; moto holds them as bytes)."""

import base64
import fnmatch
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

from moto.dynamodb.models import DynamoDBBackend, dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table

from local_stack.durability.journal import Record
from local_stack.durability.service import Sink, renamed
from local_stack.dynamodb import compact as dynamodb_compact
from local_stack.dynamodb import index as dynamodb_index

log = logging.getLogger(__name__)

SERVICE = "dynamodb"
# Attribute types whose JSON value is what moto holds (binary, lists and maps need converting).
_AS_STORED = frozenset({"S", "N", "BOOL", "NULL", "SS", "NS"})
_SCALARS = frozenset({"S", "N"})  # shared between items (local_stack/dynamodb/compact.py)
_new_object = object.__new__  # without moto's BaseModel.__new__, which records every instance
_set_attribute = dict.__setitem__  # without LimitedSizeDict's size check
_SNAPSHOT_BATCH = 1000
# (table name, hash key, range key) of the items the current request changed, per request thread.
_changes = threading.local()
_recording: "DynamoDbState | None" = None
_hooks_lock = threading.Lock()


class DynamoDbState:
    """The items of every table of one account and region."""

    service = SERVICE
    kind = "items"

    def __init__(
        self,
        account_id: str,
        region: str,
        forget_on_restart: Mapping[str, Sequence[str]] | None = None,
        expire_on_restart: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """``forget_on_restart``: table name -> attributes that restored items lose (what describes
        a process of the previous run, such as a heartbeat). ``expire_on_restart``: table name ->
        number attributes (epoch seconds a lease runs until) that restored items keep, set to 0: a
        lease held by an invocation of the previous run, which died with it, has run out."""
        self.account_id = account_id
        self.region = region
        self._forget = {table: tuple(names) for table, names in (forget_on_restart or {}).items()}
        self._expire = {table: tuple(names) for table, names in (expire_on_restart or {}).items()}
        self._sink: Sink | None = None
        self._missing: set[str] = set()

    @property
    def backend(self) -> DynamoDBBackend:
        return dynamodb_backends[self.account_id][self.region]

    def record_into(self, sink: Sink | None) -> None:
        """Journal every change into ``sink`` from now on; None stops recording."""
        global _recording  # noqa: PLW0603 - moto's classes are global, so is what their hooks report to
        _install_hooks()
        self._sink = sink
        _recording = self if sink is not None else None

    def covers(self, table: Table) -> bool:
        return table.account_id == self.account_id and table.region_name == self.region

    def end_request(self) -> None:
        """Journal the images of the items this thread's request changed, in one frame."""
        changed: dict[tuple[str, DynamoType, DynamoType | None], None] | None = getattr(
            _changes, "keys", None
        )
        if not changed:
            return
        _changes.keys = {}
        sink = self._sink
        if sink is None:
            return
        tables = self.backend.tables
        records: list[Record] = []
        for name, hash_key, range_key in changed:
            table = tables.get(name)
            if table is None:  # the table itself was deleted; it is not part of the state
                continue
            item = table.get_item(hash_key, range_key)
            if item is not None:
                records.append([SERVICE, "put", name, item.to_json()["Attributes"]])
            else:
                records.append([SERVICE, "del", name, _key_json(table, hash_key, range_key)])
        if records:
            sink.append(records)

    def dump(self) -> Iterator[list[Record]]:
        """Every item, in batches of records (called with requests held off)."""
        for table in self.backend.tables.values():
            batch: list[Any] = []
            for item in _items(table):
                batch.append(item.to_json()["Attributes"])
                if len(batch) == _SNAPSHOT_BATCH:
                    yield [[SERVICE, "items", table.name, batch]]
                    batch = []
            if batch:
                yield [[SERVICE, "items", table.name, batch]]

    def after_snapshot(self) -> None:
        """Nothing lives outside the snapshot."""

    def apply(self, record: Record, renames: Mapping[str, str]) -> None:
        """Replay one record into the tables (which the template already created)."""
        _, operation, name, value = record
        table = self.backend.tables.get(name)
        if table is None:
            if name not in self._missing:
                self._missing.add(name)
                log.warning("state: table %s no longer exists; its saved items are dropped", name)
            return
        # Written behind moto's item writers: the sorted index is rebuilt on its next Query.
        dynamodb_index.forget(table)
        if operation == "put":
            _insert(table, renamed(value, renames))
        elif operation == "items":
            for image in value:
                _insert(table, renamed(image, renames))
        elif operation == "del":
            _remove(table, renamed(value, renames))
        else:
            log.warning("state: unknown DynamoDB record %r is skipped", operation)

    def finish_restore(self) -> int:
        """Drop the forgotten attributes, expire the leases, build the sorted indexes; how many
        items the tables now hold."""
        total = 0
        for table in self.backend.tables.values():
            forget = self._forget.get(table.name, ())
            expire = self._expire.get(table.name, ())
            forgotten, expired = _matcher(forget), _matcher(expire)
            for item in _items(table):
                total += 1
                if forget or expire:
                    for attribute in [name for name in item.attrs if forgotten(name)]:
                        item.attrs.pop(attribute)
                    for attribute in [name for name in item.attrs if expired(name)]:
                        if item.attrs[attribute].type == "N":
                            item.attrs[attribute] = DynamoType({"N": "0"})
            # Before READY: built on the first Query instead, it held up one API request for
            # 15 - 28 s with 1,000,000 links (make bench ARGS=local_store).
            dynamodb_index.build(table)
        return total


def _matcher(names: Sequence[str]) -> Callable[[str], bool]:
    """Whether an attribute is one of ``names``, which may be patterns (``*_lease``, fnmatch's
    syntax): a naming rule covers the leases added later without anyone listing them."""
    exact = frozenset(name for name in names if not any(char in name for char in "*?["))
    patterns = [name for name in names if name not in exact]
    return lambda attribute: attribute in exact or any(fnmatch.fnmatchcase(attribute, p) for p in patterns)


def _items(table: Table) -> Iterator[Item]:
    # moto types Table.items as hash -> dict, though a table without a range key maps hash -> item.
    items: dict[DynamoType, Any] = table.items
    if table.range_key_attr is None:
        yield from list(items.values())
    else:
        for by_range in list(items.values()):
            yield from list(by_range.values())


def _key_json(table: Table, hash_key: DynamoType, range_key: DynamoType | None) -> dict[str, Any]:
    key = {table.hash_key_attr: hash_key.to_json()}
    if table.range_key_attr is not None and range_key is not None:
        key[table.range_key_attr] = range_key.to_json()
    return key


def _value(attribute: dict[str, Any]) -> DynamoType:
    """A DynamoType from its JSON, without moto's generic constructor (whose cost dominated a
    restore) for the types that need no conversion. moto holds binary values as bytes; the JSON
    has base64 text."""
    ((kind, value),) = attribute.items()
    if kind not in _AS_STORED:
        return DynamoType(_binary_decoded(attribute))
    typed = _new_object(DynamoType)
    typed.type = kind
    typed.value = value
    return typed


def _binary_decoded(attribute: dict[str, Any]) -> dict[str, Any]:
    ((kind, value),) = attribute.items()
    if kind == "B":
        return {kind: base64.b64decode(value)}
    if kind == "BS":
        return {kind: [base64.b64decode(item) for item in value]}
    if kind == "L":
        return {kind: [_binary_decoded(item) for item in value]}
    if kind == "M":
        return {kind: {name: _binary_decoded(item) for name, item in value.items()}}
    return attribute


def _insert(table: Table, image: dict[str, Any]) -> None:
    # The item passed moto's validation when it was first written; LimitedSizeDict's per-insert
    # size check (quadratic in the attributes) is skipped, as moto's own Item.__deepcopy__ does.
    # This runs once per restored item: _value is inlined for the common types.
    attributes = LimitedSizeDict.__new__(LimitedSizeDict)
    for name, attribute in image.items():
        ((kind, value),) = attribute.items()
        if kind in _SCALARS:
            # one object for every item holding an equal value, as written items share them
            typed = dynamodb_compact.scalar(kind, value)
        elif kind in _AS_STORED:
            typed = _new_object(DynamoType)
            typed.type = kind
            typed.value = value
        else:
            typed = DynamoType(_binary_decoded(attribute))
        _set_attribute(attributes, dynamodb_compact.shared(name), typed)
    item = cast(Item, _new_object(Item))
    # Key attributes cannot be updated, so the item's key may share their values.
    item.hash_key = attributes[table.hash_key_attr]
    item.range_key = attributes[table.range_key_attr] if table.range_key_attr else None
    item.attrs = attributes
    items: dict[DynamoType, Any] = table.items
    if table.range_key_attr is None:
        items[item.hash_key] = item
    else:
        items[item.hash_key][item.range_key] = item


def _remove(table: Table, key: dict[str, Any]) -> None:
    hash_key = _value(key[table.hash_key_attr])
    if table.range_key_attr is None:
        table.items.pop(hash_key, None)
        return
    by_range = table.items.get(hash_key)
    if by_range is not None:
        by_range.pop(_value(key[table.range_key_attr]), None)
        if not by_range:
            del table.items[hash_key]


def _changed(table: Table, hash_key: DynamoType, range_key: DynamoType | None) -> None:
    state = _recording
    if state is None or not state.covers(table):
        return
    keys = getattr(_changes, "keys", None)
    if keys is None:
        keys = _changes.keys = {}
    keys[(table.name, hash_key, range_key)] = None


def _install_hooks() -> None:
    """Wrap moto's item writers once per process; they report to whichever state is recording."""
    with _hooks_lock:
        if getattr(Table.put_item, "_durable", False):
            return
        put_item, delete_item, update_item = Table.put_item, Table.delete_item, DynamoDBBackend.update_item

        def recorded_put_item(self: Table, *args: Any, **kwargs: Any) -> Item:
            item = put_item(self, *args, **kwargs)
            _changed(self, item.hash_key, item.range_key)
            return item

        def recorded_delete_item(
            self: Table, hash_key: DynamoType, range_key: DynamoType | None
        ) -> Item | None:
            item = delete_item(self, hash_key, range_key)
            if item is not None:
                _changed(self, item.hash_key, item.range_key)
            return item

        def recorded_update_item(
            self: DynamoDBBackend, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any
        ) -> Item:
            table = self.get_table(table_name)
            try:
                item = update_item(self, table_name, key, *args, **kwargs)
            except Exception:
                # moto may have changed the item in place before failing (an item grown too
                # large): journal whatever it now holds.
                if table.hash_key_attr in key:
                    range_key = key.get(table.range_key_attr) if table.range_key_attr else None
                    hash_value = _value(key[table.hash_key_attr])
                    _changed(table, hash_value, _value(range_key) if range_key else None)
                raise
            _changed(table, item.hash_key, item.range_key)
            return item

        recorded_put_item._durable = True  # type: ignore[attr-defined]
        Table.put_item = recorded_put_item  # type: ignore[method-assign]
        Table.delete_item = recorded_delete_item  # type: ignore[method-assign]
        DynamoDBBackend.update_item = recorded_update_item  # type: ignore[method-assign]
