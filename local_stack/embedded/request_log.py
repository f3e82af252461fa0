"""Reading what the embedded AWS was asked: moto's request recorder (``/moto-api/recorder/...``,
written to MOTO_RECORDER_FILEPATH) turned into one entry per AWS request, with its service, its
operation, and whether a function made it (boto3 in Lambda names its execution environment in the
User-Agent) or the local stack itself (its emulation of CloudWatch alarms, resource creation)."""

import base64
import json
import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from local_stack.embedded.client import EVENT_SOURCE_USER_AGENT

_SCOPE = re.compile(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/")
_SERVICE_NAMES = {"monitoring": "cloudwatch"}


@dataclass(frozen=True)
class RecordedRequest:
    """One AWS request as the embedded AWS received it."""

    service: str  # dynamodb, sqs, s3, cloudwatch, sns, ...
    operation: str  # PutItem, SendMessageBatch, GetObject, ...
    by_function: bool
    body: bytes
    # An event source mapping's request (a queue's poll, a batch's deletion), made by the stack.
    by_event_source: bool = False

    @property
    def name(self) -> str:
        return f"{self.service}.{self.operation}"


def recorder(aws_endpoint: str, action: str) -> None:
    """Drive moto's recorder: reset-recording, start-recording or stop-recording."""
    url = f"{aws_endpoint}/moto-api/recorder/{action}"
    request = urllib.request.Request(url, method="POST", data=b"")  # noqa: S310 - the local endpoint
    with urllib.request.urlopen(request, timeout=30):  # noqa: S310
        pass


def read_recording(path: Path) -> list[RecordedRequest]:
    """Every request in a recording file."""
    if not path.is_file():
        return []
    return [parse(json.loads(line)) for line in path.read_text(errors="replace").splitlines() if line.strip()]


def parse(entry: dict[str, Any]) -> RecordedRequest:
    headers = {key.lower(): str(value) for key, value in entry.get("headers", {}).items()}
    raw = entry.get("body") or ""
    body = base64.b64decode(raw) if entry.get("body_encoded") else str(raw).encode()
    url = str(entry.get("url", ""))
    by_function = "exec-env/AWS_Lambda" in headers.get("user-agent", "")
    by_event_source = EVENT_SOURCE_USER_AGENT in headers.get("user-agent", "")
    scope = _SCOPE.search(headers.get("authorization", "")) or _SCOPE.search(
        "Credential=" + "".join(parse_qs(urlsplit(url).query).get("X-Amz-Credential", [""]))
    )
    service = _SERVICE_NAMES.get(scope[1], scope[1]) if scope else "s3"
    if "x-amz-target" in headers:
        operation = headers["x-amz-target"].rsplit(".", 1)[-1]
    elif service == "s3":
        operation = _s3_operation(str(entry.get("method", "")), url)
    else:
        # Query-protocol services (CloudWatch, SNS) name the action in the form body.
        action = parse_qs(body.decode(errors="replace")).get("Action", ["?"])
        operation = action[0]
    return RecordedRequest(
        service=service,
        operation=operation,
        by_function=by_function,
        body=body,
        by_event_source=by_event_source,
    )


def _s3_operation(method: str, url: str) -> str:
    query = parse_qs(urlsplit(url).query, keep_blank_values=True)
    if method == "PUT":
        return "UploadPart" if "partNumber" in query else "PutObject"
    if method == "POST":
        return "CreateMultipartUpload" if "uploads" in query else "CompleteMultipartUpload"
    if method == "DELETE":
        return "AbortMultipartUpload" if "uploadId" in query else "DeleteObject"
    if method == "GET" and "/" not in urlsplit(url).path.strip("/"):
        return "ListObjectsV2" if query.get("list-type") == ["2"] else "ListObjects"
    return {"GET": "GetObject", "HEAD": "HeadObject"}.get(method, method)
