"""API Gateway's own answers (gateway responses), with the template's customisations.

API Gateway answers some requests itself: no route, no identity source, an authorizer's Deny, a
usage plan's throttle, ... Each such answer has a type, a default status and the default body
``{"message":$context.error.messageString}``; an API changes them with gateway responses, from the
OpenAPI body's ``x-amazon-apigateway-gateway-responses`` (what SAM's ``GatewayResponses`` writes) or
``AWS::ApiGateway::GatewayResponse`` resources. A type without its own falls back to DEFAULT_4XX or
DEFAULT_5XX, whose status code, when set, applies to every response of its class.
(AWS: "Gateway response types for API Gateway"; "Set up gateway responses to customize error
responses".)

Templates support the ``$context`` variables a static error body needs: ``error.message``,
``error.messageString`` (JSON-quoted), ``error.responseType``, ``requestId`` and
``authorizer.<key>``; header values are static (``'value'``) or ``method.request.header.<name>``."""

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

GatewayAnswer = tuple[int, list[tuple[str, str]], bytes]


@dataclass(frozen=True)
class _Default:
    status: int
    message: str | None
    error_type: str


# The types the local stack produces, with API Gateway's default status, message and the
# x-amzn-ErrorType header it sends.
DEFAULTS: dict[str, _Default] = {
    "ACCESS_DENIED": _Default(403, "User is not authorized to access this resource", "AccessDeniedException"),
    "UNAUTHORIZED": _Default(401, "Unauthorized", "UnauthorizedException"),
    "AUTHORIZER_CONFIGURATION_ERROR": _Default(500, None, "AuthorizerConfigurationException"),
    "AUTHORIZER_FAILURE": _Default(500, None, "AuthorizerFailureException"),
    "INVALID_API_KEY": _Default(403, "Forbidden", "ForbiddenException"),
    "MISSING_AUTHENTICATION_TOKEN": _Default(
        403, "Missing Authentication Token", "MissingAuthenticationTokenException"
    ),
    "QUOTA_EXCEEDED": _Default(429, "Limit Exceeded", "LimitExceededException"),
    "THROTTLED": _Default(429, "Too Many Requests", "TooManyRequestsException"),
    "WAF_FILTERED": _Default(403, "Forbidden", "ForbiddenException"),
}
_DEFAULT_TEMPLATE = '{"message":$context.error.messageString}'
_VARIABLE = re.compile(r"\$context\.([A-Za-z0-9_.]+)|\$\{context\.([A-Za-z0-9_.]+)\}")


@dataclass(frozen=True)
class GatewayResponse:
    """One customisation: status code, body templates by content type, header mappings."""

    status_code: int | None = None
    templates: Mapping[str, str] | None = None
    headers: Mapping[str, str] | None = None

    @classmethod
    def from_swagger(cls, spec: Mapping[str, Any]) -> "GatewayResponse":
        """From an ``x-amazon-apigateway-gateway-responses`` entry."""
        parameters = spec.get("responseParameters") or {}
        return cls(
            int(spec["statusCode"]) if spec.get("statusCode") else None,
            dict(spec.get("responseTemplates") or {}) or None,
            {
                name.removeprefix("gatewayresponse.header."): str(value)
                for name, value in parameters.items()
                if name.startswith("gatewayresponse.header.")
            }
            or None,
        )

    @classmethod
    def from_resource(cls, properties: Mapping[str, Any]) -> "GatewayResponse":
        """From an ``AWS::ApiGateway::GatewayResponse`` resource's properties."""
        return cls.from_swagger(
            {
                "statusCode": properties.get("StatusCode"),
                "responseTemplates": properties.get("ResponseTemplates"),
                "responseParameters": properties.get("ResponseParameters"),
            }
        )


class GatewayResponses:
    """Renders API Gateway's own answers for one REST API."""

    def __init__(self, custom: Mapping[str, GatewayResponse] | None = None) -> None:
        self._custom = dict(custom or {})

    @classmethod
    def of_api(
        cls, body: Mapping[str, Any], resources: Iterable[Mapping[str, Any]] = ()
    ) -> "GatewayResponses":
        """The customisations in a RestApi's OpenAPI body and its GatewayResponse resources (those
        win, as a later PutGatewayResponse would)."""
        custom = {
            kind: GatewayResponse.from_swagger(spec)
            for kind, spec in (body.get("x-amazon-apigateway-gateway-responses") or {}).items()
        }
        for properties in resources:
            custom[str(properties["ResponseType"])] = GatewayResponse.from_resource(properties)
        return cls(custom)

    def render(
        self,
        kind: str,
        message: str | None = None,
        *,
        request_id: str = "",
        request_headers: Mapping[str, str] | None = None,
        authorizer: Mapping[str, Any] | None = None,
    ) -> GatewayAnswer:
        """(status, headers, body) of the gateway response ``kind``; ``message`` replaces the
        type's default message (API Gateway's own wording for the case at hand)."""
        default = DEFAULTS.get(kind, _Default(500, "Internal server error", "InternalServerErrorException"))
        fallback = self._custom.get("DEFAULT_4XX" if default.status < 500 else "DEFAULT_5XX")
        own = self._custom.get(kind)
        status = (
            (own.status_code if own else None)
            or (fallback.status_code if fallback else None)
            or default.status
        )
        templates = (own.templates if own else None) or (fallback.templates if fallback else None)
        content_type, template = _pick(templates)
        variables = {
            "error.message": message if message is not None else default.message,
            "error.responseType": kind,
            "requestId": request_id,
            **{f"authorizer.{key}": value for key, value in (authorizer or {}).items()},
        }
        headers = [("Content-Type", content_type), ("x-amzn-ErrorType", default.error_type)]
        mappings = {
            **((fallback.headers if fallback else None) or {}),
            **((own.headers if own else None) or {}),
        }
        for name, source in mappings.items():
            value = _header_value(source, request_headers or {})
            if value is not None:
                headers.append((name, value))
        return status, headers, _substitute(template, variables).encode()


def _pick(templates: Mapping[str, str] | None) -> tuple[str, str]:
    if not templates:
        return "application/json", _DEFAULT_TEMPLATE
    if "application/json" in templates:
        return "application/json", templates["application/json"]
    content_type = next(iter(templates))
    return content_type, templates[content_type]


def _substitute(template: str, variables: Mapping[str, Any]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name == "error.messageString":
            return json.dumps(variables.get("error.message"))
        found = variables.get(name)
        return "" if found is None else str(found)

    return _VARIABLE.sub(value, template)


def _header_value(source: str, request_headers: Mapping[str, str]) -> str | None:
    if len(source) >= 2 and source[0] == source[-1] == "'":
        return source[1:-1]
    if source.lower().startswith("method.request.header."):
        wanted = source.split(".", 3)[3].lower()
        return next((value for key, value in request_headers.items() if key.lower() == wanted), None)
    return None
