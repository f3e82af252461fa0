"""Lambda authorizers, locally: read from the RestApi's OpenAPI body (``securityDefinitions`` with
``x-amazon-apigateway-authorizer``), run in the local Lambda runtime like any function, their
answers cached and their policies evaluated as API Gateway does.

What API Gateway does, and this module with it (AWS: "Use API Gateway Lambda authorizers", "Input
to an API Gateway Lambda authorizer", "Output from an API Gateway Lambda authorizer"):
- REQUEST authorizers get the request (headers, query string, path, stage variables, context) and
  the ``methodArn`` ``arn:aws:execute-api:<region>:<account>:<api>/<stage>/<VERB>/<path>``; TOKEN
  authorizers get ``authorizationToken`` (the identity header) and the ``methodArn``.
- Every identity source (``method.request.header.X``, ``method.request.querystring.X``,
  ``stageVariables.X``, ``context.X``) must be present and non-empty, or API Gateway answers 401
  without calling the function; a TOKEN authorizer's ``identityValidationExpression`` likewise.
- The answer is cached for ``authorizerResultTtlInSeconds`` (300 when absent, 0 = off), keyed by
  the identity sources' values, and the cached policy is evaluated against each later request's
  method ARN: a policy that names one method refuses the same key's other methods until it expires.
  ``FlushStageAuthorizersCache`` empties the cache.
- The policy: an explicit Deny wins (403 "... with an explicit deny"), no matching Allow is a 403;
  ``*`` and ``?`` are wildcards in resources and actions (``execute-api:Invoke``).
- A function error whose message is "Unauthorized" is a 401; any other error, or an answer without
  ``principalId`` and ``policyDocument`` (or a context value that is not a string, number or
  boolean), is a 500 AUTHORIZER_CONFIGURATION_ERROR with ``{"message": null}``.
- An Allow's ``context`` (plus ``principalId``) reaches the integration as
  ``requestContext.authorizer``; with ``apiKeySource`` AUTHORIZER its ``usageIdentifierKey`` is the
  API key the usage plan meters."""

import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from local_stack.apigateway.routes import security_schemes
from local_stack.awslambda.runtime import Invocation

_FUNCTION_IN_URI = re.compile(r"/functions/arn:[^/]*:function:(?P<name>[^/:]+)(:[^/]*)?/invocations")
_AUTHORIZER = "x-amazon-apigateway-authorizer"
_DEFAULT_TTL_SECONDS = 300
EXPLICIT_DENY = "User is not authorized to access this resource with an explicit deny"
NO_ALLOW = "User is not authorized to access this resource"


@dataclass(frozen=True)
class AuthorizerSpec:
    """One Lambda authorizer of the API."""

    name: str
    kind: str  # "request" or "token"
    function: str
    identity_sources: tuple[str, ...]
    ttl_seconds: int
    validation_expression: str | None = None


def authorizers_from_swagger(body: Mapping[str, Any]) -> dict[str, AuthorizerSpec]:
    """The Lambda authorizers of a (resolved) OpenAPI body, by security definition name."""
    specs = {}
    for name, definition in security_schemes(body).items():
        authorizer = definition.get(_AUTHORIZER) if isinstance(definition, dict) else None
        found = _FUNCTION_IN_URI.search(str((authorizer or {}).get("authorizerUri", "")))
        if not authorizer or not found:
            continue
        kind = str(authorizer.get("type", "token")).lower()
        sources = str(authorizer.get("identitySource") or "")
        if kind == "token" and not sources:
            sources = f"method.request.header.{definition.get('name', 'Authorization')}"
        ttl = authorizer.get("authorizerResultTtlInSeconds")
        specs[name] = AuthorizerSpec(
            name=name,
            kind=kind,
            function=found["name"],
            identity_sources=tuple(source.strip() for source in sources.split(",") if source.strip()),
            ttl_seconds=_DEFAULT_TTL_SECONDS if ttl is None else int(ttl),
            validation_expression=authorizer.get("identityValidationExpression"),
        )
    return specs


def method_arn(region: str, account: str, api_id: str, stage: str, *, method: str, path: str) -> str:
    """The ARN of the method a request calls, as API Gateway hands it to an authorizer."""
    return f"arn:aws:execute-api:{region}:{account}:{api_id}/{stage}/{method}/{path.lstrip('/')}"


def evaluate_policy(document: Mapping[str, Any], arn: str) -> str | None:
    """None when the policy allows ``execute-api:Invoke`` on ``arn``, else the 403's message."""
    allowed = False
    statements = document.get("Statement", [])
    for statement in [statements] if isinstance(statements, dict) else statements:
        actions = _as_list(statement.get("Action"))
        resources = _as_list(statement.get("Resource"))
        if not any(_wildcard(action, "execute-api:Invoke", ignore_case=True) for action in actions):
            continue
        if not any(_wildcard(resource, arn) for resource in resources):
            continue
        if str(statement.get("Effect", "")).lower() == "deny":
            return EXPLICIT_DENY
        allowed = allowed or str(statement.get("Effect", "")).lower() == "allow"
    return None if allowed else NO_ALLOW


@dataclass(frozen=True)
class Refusal:
    """API Gateway answers itself: a gateway response type and its message."""

    response_type: str
    message: str | None = None
    # The authorizer's context, which API Gateway's own answer may read (an ACCESS_DENIED's too).
    context: dict[str, str] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Grant:
    """An allowed request: what the integration sees as ``requestContext.authorizer``, and the
    usage identifier the authorizer handed over (if any)."""

    context: dict[str, Any]
    usage_identifier: str | None


@dataclass
class AuthorizerCache:
    """Authorizer answers by (authorizer, identity values), each until its TTL passes."""

    clock: Callable[[], float] = time.monotonic
    _entries: dict[tuple[str, tuple[str, ...]], tuple[float, dict[str, Any]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: tuple[str, tuple[str, ...]]) -> dict[str, Any] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= self.clock():
                del self._entries[key]
                return None
            return entry[1]

    def put(self, key: tuple[str, tuple[str, ...]], answer: dict[str, Any], ttl_seconds: float) -> None:
        with self._lock:
            self._entries[key] = (self.clock() + ttl_seconds, answer)

    def flush(self) -> None:
        """FlushStageAuthorizersCache: forget every answer."""
        with self._lock:
            self._entries.clear()


Invoke = Callable[[str, dict[str, Any]], Invocation]


class Authorizers:
    """The API's Lambda authorizers, their cache, and their verdicts on requests."""

    def __init__(
        self,
        specs: Mapping[str, AuthorizerSpec],
        invoke: Invoke,
        cache: AuthorizerCache | None = None,
    ) -> None:
        self.specs = dict(specs)
        self._invoke = invoke
        self.cache = cache or AuthorizerCache()

    def authorize(self, name: str, event: dict[str, Any], arn: str) -> Grant | Refusal:
        """The verdict of authorizer ``name`` on the request whose proxy event is ``event``."""
        spec = self.specs[name]
        identity = tuple(_identity_value(source, event) or "" for source in spec.identity_sources)
        if not all(identity):
            return Refusal("UNAUTHORIZED")
        expression = spec.validation_expression if spec.kind == "token" else None
        if expression and not re.fullmatch(expression, identity[0]):
            return Refusal("UNAUTHORIZED")
        key = (name, identity)
        answer = self.cache.get(key) if spec.ttl_seconds > 0 and identity else None
        if answer is None:
            outcome = self._call(spec, event, arn, identity)
            if isinstance(outcome, Refusal):
                return outcome
            answer = outcome
            if spec.ttl_seconds > 0 and identity:
                self.cache.put(key, answer, spec.ttl_seconds)
        context = {key: _context_text(value) for key, value in (answer.get("context") or {}).items()}
        refused = evaluate_policy(answer["policyDocument"], arn)
        if refused is not None:
            # A Deny's context reaches the gateway response ($context.authorizer.<key>).
            return Refusal("ACCESS_DENIED", refused, {**context, "principalId": str(answer["principalId"])})
        usage = answer.get("usageIdentifierKey")
        return Grant({**context, "principalId": str(answer["principalId"])}, str(usage) if usage else None)

    def _call(
        self, spec: AuthorizerSpec, event: dict[str, Any], arn: str, identity: tuple[str, ...]
    ) -> dict[str, Any] | Refusal:
        if spec.kind == "token":
            request: dict[str, Any] = {"type": "TOKEN", "authorizationToken": identity[0], "methodArn": arn}
        else:
            request = {key: value for key, value in event.items() if key not in ("body", "isBase64Encoded")}
            request = {"type": "REQUEST", "methodArn": arn, **request}
        invocation = self._invoke(spec.function, request)
        if invocation.error is not None:
            if invocation.error.get("errorMessage") == "Unauthorized":
                return Refusal("UNAUTHORIZED")
            return Refusal("AUTHORIZER_CONFIGURATION_ERROR")
        answer = invocation.result
        if not _valid_answer(answer):
            return Refusal("AUTHORIZER_CONFIGURATION_ERROR")
        return dict(answer)


def _valid_answer(answer: Any) -> bool:
    if not isinstance(answer, dict) or "principalId" not in answer:
        return False
    document = answer.get("policyDocument")
    if not isinstance(document, dict) or not isinstance(document.get("Statement"), list | dict):
        return False
    context = answer.get("context") or {}
    return isinstance(context, dict) and all(
        isinstance(value, str | int | float | bool) for value in context.values()
    )


def _identity_value(source: str, event: Mapping[str, Any]) -> str | None:
    """The value an identity source names in a proxy event (header names case-insensitive)."""
    if source.startswith("method.request.header."):
        wanted = source.removeprefix("method.request.header.").lower()
        headers = event.get("headers") or {}
        return next((str(value) for key, value in headers.items() if key.lower() == wanted), None)
    if source.startswith("method.request.querystring."):
        return (event.get("queryStringParameters") or {}).get(
            source.removeprefix("method.request.querystring.")
        )
    if source.startswith("stageVariables."):
        return (event.get("stageVariables") or {}).get(source.removeprefix("stageVariables."))
    if source.startswith("context."):
        value: Any = event.get("requestContext") or {}
        for part in source.removeprefix("context.").split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return None if value is None else str(value)
    return None


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]


def _wildcard(pattern: str, value: str, ignore_case: bool = False) -> bool:
    """IAM-style matching: ``*`` any run of characters (``/`` included), ``?`` one character."""
    expression = "".join(".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern)
    return (
        re.fullmatch(expression, value, re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL) is not None
    )


def _context_text(value: Any) -> Any:
    # API Gateway hands context values to a REST proxy integration as strings.
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
