"""API Gateway, locally: the REST API served on loopback and what stands before its integrations.

- ``routes``: the route table read from the RestApi's OpenAPI body, and the request as it arrived.
- ``gateway``: the HTTP server, proxy events to the integrated functions and their answers back.
- ``access``: WAF, Lambda authorizers, API keys and usage plans, gateway responses, in API
  Gateway's order (``authorizers``, ``usage_plans``, ``waf``, ``gateway_responses``).
- ``cache``: the stage cache; ``admin_key``: the local stack's own admin API key."""

from local_stack.apigateway.access import ApiAccess
from local_stack.apigateway.admin_key import ADMIN_KEY_FILE
from local_stack.apigateway.cache import MayInvalidate, StageCache, invalidation_check, stage_cache
from local_stack.apigateway.gateway import ApiGateway, proxy_event
from local_stack.apigateway.routes import STAGE, HttpRequest, Route, binary_media_types, routes_from_swagger
from local_stack.apigateway.usage_plans import KeyDirectory

__all__ = [
    "ADMIN_KEY_FILE",
    "STAGE",
    "ApiAccess",
    "ApiGateway",
    "HttpRequest",
    "KeyDirectory",
    "MayInvalidate",
    "Route",
    "StageCache",
    "binary_media_types",
    "invalidation_check",
    "proxy_event",
    "routes_from_swagger",
    "stage_cache",
]
