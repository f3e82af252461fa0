"""A sorted per-partition index beside each moto table, so a Query on a secondary index reads only
what it returns.

moto answers a Query on an index by sorting every item of the table (``Table.all_items``), then
walking them: 13.8 s for one Query with 810,000 items. Here each index of a table is kept as one
sorted list per index partition (the index hash key's value), ordered as moto orders an index
Query's results (index range key, then the table's hash and range keys), maintained on moto's
item writers (``Table.put_item``, ``Table.delete_item``, ``DynamoDBBackend.update_item``; every
other way of changing an item goes through them) and built on a table's first write or index
Query. A
Query starts at its ExclusiveStartKey or its key condition's bound by bisection and stops at its
Limit or the end of the key condition, so its cost is in proportion to what it reads.

The answer is moto's own: the same items in the same order, the same LastEvaluatedKey (any item
left in the partition after the Limit-th match gives one, as in moto's walk), ScannedCount, then
moto's projection, FilterExpression and ProjectionExpression. What this does not cover (an index
without a range key or with multi-attribute keys, QueryFilter, a start key from another
partition) is left to moto's walk. One difference: moto also ends a page early when an item
*after* the key condition's end would not fit in the 1 MB page; this does not look past the end.

State restored from the durable journal is written into moto's tables directly: the restore
drops the table's index (:func:`forget`) and builds it again once every item is back
(:func:`build`)."""

import copy
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import RESULT_SIZE_LIMIT, SecondaryIndex, Table
from sortedcontainers import SortedList

Entry = tuple[DynamoType, ...]


class _Index:
    """One index of one table: partition value -> its entries, sorted as moto sorts them."""

    def __init__(self, table: Table, index: SecondaryIndex) -> None:
        hash_keys = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"]
        range_keys = [k["AttributeName"] for k in index.schema if k["KeyType"] == "RANGE"]
        self.hash_attr = hash_keys[0]
        self.range_attr = range_keys[0]
        self.table_has_range = table.range_key_attr is not None
        # Nothing per item but its entry: where an item is filed follows from its attributes, read
        # before each write changes them (:func:`_placements`), so no map from item to entry is kept
        # (it cost 93 bytes per item: docs/capacity.md).
        self.partitions: dict[DynamoType, SortedList] = {}
        self._build(table)

    def _build(self, table: Table) -> None:
        """Every item of ``table``, each partition sorted at once: by the entries' plain values
        (what DynamoType's comparisons compare, without a Python call per comparison), so that
        the SortedList made of them finds them in order. 200,000 items in random order: 2.9 s,
        against 7.3 s one add at a time (in order, both 1.9 s): the first index Query after a
        restart builds it."""
        grouped: dict[DynamoType, list[Entry]] = {}
        for item in _table_items(table):
            placed = self.entry(item)
            if placed is not None:
                grouped.setdefault(placed[0], []).append(placed[1])
        for partition, entries in grouped.items():
            entries.sort(key=_plain)
            self.partitions[partition] = SortedList(entries)

    def entry(self, item: Item) -> tuple[DynamoType, Entry] | None:
        partition = item.attrs.get(self.hash_attr)
        sort = item.attrs.get(self.range_attr)
        if not partition or not sort:  # moto's walk leaves out an item without both (falsy too)
            return None
        if self.table_has_range:
            return partition, (sort, item.hash_key, item.range_key)  # type: ignore[return-value]
        return partition, (sort, item.hash_key)

    def add(self, placed: tuple[DynamoType, Entry] | None) -> None:
        if placed is not None:
            partition, entry = placed
            self.partitions.setdefault(partition, SortedList()).add(entry)

    def remove(self, placed: tuple[DynamoType, Entry] | None) -> None:
        """Drop the entry ``placed`` (an item's, read before a write changed it), if filed."""
        if placed is None:
            return
        partition, entry = placed
        entries = self.partitions.get(partition)
        if entries is None:
            return
        entries.discard(entry)
        if not entries:
            del self.partitions[partition]


Placements = list[tuple[_Index, tuple[DynamoType, Entry] | None]]


def _plain(entry: Entry) -> tuple[Any, ...]:
    """What DynamoType's comparisons compare, for each value of ``entry`` (a string's own value,
    without the Python calls of ``cast_value``)."""
    return tuple(value.value if value.type == "S" else value.cast_value for value in entry)


_lock = threading.RLock()
_indexes: "weakref.WeakKeyDictionary[Table, dict[str, _Index]]" = weakref.WeakKeyDictionary()


def forget(table: Table) -> None:
    """Drop ``table``'s indexes (its items were changed behind moto's writers); rebuilt on use."""
    with _lock:
        _indexes.pop(table, None)


def build(table: Table) -> None:
    """Build ``table``'s indexes now, from its items (after a restore): the first Query then does
    not wait for it, as an API request (30 s at most) would."""
    with _lock:
        _indexes.pop(table, None)
        for declared in table.all_indexes():
            _index_of(table, declared.name)


def _table_items(table: Table) -> Iterator[Item]:
    items: dict[Any, Any] = table.items
    if table.range_key_attr is None:
        yield from items.values()
    else:
        for by_range in items.values():
            yield from by_range.values()


def _usable(index: SecondaryIndex) -> bool:
    kinds = [k["KeyType"] for k in index.schema]
    return kinds.count("HASH") == 1 and kinds.count("RANGE") == 1


def _index_of(table: Table, name: str) -> _Index | None:
    """Called with _lock held."""
    built = _indexes.get(table)
    if built is None:
        built = _indexes[table] = {}
    if name not in built:
        found = [i for i in table.all_indexes() if i.name == name]
        if not found or not _usable(found[0]):
            return None
        built[name] = _Index(table, found[0])
    return built[name]


def _placements(table: Table, hash_key: DynamoType | None, range_key: DynamoType | None) -> Placements:
    """Where the item with this key is filed in each index of ``table``, read before a write may
    change it (in place, as moto's UpdateItem does). A table's first write builds its indexes
    (once, then kept): not its first Query, which would wait for it."""
    with _lock:
        if table not in _indexes:
            for declared in table.all_indexes():
                _index_of(table, declared.name)
        built = _indexes.setdefault(table, {})  # no index it can use: still none built
        item = _stored(table, hash_key, range_key) if built else None
        return [(index, index.entry(item) if item is not None else None) for index in built.values()]


def _written(
    table: Table, hash_key: DynamoType | None, range_key: DynamoType | None, before: Placements
) -> None:
    """The item with this key was written (or deleted): its entries move from ``before`` to
    where its attributes file it now."""
    with _lock:
        item = _stored(table, hash_key, range_key) if before else None
        for index, placed in before:
            index.remove(placed)
            if item is not None:
                index.add(index.entry(item))


def _stored(table: Table, hash_key: DynamoType | None, range_key: DynamoType | None) -> Item | None:
    """The item stored under this key, if any (``Table.get_item`` would file an empty entry for a
    missing hash key of a table with a range key, and refuses a key without its range part)."""
    if hash_key is None:
        return None
    found: Any = table.items.get(hash_key)
    if table.range_key_attr is None or found is None:
        return found  # type: ignore[no-any-return]
    return found.get(range_key) if range_key is not None else None  # type: ignore[no-any-return]


def _key_of(table: Table, attributes: Any) -> tuple[DynamoType | None, DynamoType | None]:
    """The key of the item ``attributes`` (a request's) names; (None, None) when it names none."""
    try:
        hash_key = DynamoType(attributes[table.hash_key_attr])
        range_attr = table.range_key_attr
        range_key = DynamoType(attributes[range_attr]) if range_attr and range_attr in attributes else None
    except (KeyError, TypeError, IndexError, AttributeError):
        return None, None
    return hash_key, range_key


def _bound(entries: SortedList, outside: Callable[[DynamoType], bool], first: bool) -> int:
    """The first position (``first``) whose sort value is not ``outside`` (all before it are), or
    the first position whose sort value is ``outside`` (none before it are)."""
    low, high = 0, len(entries)
    while low < high:
        middle = (low + high) // 2
        if outside(entries[middle][0]) == first:
            low = middle + 1
        else:
            high = middle
    return low


_OPERATORS = {
    **{name: name for name in ("EQ", "LT", "LE", "GT", "GE", "BETWEEN", "BEGINS_WITH")},
    **{"=": "EQ", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE"},
}


def _before(comparison: str, values: list[DynamoType]) -> Callable[[DynamoType], bool]:
    """Whether a sort value sorts before every value the key condition accepts."""
    if comparison in ("EQ", "GE", "BETWEEN", "BEGINS_WITH"):
        return lambda v: v.compare("LT", values[:1])
    if comparison == "GT":
        return lambda v: v.compare("LE", values[:1])
    return lambda v: False


def _after(comparison: str, values: list[DynamoType]) -> Callable[[DynamoType], bool]:
    """Whether a sort value sorts after every value the key condition accepts."""
    if comparison in ("EQ", "LE"):
        return lambda v: v.compare("GT", values[:1])
    if comparison == "LT":
        return lambda v: v.compare("GE", values[:1])
    if comparison == "BETWEEN":
        return lambda v: v.compare("GT", values[1:2])
    if comparison == "BEGINS_WITH":
        return lambda v: v.compare("GT", values) and not v.compare("BEGINS_WITH", values)
    return lambda v: False


class Stats:
    """Items the fast path has looked at since the process started (tests compare it with the
    result)."""

    examined = 0


stats = Stats()


def _start(
    table: Table, index: _Index, partition_value: DynamoType, exclusive_start_key: dict[str, Any]
) -> Entry | None:
    """The ExclusiveStartKey as an entry of ``partition_value``'s list; None if it is not one."""
    names = [index.hash_attr, index.range_attr, table.hash_key_attr]
    names += [table.range_key_attr] if table.range_key_attr else []
    if any(name not in exclusive_start_key for name in names):
        return None
    typed = [DynamoType(exclusive_start_key[name]) for name in names]
    if typed[0] != partition_value:
        return None
    return tuple(typed[1:])


def _positions(entries: SortedList, query: dict[str, Any], start: Entry | None) -> tuple[range, range]:
    """The positions a Query walks, in its order: from its start key or the key condition's
    first match, to the end of the partition; and the positions the key condition accepts."""
    low, high = 0, len(entries)
    operator = _OPERATORS.get(query["range_comparison"] or "")
    if operator is not None:
        low = _bound(entries, _before(operator, query["range_objs"]), first=True)
        high = _bound(entries, _after(operator, query["range_objs"]), first=False)
    accepted = range(low, high)
    if query["scan_index_forward"]:
        if start is not None:
            low = max(low, entries.bisect_right(start))
        return range(low, len(entries)), accepted
    if start is not None:
        high = min(high, entries.bisect_left(start))
    return range(high - 1, -1, -1), accepted


def _fast_query(table: Table, query: dict[str, Any]) -> tuple[list[Item], int, dict[str, Any] | None] | None:
    """moto's answer, from the sorted index; None when this case is left to moto's walk.
    ``query`` holds Table.query's arguments by name."""
    range_comparison = query["range_comparison"]
    hash_key_conditions = query["hash_key_conditions"]
    range_key_conditions = query["range_key_conditions"]
    with _lock:
        index = _index_of(table, query["index_name"])
        if index is None or not hash_key_conditions or len(hash_key_conditions) != 1:
            return None
        attr, partition_value = hash_key_conditions[0]
        if attr != index.hash_attr or (
            range_key_conditions
            and (len(range_key_conditions) != 1 or range_key_conditions[0][0] != index.range_attr)
        ):
            return None
        # The key condition's operator as KeyConditionExpression ("<") or KeyConditions ("LT")
        # name it.
        if range_comparison and range_comparison not in _OPERATORS:
            return None
        start = None
        if query["exclusive_start_key"] is not None:
            start = _start(table, index, partition_value, query["exclusive_start_key"])
            if start is None:
                return None
        entries = index.partitions.get(partition_value, SortedList())
        results: list[Item] = []
        result_size = 0
        last_evaluated_key = None
        walked, accepted = _positions(entries, query, start)
        for position, entry in zip(walked, _entries_at(entries, walked), strict=False):
            stats.examined += 1
            item = _stored(table, entry[1], entry[2] if index.table_has_range else None)
            assert item is not None, "the index holds an item the table has not"
            size = _size_of(item)
            if len(results) == query["limit"] or result_size + size > RESULT_SIZE_LIMIT:
                last_evaluated_key = table._get_last_evaluated_key(results[-1], query["index_name"])
                break
            if position not in accepted:
                break  # past the key condition: the rest of the partition is too
            results.append(item)
            result_size += size
        scanned_count = len(results)
        projected = table.get_index(query["index_name"])
        # An index that projects every attribute shows the filter the item itself: filter first
        # (read-only, under the lock), and copy only what the filter keeps (a search that reads an
        # owner's 100,000 links and keeps one copied them all).
        filter_expression = query["filter_expression"]
        if filter_expression is not None and (projected.projection or {}).get("ProjectionType") == "ALL":
            results = [item for item in results if filter_expression.expr(item)]
            filter_expression = None
        results = copy.deepcopy(results)
    results = [projected.project(r) for r in results]
    if filter_expression is not None:
        results = [item for item in results if filter_expression.expr(item)]
    if query["projection_expressions"]:
        results = [r.project(query["projection_expressions"]) for r in results]
    return results, scanned_count, last_evaluated_key


def _entries_at(entries: SortedList, walked: range) -> Iterator[Entry]:
    """The entries at ``walked``'s positions, in its order: one iterator over the list, where
    reading each position anew would search the list's index every time."""
    if walked.step > 0:
        return entries.islice(walked.start, walked.stop)
    return entries.islice(walked.stop + 1, walked.start + 1, reverse=True)


def _size_of(item: Item) -> int:
    """``Item.size()``, the same number: moto measures every item a Query reads, through a method
    call per attribute type test (half the time of a search that reads an owner's 100,000 links);
    strings, numbers and string sets, most of an item, are measured here directly."""
    total = 0
    for key, value in item.attrs.items():
        total += _utf8_length(key)
        kind = value.type
        if kind == "S" and isinstance(value.value, str):
            total += _utf8_length(value.value)
        elif kind == "N":
            total += len(str(value.value))
        elif kind == "SS":
            # A link's search words: moto builds a DynamoType for each element to measure it.
            total += sum(_utf8_length(element) for element in value.value)
        else:
            total += value.size()
    return total


def _utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def install() -> None:
    """Answer index Queries from the sorted index and keep it up to date; idempotent."""
    with _lock:
        if getattr(Table.query, "_indexed", False):
            return
        query, put_item, delete_item = Table.query, Table.put_item, Table.delete_item
        update_item = DynamoDBBackend.update_item

        def indexed_query(self: Table, *args: Any, **kwargs: Any) -> Any:
            bound = _bind(*args, **kwargs)
            if (
                bound is not None
                and bound["index_name"]
                and not bound["filter_kwargs"]
                and not (bound["consistent_read"] and self.global_indexes)
            ):
                answer = _fast_query(self, bound)
                if answer is not None:
                    return answer
            return query(self, *args, **kwargs)

        def indexed_put_item(self: Table, item_attrs: Any, *args: Any, **kwargs: Any) -> Item:
            before = _placements(self, *_key_of(self, item_attrs))
            item = put_item(self, item_attrs, *args, **kwargs)
            _written(self, item.hash_key, item.range_key, before)
            return item

        def indexed_delete_item(
            self: Table, hash_key: DynamoType, range_key: DynamoType | None
        ) -> Item | None:
            before = _placements(self, hash_key, range_key)
            item = delete_item(self, hash_key, range_key)
            if item is not None:
                _written(self, item.hash_key, item.range_key, before)
            return item

        def indexed_update_item(
            self: DynamoDBBackend, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any
        ) -> Item:
            table = self.get_table(table_name)
            hash_key, range_key = _key_of(table, key)
            before = _placements(table, hash_key, range_key)
            try:
                item = update_item(self, table_name, key, *args, **kwargs)
            except Exception:
                _written(table, hash_key, range_key, before)  # moto may have changed it in place
                raise
            _written(table, item.hash_key, item.range_key, before)
            return item

        indexed_query._indexed = True  # type: ignore[attr-defined]
        Table.query = indexed_query  # type: ignore[method-assign]
        Table.put_item = indexed_put_item  # type: ignore[method-assign]
        Table.delete_item = indexed_delete_item  # type: ignore[method-assign]
        DynamoDBBackend.update_item = indexed_update_item  # type: ignore[method-assign]


_QUERY_PARAMETERS = (
    "hash_key",
    "range_comparison",
    "range_objs",
    "limit",
    "exclusive_start_key",
    "scan_index_forward",
    "projection_expressions",
    "index_name",
    "consistent_read",
    "filter_expression",
)


def _bind(*args: Any, **kwargs: Any) -> dict[str, Any] | None:
    """Table.query's arguments by name (moto's backend passes the first ten by position)."""
    if len(args) > len(_QUERY_PARAMETERS):
        return None
    bound: dict[str, Any] = dict(zip(_QUERY_PARAMETERS, args, strict=False))
    for name in _QUERY_PARAMETERS:
        if name not in bound:
            if name not in kwargs:
                if name in ("index_name", "filter_expression"):
                    bound[name] = None
                elif name == "consistent_read":
                    bound[name] = False
                else:
                    return None
            else:
                bound[name] = kwargs[name]
    bound["hash_key_conditions"] = kwargs.get("hash_key_conditions")
    bound["range_key_conditions"] = kwargs.get("range_key_conditions")
    bound["filter_kwargs"] = {
        k: v
        for k, v in kwargs.items()
        if k not in _QUERY_PARAMETERS and k not in ("hash_key_conditions", "range_key_conditions")
    }
    return bound
