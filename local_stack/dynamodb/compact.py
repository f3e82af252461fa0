"""Smaller items in moto's DynamoDB: what an item repeats is held once.

moto keeps each item as an ``Item`` with one ``DynamoType`` per attribute, built from the strings
parsed out of the request that wrote it. So every item held its own copy of each attribute name
(``"created_at"``, ``"list_pk"``, ...), its own copy of values that thousands of items share (a
bulk link's owner, its listing partition, its job's id, its chunk's creation time), and its key
twice: the ``DynamoType`` moto files the item under (``Item.hash_key``, ``Item.range_key``) and an
equal one among its attributes. DynamoDB itself stores an item's bytes once, about the size its
capacity rules count (names and values). Measured with ``make bench ARGS=store_memory`` (100,000
bulk links): docs/capacity.md.

Here each new ``Item`` is compacted as it is built (moto's copies of an item keep its sharing):
its key attributes are the very ``DynamoType`` objects of its key; a string or number attribute of
at most :data:`SHARED_LENGTH` characters is one ``DynamoType`` for every item that holds that value;
and attribute names and the short strings inside sets, lists and maps are shared likewise. Both
tables are bounded (at most :data:`SHARED_STRINGS` entries each, emptied when full, so a value no
item holds any more is not kept long). Nothing an item answers changes: strings cannot change, and
moto never changes a scalar ``DynamoType`` in place (an update, an ADD, builds a new one; a key
attribute cannot be updated at all, in DynamoDB or moto); ``copy.deepcopy`` of an item copies."""

import sys
import types
from typing import Any

from moto.dynamodb.models import dynamo_type
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict

SHARED_LENGTH = 128
# Values thousands of items share come back at once after the tables are emptied; an item's own
# values (a URL, a listing position) only fill them. 65,536 entries held about 9 MB of those.
SHARED_STRINGS = 1 << 12

_strings: dict[str, str] = {}
_scalars: dict[tuple[str, str], DynamoType] = {}


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


def shared_scalar(value: DynamoType) -> DynamoType:
    """``value`` (an S or N value), or an equal one already held: one object for every item that
    holds it. moto never changes a string's or a number's ``DynamoType`` in place (an update or ADD
    builds a new one), so items may share it."""
    held = value.value
    if not isinstance(held, str) or len(held) > SHARED_LENGTH:
        return value
    key = (value.type, held)
    found = _scalars.get(key)
    if found is None:
        if len(_scalars) >= SHARED_STRINGS:
            _scalars.clear()
        value.value = shared(held)
        found = _scalars.setdefault(key, value)
    return found


def scalar(kind: str, text: str) -> DynamoType:
    """The ``DynamoType`` of an S or N value given as text, shared as :func:`shared_scalar` shares
    (the durable state's restore builds items with it)."""
    found = _scalars.get((kind, text))
    if found is None:
        typed = object.__new__(DynamoType)
        typed.type, typed.value = kind, text
        found = shared_scalar(typed)
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
            elif value.type in ("S", "N"):
                kept = shared_scalar(value)
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


def install_slotted_values() -> None:
    """Make moto's ``DynamoType`` a class whose instances hold ``type`` and ``value`` in slots, with
    no per-instance dict: 48 bytes each instead of 88 (Python 3.13, tracemalloc), and a bulk link
    holds three of its own (its code, URL and listing position). Likewise its ``LimitedSizeDict``
    (an item's attributes) without the dict and weak reference slots a subclass of dict gets: 64
    bytes instead of 80 before its table. Each class is moto's own body (every method, the same
    name and module) with ``__slots__``; every module that imported the name is given the new
    class, so moto's ``type(x) is DynamoType`` checks hold. Installed before any value is built
    (``install_moto_fixes``); idempotent."""
    _swap_for_slotted(dynamo_type.DynamoType, ("type", "value"))
    _swap_for_slotted(dynamo_type.LimitedSizeDict, ())
    _scalars.clear()  # a value built before holds the old class


def _swap_for_slotted(
    old: type,
    slots: tuple[str, ...],
    bases: tuple[type, ...] | None = None,
    extra: dict[str, Any] | None = None,
    leave: tuple[str, ...] = (),
) -> None:
    if "__slots__" in vars(old):
        return
    left = ("__dict__", "__weakref__", *leave)
    namespace = {k: v for k, v in vars(old).items() if k not in left} | (extra or {})
    namespace["__slots__"] = slots
    slotted = type(old.__name__, old.__bases__ if bases is None else bases, namespace)
    slotted.__qualname__ = old.__qualname__
    for name, member in namespace.items():
        cells = getattr(member, "__closure__", None) or ()
        if any(cell.cell_contents is old for cell in cells):
            # super() reads the class from the function's __class__ cell: the new class's
            # functions get a cell of their own (moto's LimitedSizeDict.__setitem__ calls super()).
            closure = tuple(
                types.CellType(slotted if c.cell_contents is old else c.cell_contents) for c in cells
            )
            rebuilt = types.FunctionType(
                member.__code__, member.__globals__, member.__name__, member.__defaults__, closure
            )
            rebuilt.__kwdefaults__, rebuilt.__qualname__ = member.__kwdefaults__, member.__qualname__
            setattr(slotted, name, rebuilt)
    for module in list(sys.modules.values()):
        held = getattr(module, "__dict__", None)
        if isinstance(held, dict) and held.get(old.__name__) is old:
            held[old.__name__] = slotted


def install_slotted_items() -> None:
    """Make moto's ``Item`` a class holding ``hash_key``, ``range_key`` and ``attrs`` in slots: 56
    bytes an item instead of 96 (its dict's inline values). It is moto's class body on ``object``
    rather than moto's ``BaseModel`` (whose instances always carry a dict; nothing asks whether an
    item is one), given to every module that imported the name as :func:`install_slotted_values`
    does; each item built is still recorded among moto's ``Item`` instances, as
    ``BaseModel.__new__`` records them. Installed before any item is built; idempotent."""
    tracked = dynamo_type.Item

    def recorded_new(cls: type, *args: Any, **kwargs: Any) -> Any:
        instance: Any = object.__new__(cls)
        tracked.instances_tracked.append(instance)  # type: ignore[attr-defined]
        return instance

    _swap_for_slotted(
        tracked,
        ("attrs", "hash_key", "range_key"),
        bases=(object,),
        extra={"__new__": staticmethod(recorded_new)},
        leave=("instances_tracked",),
    )
