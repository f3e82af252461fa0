"""The API's OpenAPI 3.1 document, generated from the routes and the pydantic models the routes
validate and answer with, never written beside them.

Each route states what it reads and answers in its decorator (``**operation(...)``): its request
body model, its query model, its answers (a model, or a media type) and the errors it can give.
Powertools' resolver turns the routes (paths, path parameters, answers, security) into the
document; request bodies and query parameters are added here from the same models, because the
resolver only derives those from typed handler parameters, which need its request validation (about
130 ms more per cold start). No AWS calls."""

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from shortener.http.api import ErrorBody

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver

TITLE = "Bulk URL shortener"
VERSION = "1"
SECURITY_SCHEME = "apiKey"
API_KEY_HEADER = "X-Api-Key"
JSON = "application/json"
_SCHEMAS = "#/components/schemas/"
# Vendor keys that carry a route's query model to ``document`` (removed from the document).
_QUERY_KEY = "x-shortener-query"

# The answers API Gateway gives itself (template.yaml's GatewayResponses and the usage plans'
# throttles), in the same error shape as the function's.
ERROR_DESCRIPTIONS: dict[int, str] = {
    400: "The request is malformed: an invalid URL, code, cursor or body.",
    403: "API Gateway: no API key in X-Api-Key, or one not valid or revoked; or the key may not do this.",
    404: "Nothing has that name (for this caller), or no route matches the method and path.",
    405: "The path exists, but not with this method.",
    409: "A conflict: the code is taken, or the results are not ready yet.",
    410: "The link was taken down.",
    413: "The body is larger than this route takes.",
    415: "The body's Content-Type is not one this route takes.",
    422: "A field is missing or has a wrong value (the message names each).",
    429: "API Gateway: over the request rate or the daily quota; retry later.",
    503: "A dependency is busy or not configured; retry in a moment (or see the message).",
}
# Every route can meet a busy table, API Gateway's throttle covers every method, and a path
# parameter that no route takes (an encoded "/") matches no route: 404.
COMMON_ERRORS = (404, 429, 503)
KEYED_ERRORS = (403,)
BODY_ERRORS = (400, 413, 415, 422)

_request_models: dict[str, type[BaseModel]] = {}
_query_models: dict[str, type[BaseModel]] = {}


@dataclass(frozen=True)
class Answer:
    """One answer of a route: a JSON model, or a body of ``media_type`` (a page, a CSV file)."""

    description: str
    model: type[BaseModel] | None = None
    media_type: str = JSON
    headers: Mapping[str, str] = field(default_factory=dict)
    empty: bool = False
    # Also an HTML page, for browsers (a redirect's 404 and 410).
    html_too: bool = False
    # A JSON schema of its own, for a body no model describes (the app-links document).
    schema: Mapping[str, Any] | None = None
    # OpenAPI links: the operations a client (or a stateful fuzzer) calls next with this answer.
    links: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Other media types of the same body (a QR code as image/svg+xml as well as image/png).
    also: tuple[str, ...] = ()

    def spec(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"description": self.description}
        if self.empty:
            answer["content"] = {}
        elif self.model is not None:
            answer["content"] = {self.media_type: {"model": self.model}}
        elif self.schema is not None:
            answer["content"] = {self.media_type: {"schema": dict(self.schema)}}
        else:
            answer["content"] = {self.media_type: {"schema": {"type": "string"}}}
        for media_type in self.also:
            answer["content"][media_type] = dict(answer["content"][self.media_type])
        if self.html_too:
            answer["content"]["text/html"] = {"schema": {"type": "string"}}
        if self.links:
            answer["links"] = {name: dict(link) for name, link in self.links.items()}
        if self.headers:
            answer["headers"] = {
                name: {"description": text, "schema": {"type": "string"}}
                for name, text in self.headers.items()
            }
        return answer


def link_to(method: str, path: str, **parameters: str) -> dict[str, Any]:
    """An OpenAPI link to the operation ``method path``, its parameters taken from the answer
    (runtime expressions such as ``$response.body#/code``)."""
    pointer = path.replace("~", "~0").replace("/", "~1")
    return {"operationRef": f"#/paths/{pointer}/{method.lower()}", "parameters": parameters}


def operation(
    summary: str,
    answers: Mapping[int, Answer],
    *,
    errors: Iterable[int] = (),
    body: type[BaseModel] | None = None,
    body_media_types: Iterable[str] = (JSON,),
    file_body: Mapping[str, Any] | None = None,
    query: type[BaseModel] | None = None,
    keyed: bool = True,
    tag: str = "links",
) -> dict[str, Any]:
    """The keyword arguments of a route decorator that describe the route in the document.
    ``body``: the model the route validates its JSON (or form) body with; ``file_body``: the
    OpenAPI request body of a route that takes a file instead. ``keyed``: the route needs an API
    key (template.yaml: no ``Authorizer: NONE``)."""
    responses: dict[int, dict[str, Any]] = {status: answer.spec() for status, answer in answers.items()}
    error_statuses = set(errors) | set(COMMON_ERRORS)
    if keyed:
        error_statuses |= set(KEYED_ERRORS)
    if body is not None:
        error_statuses |= set(BODY_ERRORS)
    for status in sorted(error_statuses - responses.keys()):
        responses[status] = {
            "description": ERROR_DESCRIPTIONS[status],
            "content": {JSON: {"model": ErrorBody}},
        }
    extensions: dict[str, Any] = {}
    if body is not None:
        _request_models[body.__name__] = body
        schema = {"schema": {"$ref": _SCHEMAS + body.__name__}}
        extensions["requestBody"] = {"required": True, "content": dict.fromkeys(body_media_types, schema)}
    elif file_body is not None:
        extensions["requestBody"] = dict(file_body)
    if query is not None:
        _query_models[query.__name__] = query
        extensions[_QUERY_KEY] = query.__name__
    return {
        "summary": summary,
        "responses": responses,
        "security": [{SECURITY_SCHEME: []}] if keyed else None,
        "openapi_extensions": extensions or None,
        "tags": [tag],
    }


def document(resolver: "APIGatewayRestResolver") -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``resolver``'s routes (the same for every caller)."""
    from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn

    text = resolver.get_openapi_json_schema(
        title=TITLE,
        version=VERSION,
        summary="Short links one at a time or by the thousand; jobs for files of any size.",
        security_schemes={
            SECURITY_SCHEME: APIKey(
                name=API_KEY_HEADER,
                in_=APIKeyIn.header,
                description="A key made with `shortener keys create` (or the stack's own key).",
            )
        },
    )
    spec: dict[str, Any] = json.loads(text)
    schemas: dict[str, Any] = spec.setdefault("components", {}).setdefault("schemas", {})
    if _request_models:
        _, request_schemas = models_json_schema(
            [(model, "validation") for model in _request_models.values()],
            ref_template=_SCHEMAS + "{model}",
        )
        for name, schema in request_schemas.get("$defs", {}).items():
            if name in schemas and schemas[name] != schema:
                raise ValueError(f"Two different schemas are named {name} (a request and an answer)")
            schemas[name] = schema
    for path_item in spec.get("paths", {}).values():
        for item in path_item.values():
            query_name = item.pop(_QUERY_KEY, None) if isinstance(item, dict) else None
            if query_name is not None:
                item.setdefault("parameters", []).extend(query_parameters(_query_models[query_name]))
    _drop_unused_schemas(spec)
    return spec


def _drop_unused_schemas(spec: dict[str, Any]) -> None:
    """Powertools adds the schemas of its own request validation, which is off here."""
    schemas = spec["components"]["schemas"]
    while True:
        text = json.dumps({key: value for key, value in spec.items() if key != "components"}) + json.dumps(
            schemas
        )
        unused = [name for name in schemas if f'"{_SCHEMAS}{name}"' not in text]
        if not unused:
            return
        for name in unused:
            del schemas[name]


def query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """``model``'s fields as OpenAPI query parameters."""
    schema = model.model_json_schema()
    required = set(schema.get("required", []))
    parameters = []
    for name, prop in schema["properties"].items():
        description = prop.pop("description", None)
        prop.pop("title", None)
        parameter: dict[str, Any] = {
            "name": name,
            "in": "query",
            "required": name in required,
            "schema": prop,
        }
        if description:
            parameter["description"] = description
        parameters.append(parameter)
    return parameters
