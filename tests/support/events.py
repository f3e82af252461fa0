"""API Gateway proxy events of the shape `sam local generate-event apigateway aws-proxy` prints."""

import base64
import copy
import json
from pathlib import Path
from typing import Any

_EVENT = json.loads((Path(__file__).parent / "apigateway_aws_proxy.json").read_text())


def api_event(
    method: str,
    path: str,
    *,
    body: str | bytes | None = None,
    headers: dict[str, str] | None = None,
    path_parameters: dict[str, str] | None = None,
    resource: str | None = None,
) -> dict[str, Any]:
    """A REST API proxy event for ``method path``; bytes bodies are sent base64-encoded."""
    event = copy.deepcopy(_EVENT)
    event["httpMethod"] = method
    event["path"] = path
    event["resource"] = resource or path
    event["requestContext"]["httpMethod"] = method
    event["requestContext"]["path"] = f"/prod{path}"
    event["requestContext"]["resourcePath"] = resource or path
    event["headers"] = {"Host": "sho.rt", "X-Forwarded-Proto": "https", **(headers or {})}
    event["multiValueHeaders"] = {key: [value] for key, value in event["headers"].items()}
    event["queryStringParameters"] = None
    event["multiValueQueryStringParameters"] = None
    event["pathParameters"] = path_parameters
    event["stageVariables"] = None
    if isinstance(body, bytes):
        event["body"] = base64.b64encode(body).decode()
        event["isBase64Encoded"] = True
    else:
        event["body"] = body
        event["isBase64Encoded"] = False
    return event
