"""Every JSON request body is read strictly: a field the route does not know is a 422 naming it,
never ignored (a client sending ``password`` must not believe it made a protected link), and the
OpenAPI document says so (``additionalProperties: false``)."""

from typing import Any

import pytest
from pydantic import BaseModel

from shortener.access.blocklist_model import BlockRequest
from shortener.exceptions import InvalidFieldsError
from shortener.http import web
from shortener.jobs.batches_model import BatchRequest
from shortener.jobs.view_model import DirectUploadRequest
from shortener.links.bulk_create import read_bulk_request
from shortener.links.bulk_create_model import BulkLinkItem
from shortener.links.model import LinkUpdate, ShortenRequest
from shortener.request_model import RequestModel

# Each request model with a body that is valid but for one unknown field.
_BODIES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (ShortenRequest, {"url": "https://example.com/", "passwrd": "x"}),
    (LinkUpdate, {"title": "t", "expires": "2030-01-01T00:00:00Z"}),
    (BulkLinkItem, {"url": "https://example.com/", "ios": "https://apps.apple.com/"}),
    (BatchRequest, {"action": "disable", "codes": ["abc"], "dry_run": True}),
    (BatchRequest, {"action": "set", "codes": ["abc"], "set": {"title": "t", "notes": "x"}}),
    (BlockRequest, {"reason": "spam", "note": "x"}),
    (DirectUploadRequest, {"file_name": "a.csv", "size": 10, "sise": 10}),
]


@pytest.mark.parametrize(("model", "fields"), _BODIES, ids=lambda v: getattr(v, "__name__", ""))
def test_an_unknown_field_is_a_422_naming_it(model: type[BaseModel], fields: dict[str, Any]) -> None:
    # Given a body that is right but for one field the route does not know
    unknown = next(name for name in _unknown_names(model, fields))
    # When it is read, Then it is refused, naming the field
    with pytest.raises(InvalidFieldsError) as refused:
        web.parse_request(model, fields)
    assert refused.value.status_code == 422
    assert refused.value.error == "invalid_request"
    assert unknown in refused.value.message and "Extra inputs are not permitted" in refused.value.message


def test_every_request_model_is_strict() -> None:
    for model in {model for model, _ in _BODIES}:
        assert issubclass(model, RequestModel)
        assert model.model_json_schema().get("additionalProperties") is False


def test_the_known_fields_of_a_direct_upload_still_pass() -> None:
    # The rows' defaults travel in the same body as the file's description.
    request = web.parse_request(
        DirectUploadRequest,
        {"filename": "a.csv", "size": 5, "title": "Spring", "tags": "a,b", "max_clicks": 3},
    )
    assert (request.file_name, request.max_clicks) == ("a.csv", 3)


def test_a_bulk_call_with_an_unknown_top_level_field_names_it() -> None:
    body = b'{"links": [{"url": "https://example.com/"}], "dry_run": true}'
    with pytest.raises(InvalidFieldsError, match="dry_run"):
        read_bulk_request(body, lambda raw: web.parse_fields(raw, "application/json"))


def test_messages_carry_no_validation_library_prefix() -> None:
    with pytest.raises(InvalidFieldsError) as refused:
        web.parse_request(LinkUpdate, {"expires_at": "2020-01-01T00:00:00Z"})
    assert refused.value.message == "expires_at: must be in the future"


def test_every_request_body_of_the_openapi_document_forbids_other_fields() -> None:
    from functions.api import app
    from shortener.http import openapi

    spec = openapi.document(app.app)
    schemas = spec["components"]["schemas"]
    bodies = [
        content["schema"]["$ref"].rsplit("/", 1)[-1]
        for item in spec["paths"].values()
        for operation in item.values()
        if isinstance(operation, dict) and "requestBody" in operation
        for content in operation["requestBody"]["content"].values()
        if "$ref" in content.get("schema", {})
    ]
    assert {"ShortenRequest", "LinkUpdate", "BulkLinksRequest", "BatchRequest"} <= set(bodies)
    for name in bodies:
        assert schemas[name].get("additionalProperties") is False, name


def _unknown_names(model: type[BaseModel], fields: dict[str, Any]) -> list[str]:
    names = [name for name in fields if name not in model.model_fields]
    nested = fields.get("set")
    return names or [name for name in (nested or {}) if name not in LinkUpdate.model_fields]
