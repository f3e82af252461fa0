"""AWS WAF in front of the local API: the template's ``AWS::WAFv2::WebACL`` resources that an
``AWS::WAFv2::WebACLAssociation`` attaches to the REST API's stage.

What WAF does, and this module with it (AWS WAF developer guide: "Rate-based rule statement",
"Rate-based rule high-level settings", "Customized web requests and responses"):
- Rules run in ``Priority`` order; the first rule whose statement matches and whose action is
  Block or Allow ends the evaluation (Count goes on); otherwise the ``DefaultAction`` applies.
- A rate-based rule counts the requests that match its scope-down statement per aggregation key
  (IP: the client address; CONSTANT: all together) over the trailing ``EvaluationWindowSec``
  (60, 120, 300 or 600; default 300). While a key's count is above ``Limit`` (at least 10), the
  rule matches that key's further requests. WAF checks rates "frequently" and limits "near" the
  limit; locally the count is exact and takes effect at once.
- A Block answers 403 (API Gateway's WAF_FILTERED response) unless the rule's ``CustomResponse``
  gives a status, a body from the web ACL's ``CustomResponseBodies`` and headers, sent as named
  (any name but content-type: "Custom responses for Block actions",
  https://docs.aws.amazon.com/waf/latest/developerguide/customizing-the-response-for-blocked-requests.html;
  only headers WAF inserts into allowed requests get the ``x-amzn-waf-`` prefix); a WAF custom
  response takes precedence over gateway responses.
Statements emulated: RateBasedStatement, ByteMatchStatement (Method, UriPath, QueryString,
SingleHeader; EXACTLY, STARTS_WITH, ENDS_WITH, CONTAINS; NONE/LOWERCASE transformations),
AndStatement, OrStatement, NotStatement. Any other statement never matches (warned at start)."""

import collections
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

log = logging.getLogger(__name__)

_CONTENT_TYPES = {
    "APPLICATION_JSON": "application/json",
    "TEXT_PLAIN": "text/plain",
    "TEXT_HTML": "text/html",
}
_SUPPORTED = {"RateBasedStatement", "ByteMatchStatement", "AndStatement", "OrStatement", "NotStatement"}


@dataclass(frozen=True)
class WafRequest:
    """What WAF inspects of a request."""

    method: str
    target: str
    headers: Mapping[str, str]
    source_ip: str

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers.items() if key.lower() == name.lower()), None)


WafAnswer = tuple[int, list[tuple[str, str]], bytes] | None


@dataclass
class RateCounter:
    """Request times per (rule, aggregation key) over a trailing window."""

    clock: Callable[[], float] = time.monotonic
    _seen: dict[tuple[str, str], collections.deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, rule: str, key: str, window: float) -> int:
        """Record one request now and return how many fell in the window (this one included)."""
        now = self.clock()
        with self._lock:
            times = self._seen.setdefault((rule, key), collections.deque())
            times.append(now)
            while times and times[0] <= now - window:
                times.popleft()
            return len(times)


class WebAcl:
    """One web ACL: its rules, evaluated against each request."""

    def __init__(self, name: str, properties: Mapping[str, Any], counter: RateCounter | None = None) -> None:
        self.name = name
        self.rules = sorted(properties.get("Rules") or [], key=lambda rule: int(rule.get("Priority", 0)))
        self.default_block = "Block" in (properties.get("DefaultAction") or {})
        self.bodies = properties.get("CustomResponseBodies") or {}
        self.counter = counter or RateCounter()
        for rule in self.rules:
            for unsupported in _unsupported(rule.get("Statement") or {}):
                log.warning(
                    "WAF %s rule %s: %s is not emulated; it never matches",
                    name,
                    rule.get("Name"),
                    unsupported,
                )

    def inspect(self, request: WafRequest) -> WafAnswer:
        """None when the request may pass, else WAF's answer."""
        for rule in self.rules:
            action = rule.get("Action") or rule.get("OverrideAction") or {}
            if not self._matches(rule.get("Name", ""), rule.get("Statement") or {}, request):
                continue
            if "Block" in action:
                return self._block(action["Block"] or {})
            if "Allow" in action:
                return None
        return self._block({}) if self.default_block else None

    def _matches(self, rule: str, statement: Mapping[str, Any], request: WafRequest) -> bool:
        if "RateBasedStatement" in statement:
            return self._over_rate(rule, statement["RateBasedStatement"], request)
        if "ByteMatchStatement" in statement:
            return _byte_match(statement["ByteMatchStatement"], request)
        if "AndStatement" in statement:
            return all(self._matches(rule, s, request) for s in statement["AndStatement"]["Statements"])
        if "OrStatement" in statement:
            return any(self._matches(rule, s, request) for s in statement["OrStatement"]["Statements"])
        if "NotStatement" in statement:
            return not self._matches(rule, statement["NotStatement"]["Statement"], request)
        return False

    def _over_rate(self, rule: str, spec: Mapping[str, Any], request: WafRequest) -> bool:
        scope = spec.get("ScopeDownStatement")
        if scope and not self._matches(rule, scope, request):
            return False
        aggregate = str(spec.get("AggregateKeyType", "IP"))
        if aggregate == "CONSTANT":
            key = ""
        elif aggregate == "FORWARDED_IP":
            header = (spec.get("ForwardedIPConfig") or {}).get("HeaderName", "X-Forwarded-For")
            key = (request.header(header) or request.source_ip).split(",")[0].strip()
        else:
            key = request.source_ip
        window = float(spec.get("EvaluationWindowSec", 300))
        return self.counter.count(rule, key, window) > int(spec["Limit"])

    def _block(self, block: Mapping[str, Any]) -> WafAnswer:
        custom = block.get("CustomResponse")
        if not custom:
            return (
                403,
                [("Content-Type", "application/json"), ("x-amzn-ErrorType", "ForbiddenException")],
                (b'{"message":"Forbidden"}'),
            )
        headers = [(str(h["Name"]), str(h["Value"])) for h in custom.get("ResponseHeaders") or []]
        body = b""
        if custom.get("CustomResponseBodyKey"):
            spec = self.bodies[custom["CustomResponseBodyKey"]]
            headers.insert(0, ("Content-Type", _CONTENT_TYPES.get(spec.get("ContentType", ""), "text/plain")))
            body = str(spec.get("Content", "")).encode()
        return int(custom["ResponseCode"]), headers, body


class Firewall:
    """Every web ACL associated with the local API's stage."""

    def __init__(self, acls: list[WebAcl]) -> None:
        self.acls = acls

    @classmethod
    def for_api(
        cls,
        web_acls: Mapping[str, Mapping[str, Any]],
        associations: Mapping[str, Mapping[str, Any]],
        web_acl_arns: Mapping[str, str],
        api_id: str,
        stage: str,
    ) -> "Firewall":
        """The ACLs (logical id -> properties, -> ARN) whose association names the API's ``stage``
        (an ACL of another stage, such as the edge's, guards requests that stage answers)."""
        by_arn = {arn: logical_id for logical_id, arn in web_acl_arns.items()}
        attached = [
            by_arn[str(association["WebACLArn"])]
            for association in associations.values()
            if str(association.get("ResourceArn", "")).endswith(f"/restapis/{api_id}/stages/{stage}")
            and str(association.get("WebACLArn")) in by_arn
        ]
        return cls([WebAcl(logical_id, web_acls[logical_id]) for logical_id in attached])

    def inspect(self, request: WafRequest) -> WafAnswer:
        for acl in self.acls:
            answer = acl.inspect(request)
            if answer is not None:
                return answer
        return None


def _byte_match(spec: Mapping[str, Any], request: WafRequest) -> bool:
    field_spec = spec.get("FieldToMatch") or {}
    split = urlsplit(request.target)
    if "Method" in field_spec:
        value: str | None = request.method
    elif "UriPath" in field_spec:
        value = unquote(split.path) or "/"
    elif "QueryString" in field_spec:
        value = split.query
    elif "SingleHeader" in field_spec:
        value = request.header(str(field_spec["SingleHeader"]["Name"]))
    else:
        return False
    if value is None:
        return False
    wanted = str(spec.get("SearchString", ""))
    for transformation in sorted(
        spec.get("TextTransformations") or [], key=lambda t: int(t.get("Priority", 0))
    ):
        if transformation.get("Type") == "LOWERCASE":
            value = value.lower()
    constraint = str(spec.get("PositionalConstraint", "CONTAINS"))
    return {
        "EXACTLY": value == wanted,
        "STARTS_WITH": value.startswith(wanted),
        "ENDS_WITH": value.endswith(wanted),
        "CONTAINS": wanted in value,
    }.get(constraint, False)


def _unsupported(statement: Mapping[str, Any]) -> list[str]:
    found = []
    for kind, spec in statement.items():
        if kind not in _SUPPORTED:
            found.append(kind)
        elif kind in ("AndStatement", "OrStatement"):
            found += [name for sub in spec.get("Statements", []) for name in _unsupported(sub)]
        elif kind == "NotStatement":
            found += _unsupported(spec.get("Statement", {}))
        elif kind == "RateBasedStatement" and spec.get("ScopeDownStatement"):
            found += _unsupported(spec["ScopeDownStatement"])
    return found
