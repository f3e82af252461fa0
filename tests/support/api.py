"""Calling the API function's handler with proxy events."""

import json
from types import ModuleType
from typing import Any

from tests.support.events import api_event
from tests.support.lambda_context import FakeLambdaContext


def call(api: ModuleType, event: dict[str, Any]) -> dict[str, Any]:
    return api.lambda_handler(event, FakeLambdaContext(function_name="api"))


def post_json(api: ModuleType, payload: dict[str, Any]) -> dict[str, Any]:
    return call(
        api, api_event("POST", "/", body=json.dumps(payload), headers={"Content-Type": "application/json"})
    )


def get_code(api: ModuleType, code: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    return call(
        api, api_event("GET", f"/{code}", resource="/{code}", path_parameters={"code": code}, headers=headers)
    )


def response_header(answer: dict[str, Any], name: str) -> str | None:
    """A header of a proxy response, whether it came in headers or multiValueHeaders."""
    for key, value in (answer.get("headers") or {}).items():
        if key.lower() == name.lower():
            return str(value)
    for key, values in (answer.get("multiValueHeaders") or {}).items():
        if key.lower() == name.lower() and values:
            return str(values[0])
    return None
