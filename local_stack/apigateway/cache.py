"""API Gateway's stage cache, locally: what the template's stage turns on (CacheClusterEnabled,
MethodSettings with CachingEnabled and CacheTtlInSeconds) for the methods it names, keyed by the
method's cache key parameters (the integration's cacheKeyParameters, which SAM writes for
RequestParameters with Caching: true).

As API Gateway does ("Cache settings for REST APIs" in its developer guide):
- only the methods the settings enable are cached (caching is per stage, GET methods by default
  when a stage-wide "/*/*" setting turns it on); entries live CacheTtlInSeconds (300 by default);
- the integration's answers are cached whatever their status (API Gateway does not look at the
  integration's Cache-Control, nor at its status code; its own gateway errors are not answers of
  the integration and are not cached);
- a request with `Cache-Control: max-age=0` refreshes its entry from the integration only when it
  is signed (SigV4 for execute-api) by a principal allowed execute-api:InvalidateCache; from anyone
  else the header is ignored (the stage defaults requireAuthorizationForCacheControl true and
  unauthorizedCacheControlHeaderStrategy SUCCEED_WITH_RESPONSE_HEADER; AWS then adds a warning
  header, whose text is not reproduced here).
Locally the signature's scope is checked (execute-api), not its cryptography: every function's
credentials are the local stack's own. Who signed is checked when the stack enforces IAM: the
signer's policies must allow execute-api:InvalidateCache on the method's ARN
(`arn:aws:execute-api:<region>:<account>:<api id>/<stage name>/GET/<path>`, as "Invalidate an API
Gateway cache entry" in the developer guide writes it; the stage is the template's StageName, which
the policies name, although the local API serves it as `local`)."""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from local_stack.iam.calls import Access, Call
from local_stack.iam.guard import AccessControl

Answer = tuple[int, list[tuple[str, str]], bytes]
# (access key of the signature, the method ARN of the request) -> may it invalidate the entry?
MayInvalidate = Callable[[str, str], bool]
_DEFAULT_TTL_SECONDS = 300


@dataclass(frozen=True)
class CachedMethod:
    """One cached method of the stage."""

    http_method: str
    resource: str
    ttl_seconds: float
    key_parameters: tuple[str, ...] = ()


class StageCache:
    """The cache of the one stage the local stack serves."""

    def __init__(
        self,
        methods: list[CachedMethod],
        monotonic: Callable[[], float] = time.monotonic,
        *,
        stage_name: str = "",
        method_arn_prefix: str = "",
        may_invalidate: MayInvalidate | None = None,
    ) -> None:
        self._methods = {(method.http_method, method.resource): method for method in methods}
        self._monotonic = monotonic
        # Given by the stack when it enforces IAM; None: any execute-api signature may invalidate.
        self.may_invalidate = may_invalidate
        self.method_arn_prefix = method_arn_prefix
        # The template's StageName (what IAM policies name), not the local API's stage "local".
        self.stage_name = stage_name
        self._entries: dict[tuple[str, ...], tuple[float, Answer]] = {}
        self._lock = threading.Lock()

    @property
    def methods(self) -> list[CachedMethod]:
        return list(self._methods.values())

    def serve(
        self,
        http_method: str,
        resource: str,
        *,
        target: str,
        headers: list[tuple[str, str]],
        path_parameters: dict[str, str],
        fetch: Callable[[], Answer],
    ) -> Answer:
        """The answer to a request of ``http_method resource``: from the cache when a fresh entry
        exists, else from ``fetch`` (the integration), kept for the method's TTL."""
        method = self._methods.get((http_method, resource))
        if method is None or method.ttl_seconds <= 0:
            return fetch()
        key = (http_method, resource, *_key_values(method, target, headers, path_parameters))
        refresh = _asks_for_fresh(headers) and self._signer_may_invalidate(http_method, target, headers)
        now = self._monotonic()
        if not refresh:
            with self._lock:
                entry = self._entries.get(key)
            if entry is not None and entry[0] > now:
                return entry[1]
        answer = fetch()
        if answer[0] < 500:
            with self._lock:
                self._entries[key] = (self._monotonic() + method.ttl_seconds, answer)
        return answer

    def _signer_may_invalidate(self, http_method: str, target: str, headers: list[tuple[str, str]]) -> bool:
        access_key = _execute_api_signer(headers)
        if access_key is None:
            return False
        if self.may_invalidate is None:
            return True
        return self.may_invalidate(
            access_key, f"{self.method_arn_prefix}{http_method}{urlsplit(target).path}"
        )


def invalidation_check(access_control: AccessControl, region: str) -> MayInvalidate:
    """Whether a signature's key may invalidate a method's entry, by the stack's IAM: a function's
    key when its policies allow execute-api:InvalidateCache on the method ARN; any other key is the
    developer's own (unrestricted, as everywhere in the local stack)."""

    def may_invalidate(access_key: str, method_arn: str) -> bool:
        principal = access_control.principal(access_key)
        if principal is None:
            return True
        access = Access("execute-api:InvalidateCache", method_arn)
        call = Call("execute-api", "InvalidateCache", "REST", (access,), region)
        return access_control.authorise(principal, call) is None

    return may_invalidate


def stage_cache(
    stage: dict[str, Any],
    api_body: dict[str, Any],
    *,
    api_arn: str | None = None,
    may_invalidate: MayInvalidate | None = None,
) -> StageCache | None:
    """The cache a stage's (resolved) properties turn on, with the cache keys of its API's body;
    None when the stage has no cache cluster or caches no method. With IAM enforced, ``api_arn``
    (``arn:aws:execute-api:<region>:<account>:<api id>``) and ``may_invalidate`` say who may
    refresh an entry: a signer whose role allows execute-api:InvalidateCache on the method."""
    if not _true(stage.get("CacheClusterEnabled")):
        return None
    methods = []
    for setting in stage.get("MethodSettings", []):
        if not _true(setting.get("CachingEnabled")):
            continue
        ttl = float(setting.get("CacheTtlInSeconds", _DEFAULT_TTL_SECONDS))
        for http_method, resource, key_parameters in _methods_of(api_body, setting):
            methods.append(CachedMethod(http_method, resource, ttl, key_parameters))
    if not methods:
        return None
    stage_name = str(stage.get("StageName", ""))
    return StageCache(
        methods,
        stage_name=stage_name,
        method_arn_prefix=f"{api_arn}/{stage_name}/" if api_arn else "",
        may_invalidate=may_invalidate,
    )


def _methods_of(api_body: dict[str, Any], setting: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(method, resource, cache keys) a MethodSettings entry covers: its ResourcePath is the
    resource with "/" written "~1" after a leading "/", or "/*" for every resource."""
    wanted_path = str(setting.get("ResourcePath", "/*"))
    wanted_method = str(setting.get("HttpMethod", "*")).upper()
    resource_filter = None if wanted_path == "/*" else wanted_path[1:].replace("~1", "/")
    covered = []
    for resource, operations in api_body.get("paths", {}).items():
        if resource_filter is not None and resource != resource_filter:
            continue
        for verb, operation in operations.items():
            if not isinstance(operation, dict):
                continue
            http_method = verb.upper()
            # A stage-wide setting caches GET methods only; a method's own setting names it.
            if (wanted_method == "*" and http_method != "GET") or wanted_method not in ("*", http_method):
                continue
            keys = operation.get("x-amazon-apigateway-integration", {}).get("cacheKeyParameters", [])
            covered.append((http_method, resource, tuple(str(key) for key in keys)))
    return covered


def _key_values(
    method: CachedMethod, target: str, headers: list[tuple[str, str]], path_parameters: dict[str, str]
) -> list[str]:
    query = dict(parse_qsl(urlsplit(target).query, keep_blank_values=True))
    lowered = {name.lower(): value for name, value in headers}
    values = []
    for parameter in method.key_parameters:
        kind, _, name = parameter.removeprefix("method.request.").partition(".")
        if kind == "path":
            values.append(path_parameters.get(name, ""))
        elif kind == "querystring":
            values.append(query.get(name, ""))
        elif kind == "header":
            values.append(lowered.get(name.lower(), ""))
    return values


def _asks_for_fresh(headers: list[tuple[str, str]]) -> bool:
    control = next((value for name, value in headers if name.lower() == "cache-control"), "")
    return "max-age=0" in {part.strip().lower() for part in control.split(",")}


def _execute_api_signer(headers: list[tuple[str, str]]) -> str | None:
    """The access key of a SigV4 signature scoped to execute-api, or None."""
    authorization = next((value for name, value in headers if name.lower() == "authorization"), "")
    if not authorization.startswith("AWS4-HMAC-SHA256 "):
        return None
    credential = authorization.partition("Credential=")[2].split(",", 1)[0]
    # <access key>/<date>/<region>/<service>/aws4_request
    parts = credential.split("/")
    return parts[0] if parts[3:4] == ["execute-api"] else None


def _true(value: Any) -> bool:
    return value is True or str(value).lower() == "true"
