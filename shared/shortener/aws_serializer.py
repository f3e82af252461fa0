"""A JSON-protocol request serializer that writes the same JSON document as botocore's, with a
fraction of the CPU.

botocore's JSON serializer copies every value of a request into a new tree along the service
model, one Python call per node (about 700 for a BatchWriteItem of 25 links), and then
``json.dumps`` the copy: together a fifth of a bulk row's CPU (make bench ARGS=cpu). For most
operations that copy is the request itself: every value is written as given except blobs
(base64), timestamps and floats, and members are renamed only where the model says so. So where an
operation's input has no timestamp, float or renamed member anywhere, this serializer writes the
parameters directly with orjson (about 14 times faster than ``json.dumps`` on a batch of links),
and keeps botocore's path when the parameters hold anything orjson would write otherwise than
botocore: a value it refuses (bytes, a datetime, a set, a subclass of str or dict, a non-string
key), or a blob member at all (a DynamoDB ``B`` or ``BS`` attribute value, which botocore also
accepts as a str and encodes). The body differs from botocore's only in JSON's insignificant
choices (no spaces between tokens, non-ASCII characters as UTF-8 rather than ``\\u`` escapes).
tests/shortener/test_aws_serializer.py compares the two on generated requests."""

from typing import Any

import orjson
from botocore.model import OperationModel, Shape
from botocore.serialize import JSONSerializer

# Shape types botocore's JSON serializer writes as they are given (_default_serialize), and the
# containers it walks into; anything else means the copy differs from the parameters.
_AS_GIVEN = frozenset({"string", "boolean", "integer", "long", "structure", "list", "map", "blob"})
# Types orjson writes natively but json.dumps (botocore) refuses or writes differently: refused
# here too (a TypeError), so that they take botocore's path.
_REFUSE_WHAT_JSON_REFUSES = (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
)


class DirectJSONSerializer(JSONSerializer):
    """botocore's JSONSerializer, writing the parameters directly where that gives the same JSON
    document (``install`` puts it on a client)."""

    def __init__(self) -> None:
        super().__init__()
        # Per operation: the markers of its blob members in a body (``"B": ``), or None when
        # the operation always takes botocore's path.
        self._blob_markers: dict[str, tuple[bytes, ...] | None] = {}

    def serialize_to_request(self, parameters: Any, operation_model: OperationModel) -> dict[str, Any]:
        name = operation_model.name
        if name not in self._blob_markers:
            self._blob_markers[name] = _blob_markers(operation_model)
        markers = self._blob_markers[name]
        if markers is not None:
            try:
                body = orjson.dumps(parameters, option=_REFUSE_WHAT_JSON_REFUSES)
            except TypeError:  # orjson.JSONEncodeError included
                body = None
            # A marker can also appear inside a string value (escaped quotes aside): then the
            # request merely takes the longer path.
            if body is not None and not any(marker in body for marker in markers):
                serialized = super().serialize_to_request({}, operation_model)
                serialized["body"] = body
                return serialized
        return super().serialize_to_request(parameters, operation_model)  # type: ignore[no-any-return]


def _blob_markers(operation_model: OperationModel) -> tuple[bytes, ...] | None:
    """How a blob member of the operation's input would begin in orjson's output, or None
    when the input can hold a value botocore writes otherwise than given (a timestamp, a float, a
    renamed member) or the operation has a host prefix to fill in."""
    shape = operation_model.input_shape
    if shape is None or operation_model.endpoint:
        return None
    blob_members: set[str] = set()
    if not _written_as_given(shape, blob_members, set()):
        return None
    return tuple(sorted(f'"{member}":'.encode() for member in blob_members))


def _written_as_given(shape: Shape, blob_members: set[str], seen: set[str]) -> bool:
    """Whether every value under ``shape`` is written as given, collecting the names of members
    that hold blobs (directly or in lists and maps)."""
    kind = shape.type_name
    if kind not in _AS_GIVEN:
        return False
    if kind not in ("structure", "list", "map") or shape.name in seen:
        return True  # a scalar, or a shape already being looked at (an attribute value's M and L)
    seen.add(shape.name)
    if kind != "structure":
        element = shape.member if kind == "list" else shape.value  # type: ignore[attr-defined]
        return _written_as_given(element, blob_members, seen)
    for member_name, member in shape.members.items():  # type: ignore[attr-defined]
        if "name" in member.serialization:
            return False
        if _holds_blob(member):
            blob_members.add(member_name)
        if not _written_as_given(member, blob_members, seen):
            return False
    return True


def _holds_blob(shape: Shape) -> bool:
    while shape.type_name in ("list", "map"):
        shape = shape.member if shape.type_name == "list" else shape.value  # type: ignore[attr-defined]
    return shape.type_name == "blob"


def install(client: Any) -> Any:
    """Serialize ``client``'s requests with DirectJSONSerializer. Only for a JSON-protocol client
    made without parameter validation (its serializer is then botocore's plain JSONSerializer)."""
    if type(client._serializer) is not JSONSerializer:
        raise TypeError(f"expected botocore's JSONSerializer, found {type(client._serializer).__name__}")
    client._serializer = DirectJSONSerializer()
    return client
