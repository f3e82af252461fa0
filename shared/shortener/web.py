"""The HTTP edge: reading request bodies, the caller, and working out the public base URL. No AWS
calls."""

import base64
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from pydantic import BaseModel, ValidationError

from shortener.models.access import Caller
from shortener.models.exceptions import InvalidFieldsError, InvalidRequestError, UnsupportedMediaTypeError


def header(headers: Mapping[str, str] | None, name: str) -> str:
    """A request header by case-insensitive name ('' when absent)."""
    wanted = name.lower()
    for key, value in (headers or {}).items():
        if key.lower() == wanted:
            return value or ""
    return ""


def body_bytes(body: str | None, is_base64_encoded: bool) -> bytes:
    """The raw request body of an API Gateway proxy event."""
    if body is None:
        return b""
    if is_base64_encoded:
        try:
            return base64.b64decode(body, validate=True)
        except ValueError as exc:
            raise InvalidRequestError("The request body is not valid base64.") from exc
    return body.encode()


def parse_fields(raw: bytes, content_type: str) -> dict[str, Any]:
    """The fields of a JSON object or an HTML form post."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError("The request body is not UTF-8 text.") from exc
    if media_type in ("", "application/json") or media_type.endswith("+json"):
        try:
            fields = json.loads(text) if text.strip() else None
        except json.JSONDecodeError as exc:
            raise InvalidRequestError(f"The request body is not valid JSON: {exc.msg}.") from exc
        if not isinstance(fields, dict):
            raise InvalidRequestError('Send a JSON object such as {"url": "https://example.com/"}.')
        return fields
    if media_type == "application/x-www-form-urlencoded":
        return {key: values[0] for key, values in parse_qs(text, keep_blank_values=False).items()}
    raise UnsupportedMediaTypeError(
        f"Content type '{media_type}' is not accepted; send application/json or a form post."
    )


def parse_request[ModelT: BaseModel](model: type[ModelT], fields: Mapping[str, Any]) -> ModelT:
    """``fields`` as ``model``, or InvalidFieldsError (422) naming each field that is wrong."""
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            location = ".".join(str(part) for part in error["loc"])
            problems.append(f"{location}: {error['msg']}" if location else error["msg"])
        raise InvalidFieldsError("; ".join(problems)) from exc


def public_base_url(configured: str, headers: Mapping[str, str] | None, stage: str | None) -> str:
    """The base that short URLs start with: the configured one, else the host the request came to
    (with the stage path on an execute-api host, where it is part of every URL)."""
    if configured:
        return configured.rstrip("/") + "/"
    host = header(headers, "host") or "localhost"
    scheme = header(headers, "x-forwarded-proto") or "https"
    if ".execute-api." in host and stage:
        return f"{scheme}://{host}/{stage}/"
    return f"{scheme}://{host}/"


def request_host(headers: Mapping[str, str] | None) -> str | None:
    """The host name (without port) the request was sent to."""
    host = header(headers, "host")
    return host.rsplit(":", 1)[0].lower() if host else None


def wants_html(headers: Mapping[str, str] | None) -> bool:
    return "text/html" in header(headers, "accept")


def caller_from_event(event: Mapping[str, Any]) -> Caller:
    """The caller that the Lambda authorizer vouched for, from ``requestContext.authorizer`` of a
    REST proxy event. Without that context (a public route, Access=open without a key) or with
    one that does not parse, the caller is anonymous: never more rights than the authorizer gave."""
    context = (event.get("requestContext") or {}).get("authorizer") or {}
    try:
        return Caller.model_validate(context)
    except ValidationError:
        return Caller.anonymous()
