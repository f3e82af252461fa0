"""Calling the API function's handler with proxy events."""

import json
from types import ModuleType
from typing import Any

from tests.support.events import api_event
from tests.support.lambda_context import FakeLambdaContext


def as_caller(event: dict[str, Any], owner_id: str, role: str = "member") -> dict[str, Any]:
    """``event`` as API Gateway passes it after the Lambda authorizer accepted a key of
    ``owner_id`` (its context values arrive as strings in ``requestContext.authorizer``)."""
    event["requestContext"]["authorizer"] = {
        "principalId": f"key-{owner_id}",
        "owner_id": owner_id,
        "role": role,
        "key_id": f"key-{owner_id}",
        "key_name": f"{owner_id}'s key",
        "integrationLatency": 7,
    }
    return event


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


def body(answer: dict[str, Any]) -> Any:
    """The JSON body of a handler's answer."""
    return json.loads(answer["body"])


def response_header(answer: dict[str, Any], name: str) -> str | None:
    """A header of a proxy response, whether it came in headers or multiValueHeaders."""
    for key, value in (answer.get("headers") or {}).items():
        if key.lower() == name.lower():
            return str(value)
    for key, values in (answer.get("multiValueHeaders") or {}).items():
        if key.lower() == name.lower() and values:
            return str(values[0])
    return None


class ApiCaller:
    """The API function's handler, called as one caller (an owner and role the authorizer vouched
    for; ``owner=None`` calls without any authorizer context, as a public route is called)."""

    def __init__(self, api: ModuleType, owner: str | None, role: str = "member") -> None:
        self.api = api
        self.owner = owner
        self.role = role

    def request(
        self,
        method: str,
        path: str,
        *,
        resource: str | None = None,
        path_parameters: dict[str, str] | None = None,
        body: Any = None,
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """One request; a dict or list body is sent as JSON."""
        all_headers = dict(headers or {})
        if isinstance(body, dict | list):
            body = json.dumps(body)
            all_headers.setdefault("Content-Type", "application/json")
        event = api_event(
            method, path, body=body, headers=all_headers, path_parameters=path_parameters, resource=resource
        )
        if query:
            event["queryStringParameters"] = query
            event["multiValueQueryStringParameters"] = {key: [value] for key, value in query.items()}
        if self.owner is not None:
            as_caller(event, self.owner, self.role)
        return call(self.api, event)

    def shorten(self, url: str, **fields: Any) -> dict[str, Any]:
        answer = self.request("POST", "/", body={"url": url, **fields})
        assert answer["statusCode"] in (200, 201), answer["body"]
        return dict(json.loads(answer["body"]))

    def follow(self, code: str, method: str = "GET", headers: dict[str, str] | None = None) -> dict[str, Any]:
        return self.request(
            method, f"/{code}", resource="/{code}", path_parameters={"code": code}, headers=headers
        )

    def link(self, method: str, code: str, body: Any = None) -> dict[str, Any]:
        """GET, PATCH or DELETE /links/{code}."""
        return self.request(
            method, f"/links/{code}", resource="/links/{code}", path_parameters={"code": code}, body=body
        )

    def list_links(self, **query: str) -> dict[str, Any]:
        return self.request("GET", "/links", query=query or None)
