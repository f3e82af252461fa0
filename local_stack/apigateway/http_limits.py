"""What the local API gateway answers before any route is looked at: requests that API Gateway's
front door refuses at the HTTP level. Each is a 4xx in the project's error shape
(``{"error": <word>, "message": <sentence>}``), answered at once and followed by closing the
connection: never a hang, a close without an answer, a 501 or an HTML page (what Python's
``http.server`` gives by itself).

- An unknown method (TRACE, CONNECT, a lowercase ``get``, anything invented): 405. A REST API
  answers only the methods it has (GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS; methods are
  case-sensitive, RFC 9110 section 9.1).
- A ``Content-Length`` that is not one non-negative decimal number (``-1``, ``abc``, two different
  values): 400 (RFC 9112 section 6.3: the message framing is invalid).
- A body over 10 MB: 413. API Gateway's payload quota is 10 MB ("Amazon API Gateway quotas",
  https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html); the body is not read
  into memory, only drained (up to a bound) so the client reads the answer.
- A request not sent whole within 10 s: 408; a body framed in a way HTTP/1.1 forbids or that is
  not supported (a transfer coding other than ``chunked``, or together with Content-Length): 400.
  These three are found while the body is read, the same way on every listener of the local stack
  (local_stack/http_reading.py); a chunked body is read, as API Gateway reads it.
- A request line over 64 KiB (a 100 KB path): 414; more than 100 headers, or one over 64 KiB: 431
  (``http.server``'s limits; API Gateway's own are smaller, and it answers them with 4xx too).
"""

import json
from http import HTTPStatus

GatewayAnswer = tuple[int, list[tuple[str, str]], bytes]

PAYLOAD_LIMIT_BYTES = 10 * 1024 * 1024
ALLOWED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


def error_answer(status: int, error: str, message: str) -> GatewayAnswer:
    """A gateway answer in the project's error shape; the connection is closed after it."""
    body = json.dumps({"error": error, "message": message}).encode()
    # nosniff, as on the function's answers and the template's gateway responses.
    headers = [("Content-Type", "application/json"), ("X-Content-Type-Options", "nosniff")]
    return status, [*headers, ("Connection", "close")], body


def protocol_error(code: int, method: str = "") -> GatewayAnswer:
    """The answer for an error ``http.server`` found while reading the request (its send_error
    code): the same status in the project's shape, but 405 for an unknown method (its 501) and
    400 for an unsupported HTTP version (its 505)."""
    if code == HTTPStatus.NOT_IMPLEMENTED:
        shown = method[:64] or "(none)"
        return error_answer(
            HTTPStatus.METHOD_NOT_ALLOWED,
            "method_not_allowed",
            f"The method {shown!r} is not supported: use one of {', '.join(ALLOWED_METHODS)} "
            "(methods are case-sensitive).",
        )
    if code == HTTPStatus.REQUEST_URI_TOO_LONG:
        return error_answer(
            code, "uri_too_long", "The request line is too long: send a shorter path and query string."
        )
    if code == HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE:
        return error_answer(
            code, "headers_too_large", "The request has too many headers, or a header that is too long."
        )
    status = code if 400 <= code < 500 else HTTPStatus.BAD_REQUEST
    return error_answer(status, "bad_request", "The request is not valid HTTP/1.1.")
