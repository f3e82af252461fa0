"""The base of every JSON request body the API reads, and how a body that does not fit is told.

A field the route does not know is refused (422 naming it), never ignored: a client that sends
``password`` or a misspelt ``expires`` must not believe it made a link it did not make."""

from pydantic import BaseModel, ConfigDict, ValidationError

from shortener.exceptions import InvalidFieldsError

# What pydantic puts before the text of a ValueError raised in a validator; said once to a person.
_VALUE_ERROR = "Value error, "


class RequestModel(BaseModel):
    """A request body: unknown fields are an error (``additionalProperties: false`` in the OpenAPI
    document), text is stripped of surrounding white space."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


def problems(exc: ValidationError, *, fields: bool = True) -> str:
    """Every problem of ``exc`` as ``<field>: <what is wrong>`` (without ``fields``: only what is
    wrong), joined by "; "."""
    found = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error["loc"]) if fields else ""
        message = error["msg"].removeprefix(_VALUE_ERROR)
        found.append(f"{location}: {message}" if location else message)
    return "; ".join(found)


def invalid_fields(exc: ValidationError) -> InvalidFieldsError:
    """The 422 that names each field of ``exc`` that is wrong (unknown ones included)."""
    return InvalidFieldsError(problems(exc))
