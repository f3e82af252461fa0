"""The HTTP edge: reading request bodies, the caller, and working out the public base URL. No AWS
calls."""

import base64
import json
import math
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode

from pydantic import BaseModel, ValidationError

from shortener.access.model import Caller
from shortener.exceptions import InvalidRequestError, UnsupportedMediaTypeError
from shortener.request_model import invalid_fields, problems

# A host name or address and an optional port: what a Host header may put into a short URL.
_HOST_HEADER = re.compile(r"(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")


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
    # A lone surrogate (never text) is kept as its bytes, so that decoding refuses it with a 400.
    return body.encode("utf-8", "surrogatepass")


def parse_fields(raw: bytes, content_type: str) -> dict[str, Any]:
    """The fields of a JSON object or an HTML form post."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError("The request body is not UTF-8 text.") from exc
    if media_type in ("", "application/json") or media_type.endswith("+json"):
        return _json_object(text)
    if media_type == "application/x-www-form-urlencoded":
        if text.lstrip().startswith(("{", "[")):
            # `curl -d '{...}'` sends JSON as a form post; its "fields" would be nonsense.
            raise UnsupportedMediaTypeError(
                "The body looks like JSON but was sent as application/x-www-form-urlencoded (curl -d "
                "does that); send it with the header Content-Type: application/json."
            )
        return {key: values[0] for key, values in parse_qs(text, keep_blank_values=False).items()}
    raise UnsupportedMediaTypeError(
        f"Content type '{media_type}' is not accepted; send application/json or a form post."
    )


def _json_object(text: str) -> dict[str, Any]:
    try:
        fields = (
            json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
            if text.strip()
            else None
        )
    except json.JSONDecodeError as exc:
        raise InvalidRequestError(f"The request body is not valid JSON: {exc.msg}.") from exc
    except RecursionError as exc:
        # Python's parser recurses per nesting level; thousands of '[' exhaust the stack.
        raise InvalidRequestError("The request body is nested too deeply to be a request.") from exc
    except _NotJsonNumberError as exc:
        raise InvalidRequestError(f"The request body is not valid JSON: {exc}") from exc
    except ValueError as exc:
        # Python refuses to convert an integer of more than 4,300 digits (sys.int_info), a guard
        # against quadratic-time conversion; no field of a request is such a number.
        raise InvalidRequestError(
            "The request body holds a number too long to be a request (more than 4,300 digits)."
        ) from exc
    if not isinstance(fields, dict):
        raise InvalidRequestError('Send a JSON object such as {"url": "https://example.com/"}.')
    _check_strings(fields)
    return fields


class _NotJsonNumberError(ValueError):
    """NaN, Infinity or a float that overflows: JSON (RFC 8259) has no such numbers."""


def _refuse_constant(name: str) -> Any:
    raise _NotJsonNumberError(f"{name} is not a JSON number.")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJsonNumberError(f"the number {text[:40]} is too large.")
    return value


def _check_strings(value: Any) -> None:
    """InvalidRequestError when a string (or key) holds a lone surrogate (JSON's '\\ud800'
    escape): it is no Unicode text, and could not be stored or answered (UTF-8 refuses it).
    Iterative: the parser already bounded the nesting, this must not recurse either."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            texts: list[str] = [item]
        elif isinstance(item, dict):
            texts = list(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
            continue
        else:
            continue
        for text in texts:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidRequestError(
                    "The request body holds a string that is not Unicode text (a lone surrogate escape)."
                ) from exc


def parse_request[ModelT: BaseModel](model: type[ModelT], fields: Mapping[str, Any]) -> ModelT:
    """``fields`` as ``model``, or InvalidFieldsError (422) naming each field that is wrong."""
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        raise invalid_fields(exc) from exc


def parse_query[ModelT: BaseModel](model: type[ModelT], fields: Mapping[str, Any]) -> ModelT:
    """A query string's ``fields`` as ``model``, or InvalidRequestError (400, as every GET route
    answers a bad query) naming each value that is wrong."""
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        raise InvalidRequestError(problems(exc)) from exc


def public_base_url(configured: str, headers: Mapping[str, str] | None, stage: str | None) -> str:
    """The base that short URLs start with: the configured one, else the host the request came to
    (with the stage path on an execute-api host, where it is part of every URL)."""
    if configured:
        return configured.rstrip("/") + "/"
    host = header(headers, "host")
    if not _HOST_HEADER.fullmatch(host):
        host = "localhost"
    # Only http or https, whatever the header says: a short URL must never be javascript:...
    scheme = "http" if header(headers, "x-forwarded-proto").strip().lower() == "http" else "https"
    if ".execute-api." in host and stage:
        return f"{scheme}://{host}/{stage}/"
    return f"{scheme}://{host}/"


def request_host(headers: Mapping[str, str] | None) -> str | None:
    """The host name (without port) the request was sent to."""
    host = header(headers, "host")
    return host.rsplit(":", 1)[0].lower() if host else None


def request_authority(headers: Mapping[str, str] | None) -> str | None:
    """The host and port the request was sent to, as its Host header says (lower case)."""
    return header(headers, "host").lower() or None


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


def query_string(event: Mapping[str, Any]) -> str:
    """The request's query string (without "?"), as API Gateway's event gives its parameters."""
    multi = event.get("multiValueQueryStringParameters") or {}
    if multi:
        return urlencode([(name, value) for name, values in multi.items() for value in values or ()])
    return urlencode(event.get("queryStringParameters") or {})


def client_address(event: Mapping[str, Any]) -> str:
    """The visitor's address: API Gateway's ``sourceIp``; behind the edge (an event of the edge's
    origin, whose secret was checked) the address CloudFront appended last to X-Forwarded-For, since
    ``sourceIp`` is then CloudFront's own ("Request and response behavior for custom origins",
    https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/RequestAndResponseBehaviorCustomOrigin.html#request-custom-headers-behavior).
    Entries before it are the client's own claims, never trusted."""
    source = str(((event.get("requestContext") or {}).get("identity") or {}).get("sourceIp") or "")
    if "version" not in event:
        return source
    forwarded = [part.strip() for part in header(event.get("headers"), "x-forwarded-for").split(",")]
    viewers = [part for part in forwarded if part and part != source]
    return viewers[-1] if viewers else source


def wants_fresh(headers: Mapping[str, str] | None) -> bool:
    """Whether the request asks not to be served from a cache (Cache-Control max-age=0 or
    no-cache: what API Gateway sends on when it refreshes one entry of its cache)."""
    directives = {part.strip().lower() for part in header(headers, "cache-control").split(",")}
    return bool(directives & {"max-age=0", "no-cache", "no-store"})


def on_custom_domain(event: Mapping[str, Any], custom_domain: str) -> bool:
    """Whether the request came in on the stack's custom domain (API Gateway's ``domainName``)."""
    if not custom_domain:
        return False
    domain = str((event.get("requestContext") or {}).get("domainName") or "").lower().rstrip(".")
    return domain == custom_domain.lower().rstrip(".")


def execute_api_host(api_id: str, region: str) -> str:
    """The API's default host name."""
    return f"{api_id}.execute-api.{region}.amazonaws.com"


def own_hosts(event: Mapping[str, Any], region: str) -> list[str]:
    """The hosts this request shows the API to have: the Host it was sent to, the domain API
    Gateway says it came in on, and the API's execute-api host (links to any are refused)."""
    context = event.get("requestContext") or {}
    # The Host with its port: on loopback (the local stack) the port tells the shortener apart from
    # other local services. API Gateway's domainName is that host without its port: not added again.
    headers = event.get("headers")
    hosts = [request_authority(headers)]
    domain = context.get("domainName")
    if domain and str(domain).lower() != request_host(headers):
        hosts.append(domain)
    if context.get("apiId"):
        hosts.append(execute_api_host(str(context["apiId"]), region))
    return [str(host) for host in hosts if host]


def stage_base_url(event: Mapping[str, Any], region: str, endpoint: str = "") -> str:
    """The URL of the API's stage on its execute-api endpoint (``endpoint`` when given, as the
    local stack gives it), ending with "/"."""
    if endpoint:
        return endpoint.rstrip("/") + "/"
    context = event.get("requestContext") or {}
    return f"https://{execute_api_host(str(context.get('apiId', '')), region)}/{context.get('stage', '')}/"


def whole_number(text: str, name: str, hint: str = "") -> int:
    """A query parameter that must be a whole number, or InvalidRequestError naming it."""
    # ASCII digits only: str.isdigit() also accepts '²', which int() refuses.
    if not (text.isascii() and text.isdigit()) or len(text) > 7:
        raise InvalidRequestError(f"{name} must be a whole number{hint}.")
    return int(text)
