"""The API function's handler called in process, with the proxy events the local stack's API Gateway
makes (local_stack.apigateway.proxy_event), for benchmarks that count what one request costs."""

import json
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from local_stack.apigateway import HttpRequest, Route, proxy_event


@dataclass
class LambdaContext:
    """The fields of Lambda's context object that Powertools reads."""

    function_name: str = "api"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:api"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def event_of(
    method: str,
    path: str,
    resource: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    path_parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The proxy event of ``method path`` (a route of ``resource``), as API Gateway sends it."""
    sent = [("Host", "sho.rt"), *(headers or {}).items()]
    request = HttpRequest(method, path, sent, body, "127.0.0.1", 443)
    return proxy_event(request, Route(resource, method, "api"), path_parameters or {}, [], "bench")


def answer(api: ModuleType, event: dict[str, Any]) -> dict[str, Any]:
    """The handler's answer to ``event``."""
    return dict(api.lambda_handler(event, LambdaContext()))


def post_json(api: ModuleType, payload: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps(payload).encode()
    return answer(api, event_of("POST", "/", "/", body, {"Content-Type": "application/json"}))


def get_code_event(code: str) -> dict[str, Any]:
    return event_of("GET", f"/{code}", "/{code}", path_parameters={"code": code})


def get_code(api: ModuleType, code: str) -> dict[str, Any]:
    return answer(api, get_code_event(code))
