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


def http_api_event(event: dict[str, Any], api_id: str = "edgeorigin") -> dict[str, Any]:
    """``event`` (a REST proxy event) as an HTTP API sends it with payload format 1.0: the same
    fields, "version": "1.0", the $default stage and lower-case header names ("Create AWS Lambda
    proxy integrations for HTTP APIs",
    https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html)."""
    event = copy.deepcopy(event)
    event["version"] = "1.0"
    event["headers"] = {key.lower(): value for key, value in event["headers"].items()}
    event["multiValueHeaders"] = {key: [value] for key, value in event["headers"].items()}
    context = event["requestContext"]
    context.update(
        stage="$default",
        path=event["path"],
        apiId=api_id,
        resourceId=None,
        domainName=f"{api_id}.execute-api.us-east-1.amazonaws.com",
        domainPrefix=api_id,
    )
    return event
