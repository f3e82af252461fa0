"""Smaller items in moto's DynamoDB: what an item repeats is held once.

moto keeps each item as an ``Item`` with one ``DynamoType`` per attribute, built from the strings
parsed out of the request that wrote it. So every item held its own copy of each attribute name
(``"created_at"``, ``"list_pk"``, ...), its own copy of values that thousands of items share (a
bulk link's owner, its listing partition, its job's id, its chunk's creation time), and its key
twice: the ``DynamoType`` moto files the item under (``Item.hash_key``, ``Item.range_key``) and an
equal one among its attributes. DynamoDB itself stores an item's bytes once, about the size its
capacity rules count (names and values). Measured with ``make bench ARGS=store_memory`` (100,000
bulk links): docs/capacity.md.

Here each new ``Item`` is compacted as it is built (moto's copies of an item keep its sharing): its key
attributes are the very ``DynamoType`` objects of its key, and its attribute names and short string
values (at most :data:`SHARED_LENGTH` characters; S and N values, the members of SS and NS sets,
within lists and maps too) are taken from a bounded table of strings seen before (at most
:data:`SHARED_STRINGS`, emptied when full, so a value no item holds any more is not kept long).
Strings cannot change, so sharing one changes nothing an item answers; a key attribute's
``DynamoType`` is never changed in place (DynamoDB refuses an update of a key attribute, and so does
moto), and ``copy.deepcopy`` of an item keeps the sharing inside the copy."""

from typing import Any

from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict

SHARED_LENGTH = 128
SHARED_STRINGS = 1 << 16

_strings: dict[str, str] = {}


def shared(text: str) -> str:
    """``text``, or the equal string already held (one copy for every item that holds it)."""
    if len(text) > SHARED_LENGTH:
        return text
    found = _strings.get(text)
    if found is None:
        if len(_strings) >= SHARED_STRINGS:
            _strings.clear()
        found = _strings.setdefault(text, text)
    return found


def _share_value(value: DynamoType) -> None:
    held = value.value
    if isinstance(held, str):
        if value.type in ("S", "N"):
            value.value = shared(held)
    elif isinstance(held, list):
        if value.type in ("SS", "NS"):
            held[:] = [shared(member) if isinstance(member, str) else member for member in held]
        else:
            for member in held:
                if isinstance(member, DynamoType):
                    _share_value(member)
    elif isinstance(held, dict):
        for member in held.values():
            if isinstance(member, DynamoType):
                _share_value(member)


def _same(value: DynamoType, key: DynamoType | None) -> bool:
    return key is not None and value.type == key.type and value.value == key.value


def compact(item: Item) -> None:
    """Share ``item``'s names, short values and key objects (see the module's docstring)."""
    attrs: dict[str, Any] = item.attrs
    compacted = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.__init__(compacted)  # LimitedSizeDict's own setter re-measures the item on every name
    for name, value in attrs.items():
        kept = value
        if isinstance(value, DynamoType):
            if _same(value, item.hash_key):
                kept = item.hash_key
            elif _same(value, item.range_key):
                kept = item.range_key
            else:
                _share_value(value)
        dict.__setitem__(compacted, shared(name), kept)
    item.attrs = compacted


def install() -> None:
    """Compact every ``Item`` moto builds; idempotent."""
    if getattr(Item.__init__, "_compact", False):
        return
    build = Item.__init__

    def compact_init(self: Item, hash_key: DynamoType, range_key: DynamoType | None, attrs: Any) -> None:
        build(self, hash_key, range_key, attrs)
        compact(self)

    compact_init._compact = True  # type: ignore[attr-defined]
    compact_init.__wrapped__ = build  # type: ignore[attr-defined]
    Item.__init__ = compact_init  # type: ignore[method-assign]
