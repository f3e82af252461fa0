"""Enforcement: every request signed with a function's key is authorised against that function's
policies before the embedded AWS (or the Lambda endpoint) sees it; other keys (the developer's
tools, tests, the local stack's own clients) pass unrestricted, like an administrator's."""

import io
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from local_stack.iam.calls import (
    JSON,
    QUERY,
    Access,
    Answer,
    Call,
    UnmappedService,
    UnreadableCall,
    denial_answer,
    denial_message,
    parse_call,
    unmapped_message,
)
from local_stack.iam.policy import Decision, Request, evaluate
from local_stack.iam.principals import Principal

log = logging.getLogger(__name__)

# Credential=<key>/<date>/<region>/<service>/aws4_request
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/]+/([^/]+)/([^/]+)/")
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@dataclass(frozen=True)
class Refusal:
    """A refused call: whom, what, and AWS's answer."""

    principal: Principal
    call: Call
    access: Access
    decision: Decision
    message: str

    def answer(self) -> Answer:
        return denial_answer(self.call, self.message)


@dataclass(frozen=True)
class Signature:
    """What a SigV4 Authorization header says: the key, and the scope's region and service."""

    access_key: str
    region: str
    service: str

    @classmethod
    def parse(cls, authorization: str | None) -> "Signature | None":
        match = _CREDENTIAL.search(authorization or "")
        return cls(match.group(1), match.group(2), match.group(3)) if match else None

    @classmethod
    def presigned(cls, query: str) -> "Signature | None":
        """The signer of a presigned URL (X-Amz-Credential=<key>/<date>/<region>/<service>/...),
        whose permissions the request carries."""
        params = parse_qs(query)
        credential = (params.get("X-Amz-Credential") or [""])[0].split("/")
        if len(credential) == 5:
            return cls(credential[0], credential[2], credential[3])
        # S3's older query signature (SigV2) names only the key.
        legacy = params.get("AWSAccessKeyId")
        return cls(legacy[0], "", "s3") if legacy and "Signature" in params else None


class AccessControl:
    """The functions' principals and the decisions on their calls. Empty (nothing restricted)
    until ``load``: the embedded AWS starts before the template is read."""

    def __init__(self) -> None:
        self._principals: dict[str, Principal] = {}
        self._decisions: dict[tuple[Any, ...], Decision] = {}
        self._used: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()

    @property
    def enforcing(self) -> bool:
        return bool(self._principals)

    def load(self, principals: Mapping[str, Principal]) -> None:
        """Restrict the calls signed with these access keys from now on."""
        self._principals = dict(principals)
        self._decisions.clear()

    def principal_keys(self) -> list[str]:
        """The access keys of the stack's function principals."""
        return list(self._principals)

    def principal(self, access_key: str) -> Principal | None:
        """The function whose key this is, or None (an unrestricted caller)."""
        return self._principals.get(access_key)

    def authorise(self, principal: Principal, call: Call) -> Refusal | None:
        """None when every access of ``call`` is allowed; else the first refusal."""
        for access in call.accesses:
            decision = self._decide(principal, access, call.region)
            if decision is not Decision.ALLOW:
                message = denial_message(
                    principal.arn, call.service, access, explicit=decision is Decision.EXPLICIT_DENY
                )
                log.warning(
                    "IAM refused %s: %s on %s (%s)",
                    principal.function_name,
                    access.action,
                    access.resource,
                    decision.value,
                )
                return Refusal(principal, call, access, decision, message)
        return None

    def refuse_unmapped(self, principal: Principal, service: str, protocol: str) -> Refusal:
        """The refusal of a call to a service that no mapping covers (refused, not waved through),
        in the request's protocol (JSON, or the XML error that query and REST-XML clients read)."""
        log.warning(
            "IAM refused %s: a %s call, which the local stack cannot authorise",
            principal.function_name,
            service,
        )
        access = Access(f"{service}:*", "*")
        call = Call(service, "", protocol, (access,))
        message = unmapped_message(principal.arn, service)
        return Refusal(principal, call, access, Decision.IMPLICIT_DENY, message)

    def used_permissions(self) -> list[tuple[str, str, str]]:
        """(function, action, resource) of every allowed access so far: what the code needed."""
        with self._lock:
            return sorted(self._used)

    def _decide(self, principal: Principal, access: Access, region: str) -> Decision:
        key = (principal.function_name, access.action.lower(), access.resource, access.context, region)
        decision = self._decisions.get(key)
        if decision is None:
            context = principal.context(region)
            for name, value in access.context:
                context.setdefault(name, []).append(value)
            request = Request(access.action, access.resource, principal.caller, context)
            decision = evaluate(principal.policies, request)
            self._decisions[key] = decision
            if decision is Decision.ALLOW:
                with self._lock:
                    self._used.add((principal.function_name, access.action, access.resource))
        return decision

    def middleware(self, app: WsgiApp) -> WsgiApp:
        """``app`` (the embedded AWS) behind this access control."""
        return _Guard(app, self)


class _Guard:
    """WSGI middleware: reads a function's request, answers AWS's refusal or passes it on."""

    def __init__(self, app: WsgiApp, access: AccessControl) -> None:
        self._app = app
        self._access = access

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        signature = Signature.parse(environ.get("HTTP_AUTHORIZATION")) or Signature.presigned(
            environ.get("QUERY_STRING", "")
        )
        principal = self._access.principal(signature.access_key) if signature else None
        if signature is None or principal is None:
            return self._app(environ, start_response)
        # S3 is told by method, path and query: an uploaded file is not read here.
        body = b"" if signature.service == "s3" else _read_body(environ)
        headers = {
            key[5:].replace("_", "-").lower(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        try:
            call = parse_call(
                signature.service,
                headers,
                body,
                query=environ.get("QUERY_STRING", ""),
                path=environ.get("PATH_INFO", "/"),
                method=environ.get("REQUEST_METHOD", "POST"),
                region=signature.region,
                account=principal.account,
            )
        except UnreadableCall:
            # The service answers a malformed request with its own error, as AWS would.
            return self._app(environ, start_response)
        except UnmappedService:
            protocol = JSON if "x-amz-target" in headers else QUERY
            refusal: Refusal | None = self._access.refuse_unmapped(principal, signature.service, protocol)
        else:
            refusal = self._access.authorise(principal, call)
        if refusal is None:
            return self._app(environ, start_response)
        answer = refusal.answer()
        status = HTTPStatus(answer.status)
        start_response(
            f"{status.value} {status.phrase}",
            [*answer.headers, ("Content-Length", str(len(answer.body)))],
        )
        return [answer.body]


def _read_body(environ: dict[str, Any]) -> bytes:
    """The request body, put back so that the application reads it again."""
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH")
    body: bytes = (
        stream.read(int(length)) if length else stream.read() if environ.get("wsgi.input_terminated") else b""
    )
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return body
