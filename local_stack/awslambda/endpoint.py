"""The local Lambda endpoint: the Invoke API (so function code calls boto3 `invoke` unchanged, via
AWS_ENDPOINT_URL_LAMBDA) and the HTTP address that SNS subscriptions of functions deliver to."""

import json
import logging
import re
import socket
import sys
from http import HTTPStatus
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from local_stack.awslambda.runtime import (
    ASYNC_PAYLOAD_LIMIT_BYTES,
    SYNC_PAYLOAD_LIMIT_BYTES,
    FunctionThrottledError,
    LambdaRuntime,
)
from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.embedded.local_only import browser_refusal
from local_stack.http_reading import BoundedConnections, BoundedRequestHandler, ReadRefused
from local_stack.iam import AccessControl, Signature, invoke_call
from local_stack.ports import LISTEN_BACKLOG, adopt
from local_stack.sns import subscriptions as sns

log = logging.getLogger(__name__)

_INVOKE_PATH = re.compile(r"^/2015-03-31/functions/(?P<function>[^/]+)/invocations$")
_SNS_PATH = re.compile(r"^/sns/(?P<function>[^/]+)$")
SNS_PATH_PREFIX = "/sns/"
_READ_LIMIT_BYTES = 4 * max(SYNC_PAYLOAD_LIMIT_BYTES, ASYNC_PAYLOAD_LIMIT_BYTES)


class LambdaEndpoint(BoundedConnections, ThreadingHTTPServer):
    """Serves Lambda's Invoke API for the local runtime, on loopback; requests read within bounds
    (local_stack/http_reading.py)."""

    # Every loop, scaler and schedule invokes through here; bursts must queue, not be reset.
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        region: str,
        port: int = 0,
        access: AccessControl | None = None,
        *,
        runtime: LambdaRuntime | None = None,
        listening: socket.socket | None = None,
    ) -> None:
        # ``listening``: a socket the stack bound before (ports.listening_socket), since the
        # runtime's workers need this endpoint's URL before the runtime exists; ``port`` is unused.
        super().__init__(("127.0.0.1", port), _Handler, bind_and_activate=listening is None)
        if listening is not None:
            adopt(self, listening)
        self.runtime = runtime
        self.region = region
        # The functions' own calls to Invoke are authorised against their roles.
        self.access = access or AccessControl()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (a CLI interrupted, a test's timeout) is not the stack's error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def sns_url(self, function_name: str) -> str:
        """Where a topic delivers to ``function_name``."""
        return f"{self.url}{SNS_PATH_PREFIX}{function_name}"


class _Handler(BoundedRequestHandler):
    server: LambdaEndpoint

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        # Read whole before the payload limits below answer; far larger is refused while read.
        body = self.read_body(_READ_LIMIT_BYTES)
        # A web page may POST here without a preflight (text/plain): refused as on the embedded AWS.
        refusal = browser_refusal("POST", self.headers.get("Origin"), self.headers.get("Host", ""))
        if refusal is not None:
            self._error(HTTPStatus.FORBIDDEN, "AccessDeniedException", refusal)
            return
        if self.server.runtime is None:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, "ServiceException", "The local stack is starting")
            return
        if match := _INVOKE_PATH.match(path):
            self._invoke(unquote(match["function"]), body)
        elif match := _SNS_PATH.match(path):
            self._deliver_sns(unquote(match["function"]), body)
        else:
            self._error(HTTPStatus.NOT_FOUND, "UnknownOperationException", f"No such operation: {path}")

    def do_OPTIONS(self) -> None:
        """A browser's preflight: refused, with no CORS headers."""
        self._error(HTTPStatus.FORBIDDEN, "AccessDeniedException", browser_refusal("OPTIONS", None, "") or "")

    def _invoke(self, function: str, body: bytes) -> None:
        runtime = self.server.runtime
        assert runtime is not None
        arn = (
            function
            if function.startswith("arn:")
            else f"arn:aws:lambda:{self.server.region}:{ACCOUNT_ID}:function:{function}"
        )
        if self._refused(arn):
            return
        spec = runtime.function(function)
        if spec is None:
            self._error(HTTPStatus.NOT_FOUND, "ResourceNotFoundException", f"Function not found: {arn}")
            return
        try:
            event = json.loads(body) if body else {}
        except json.JSONDecodeError:
            self._error(HTTPStatus.BAD_REQUEST, "InvalidRequestContentException", "Could not parse payload")
            return
        invocation_type = self.headers.get("X-Amz-Invocation-Type", "RequestResponse")
        limit = ASYNC_PAYLOAD_LIMIT_BYTES if invocation_type == "Event" else SYNC_PAYLOAD_LIMIT_BYTES
        if len(body) > limit:
            message = f"Request must be smaller than {limit} bytes for the {invocation_type} invocation type"
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "RequestTooLargeException", message)
            return
        if invocation_type == "DryRun":
            self._answer(HTTPStatus.NO_CONTENT, b"")
        elif invocation_type == "Event":
            request_id = runtime.invoke_event(spec.name, event)
            self._answer(HTTPStatus.ACCEPTED, b"", {"x-amzn-RequestId": request_id})
        else:
            try:
                invocation = runtime.invoke(spec.name, event)
            except FunctionThrottledError:
                self._error(HTTPStatus.TOO_MANY_REQUESTS, "TooManyRequestsException", "Rate Exceeded.")
                return
            headers = {"x-amzn-RequestId": invocation.request_id, "X-Amz-Executed-Version": "$LATEST"}
            if invocation.error is not None:
                headers["X-Amz-Function-Error"] = "Unhandled"
            self._answer(HTTPStatus.OK, invocation.payload, headers)

    def _refused(self, function_arn: str) -> bool:
        """Answer AWS's AccessDeniedException when the calling function may not invoke this one."""
        signature = Signature.parse(self.headers.get("Authorization"))
        principal = self.server.access.principal(signature.access_key) if signature else None
        refusal = self.server.access.authorise(principal, invoke_call(function_arn)) if principal else None
        if refusal is None:
            return False
        answer = refusal.answer()
        headers = {key: value for key, value in answer.headers if key != "Content-Type"}
        self._answer(HTTPStatus(answer.status), answer.body, headers)
        return True

    def _deliver_sns(self, function: str, body: bytes) -> None:
        notification = json.loads(body)
        if notification.get("Type") != "Notification":
            self._answer(HTTPStatus.OK, b"")  # confirmations need no answer locally
            return
        assert self.server.runtime is not None
        self.server.runtime.invoke_async(function, sns.lambda_event(notification))
        self._answer(HTTPStatus.OK, b"")

    def _error(self, status: HTTPStatus, error_type: str, message: str) -> None:
        self._answer(status, *_error_body(error_type, message))

    def refusal_answer(self, refused: ReadRefused) -> tuple[int, list[tuple[str, str]], bytes]:
        body, headers = _error_body(refused.aws_type, refused.message)
        return refused.status, [("Content-Type", "application/json"), *headers.items()], body

    def _answer(self, status: HTTPStatus, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("lambda endpoint: " + format, *args)


def _error_body(error_type: str, message: str) -> tuple[bytes, dict[str, str]]:
    """Lambda's error shape: the body and the header naming the error."""
    return json.dumps({"Type": "User", "message": message}).encode(), {"x-amzn-ErrorType": error_type}
