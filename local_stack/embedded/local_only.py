"""The embedded AWS answers the tools of this machine (boto3, the AWS CLI, the functions), never a
web page that happens to be open in the developer's browser.

moto's server is built for the opposite: it answers CORS preflights and adds Access-Control-* headers
to every answer (flask-cors), and it serves an admin API under /moto-api/ (a dashboard, every
backend's data as JSON, reset, the request recorder). Listening on 127.0.0.1 is no protection on its
own: a page from anywhere can make the browser send requests to loopback. So, in front of moto:

- a request with an ``Origin`` header is refused: browsers send one with every cross-origin request
  (and every preflight), SDKs and the CLI never do;
- ``OPTIONS`` is refused: no AWS API this stack emulates uses it except to answer browsers;
- a ``Host`` that is not a loopback name is refused, so a page whose domain was made to resolve to
  127.0.0.1 (DNS rebinding) is not served as if it were the machine's own tool;
- moto's admin paths are refused unless the stack was started with ``--moto-api`` (the bulk
  benchmark uses moto's request recorder);
- Access-Control-* headers are removed from every answer, should anything still add one.

The one exception is a presigned S3 URL that one of the stack's functions signed: the page uploads
files and downloads results with one, as on AWS, where the signature is the authorisation and the
bucket's CORS rules answer the browser. Such a request (and its preflight) passes with its CORS
headers, but only when (``PresignedExemption``): its signature is valid and made with the key of
one of the stack's function principals (a query that merely names ``X-Amz-Signature`` is not
enough), it is a GET, PUT or HEAD (a preflight asking for one of them), and it is for an object
under ``uploads/``, ``results/`` (a job's) or ``query-results/`` (a click export's, written by
Athena) of one of the stack's buckets; never a moto admin path.
"""

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

from local_stack.s3.buckets import presigned_url_problem

ADMIN_PATH_PREFIX = "/moto-api"
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


_PRESIGNED_METHODS = frozenset({"GET", "PUT", "HEAD"})
_PRESIGNED_PREFIXES = ("uploads/", "results/", "query-results/")


@dataclass
class PresignedExemption:
    """Which presigned requests a browser may send: signed with one of ``signers`` (access key ->
    secret: the stack's function principals), for ``uploads/`` or ``results/`` objects of one of
    ``buckets``. Both are filled by the stack once it has read the template."""

    signers: dict[str, str] = field(default_factory=dict)
    buckets: set[str] = field(default_factory=set)

    def allows(self, environ: dict[str, Any]) -> bool:
        if _host_name(environ.get("HTTP_HOST", "")) not in _LOOPBACK_HOSTS:
            return False
        method = environ.get("REQUEST_METHOD", "")
        if method == "OPTIONS":
            method = environ.get("HTTP_ACCESS_CONTROL_REQUEST_METHOD", "").upper()
            preflight = True
        else:
            preflight = False
        if method not in _PRESIGNED_METHODS or not self._is_job_file(environ.get("PATH_INFO", "")):
            return False
        params = parse_qs(environ.get("QUERY_STRING", ""))
        credential = (params.get("X-Amz-Credential") or [""])[0]
        access_key = credential.split("/", 1)[0]
        if access_key not in self.signers or "X-Amz-Signature" not in params:
            return False
        # A preflight carries no signature of its own (the browser sends it before the request).
        return preflight or presigned_url_problem(environ, {access_key: self.signers[access_key]}) is None

    def _is_job_file(self, path: str) -> bool:
        bucket, _, key = unquote(path).lstrip("/").partition("/")
        return bucket in self.buckets and key.startswith(_PRESIGNED_PREFIXES) and ".." not in key


class LocalToolsOnly:
    """WSGI middleware: refuses what only a browser would send, and moto's admin paths."""

    def __init__(
        self,
        app: Callable[..., Iterable[bytes]],
        admin_api: bool = False,
        presigned: PresignedExemption | None = None,
    ) -> None:
        self._app = app
        self._admin_api = admin_api
        self._presigned = presigned or PresignedExemption()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if _is_presigned(environ) and self._presigned.allows(environ):
            return self._app(environ, start_response)
        refusal = self._refusal(environ)
        if refusal is not None:
            body = json.dumps({"__type": "AccessDeniedException", "message": refusal}).encode()
            start_response(
                "403 Forbidden",
                [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
            )
            return [body]

        def without_cors(status: str, headers: list[tuple[str, str]], *args: Any) -> Any:
            kept = [(key, value) for key, value in headers if not key.lower().startswith("access-control-")]
            return start_response(status, kept, *args)

        return self._app(environ, without_cors)

    def _refusal(self, environ: dict[str, Any]) -> str | None:
        refusal = browser_refusal(
            environ.get("REQUEST_METHOD", ""), environ.get("HTTP_ORIGIN"), environ.get("HTTP_HOST", "")
        )
        if refusal is not None:
            return refusal
        if environ.get("PATH_INFO", "").startswith(ADMIN_PATH_PREFIX) and not self._admin_api:
            return "moto's admin API is off (start the local stack with --moto-api to use it)."
        return None


def browser_refusal(method: str, origin: str | None, host: str) -> str | None:
    """Why a request is one only a web page would send (an Origin, a preflight, a Host that is not
    a loopback name), or None. The local stack's other endpoints (the Lambda endpoint) use it too."""
    if origin is not None or method == "OPTIONS":
        return "The local stack's AWS answers tools on this machine, not web pages (no CORS)."
    if _host_name(host) not in _LOOPBACK_HOSTS:
        return f"The local stack's AWS answers loopback names only, not Host {host!r}."
    return None


def _is_presigned(environ: dict[str, Any]) -> bool:
    query = environ.get("QUERY_STRING", "")
    return "X-Amz-Signature=" in query and "X-Amz-Credential=" in query


def _host_name(host: str) -> str:
    """The name of a Host header, without its port ("[::1]:3001" -> "[::1]")."""
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
