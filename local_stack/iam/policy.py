"""IAM policy evaluation, as AWS documents it, for the policies a SAM template can hold.

Sources (AWS IAM User Guide):
- "Policy evaluation logic": an explicit Deny in any policy wins; otherwise an Allow in any policy
  allows; otherwise the request is implicitly denied.
- "IAM JSON policy elements: Action": action names are case-insensitive; `*` and `?` are wildcards.
- "IAM JSON policy elements: Resource": `*` and `?` match within one ARN segment (the parts
  separated by colons); a `*` that ends a segment may also match across the colons after it;
  `"Resource": "*"` matches every resource. ARNs are matched case-sensitively.
- "IAM JSON policy elements: NotAction / NotResource / Principal / NotPrincipal".
- "IAM JSON policy elements: Condition operators" and "Condition element": operators within a
  block and keys within an operator are ANDed, the values of one key ORed; a key absent from the
  request makes a condition false, except for negated operators (true), `...IfExists` (true),
  `Null`, and `ForAllValues:` (true).

Supported condition operators: String(Not)Equals(IgnoreCase), String(Not)Like, Arn(Not)Equals,
Arn(Not)Like, Numeric*, Bool, Null, each with `IfExists`, and the `ForAnyValue:` / `ForAllValues:`
set prefixes. Date, IP address and binary operators and policy variables (`${aws:username}`) are
not: a policy that uses them is refused when the stack starts (PolicyError), rather than evaluated
wrongly.

moto ships policy classes too (moto.iam.access_control.IAMPolicyStatement), but they match
actions case-sensitively, turn `*` into a regular expression without escaping the rest of the
pattern, ignore `?`, NotResource and segment boundaries, and deny where a condition merely does not
apply; so the local stack evaluates policies itself."""

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any

WILDCARD = "*"


class PolicyError(ValueError):
    """A policy that the local stack cannot evaluate faithfully."""


class Decision(Enum):
    """The outcome of evaluating policies for one request."""

    ALLOW = "allow"
    EXPLICIT_DENY = "explicit deny"
    IMPLICIT_DENY = "implicit deny"


@dataclass(frozen=True)
class Caller:
    """Who makes a request, as a resource-based policy's Principal element names callers: an AWS
    principal (a role session's role ARN and account) or a service (``cloudwatch.amazonaws.com``)."""

    account: str = ""
    arns: tuple[str, ...] = ()
    service: str = ""


@dataclass(frozen=True)
class Request:
    """One action on one resource, with the request context that conditions test."""

    action: str
    resource: str
    caller: Caller = field(default_factory=Caller)
    # Condition keys (case-insensitive names) -> their values in this request.
    context: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def values(self, key: str) -> Sequence[str] | None:
        """The values of a condition key, or None when the request does not carry it."""
        wanted = key.lower()
        for name, values in self.context.items():
            if name.lower() == wanted:
                return values
        return None


# ---- matching ---------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _action_pattern(pattern: str) -> re.Pattern[str]:
    parts = [".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern]
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def action_matches(pattern: str, action: str) -> bool:
    """IAM's action match: case-insensitive, ``*`` any run of characters, ``?`` one character."""
    return _action_pattern(pattern).fullmatch(action) is not None


@lru_cache(maxsize=4096)
def _arn_pattern(pattern: str) -> re.Pattern[str]:
    parts = []
    for index, char in enumerate(pattern):
        if char == "*":
            ends_segment = index + 1 == len(pattern) or pattern[index + 1] == ":"
            parts.append(".*" if ends_segment else "[^:]*")
        elif char == "?":
            parts.append("[^:]")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.DOTALL)


def arn_matches(pattern: str, arn: str) -> bool:
    """IAM's resource (and Arn condition) match: case-sensitive; ``*`` and ``?`` stay within one
    colon-separated segment, except that a ``*`` ending a segment may run on across colons."""
    if pattern == WILDCARD:
        return True
    return _arn_pattern(pattern).fullmatch(arn) is not None


@lru_cache(maxsize=4096)
def _like_pattern(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    parts = [".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern]
    return re.compile("".join(parts), (re.IGNORECASE if ignore_case else 0) | re.DOTALL)


def _like(pattern: str, value: str) -> bool:
    return _like_pattern(pattern, False).fullmatch(value) is not None


# ---- conditions -------------------------------------------------------------------------------


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _numeric(compare: Callable[[float, float], bool]) -> Callable[[str, str], bool]:
    def match(expected: str, actual: str) -> bool:
        left, right = _number(actual), _number(expected)
        return left is not None and right is not None and compare(left, right)

    return match


# Operator -> (does one request value match one policy value, is the operator negated).
_OPERATORS: dict[str, tuple[Callable[[str, str], bool], bool]] = {
    "StringEquals": (lambda expected, actual: expected == actual, False),
    "StringNotEquals": (lambda expected, actual: expected == actual, True),
    "StringEqualsIgnoreCase": (lambda expected, actual: expected.lower() == actual.lower(), False),
    "StringNotEqualsIgnoreCase": (lambda expected, actual: expected.lower() == actual.lower(), True),
    "StringLike": (_like, False),
    "StringNotLike": (_like, True),
    "ArnEquals": (arn_matches, False),
    "ArnLike": (arn_matches, False),
    "ArnNotEquals": (arn_matches, True),
    "ArnNotLike": (arn_matches, True),
    "NumericEquals": (_numeric(lambda actual, expected: actual == expected), False),
    "NumericNotEquals": (_numeric(lambda actual, expected: actual == expected), True),
    "NumericLessThan": (_numeric(lambda actual, expected: actual < expected), False),
    "NumericLessThanEquals": (_numeric(lambda actual, expected: actual <= expected), False),
    "NumericGreaterThan": (_numeric(lambda actual, expected: actual > expected), False),
    "NumericGreaterThanEquals": (_numeric(lambda actual, expected: actual >= expected), False),
    "Bool": (lambda expected, actual: expected.lower() == actual.lower(), False),
}
_SET_PREFIXES = ("ForAnyValue:", "ForAllValues:")


@dataclass(frozen=True)
class Condition:
    """One operator applied to one condition key, with the policy's values for it."""

    operator: str
    key: str
    expected: tuple[str, ...]

    @classmethod
    def parse(cls, operator: str, key: str, values: Any) -> "Condition":
        expected = tuple(_text(value) for value in (values if isinstance(values, list) else [values]))
        base = operator
        for prefix in _SET_PREFIXES:
            base = base.removeprefix(prefix)
        base = base.removesuffix("IfExists")
        if base != "Null" and base not in _OPERATORS:
            raise PolicyError(f"condition operator {operator} is not supported by the local stack")
        if any("${" in value for value in expected):
            raise PolicyError(f"policy variables in conditions ({key}) are not supported by the local stack")
        return cls(operator, key, expected)

    def holds(self, request: Request) -> bool:
        """Whether this condition is true for ``request``."""
        actual = request.values(self.key)
        operator = self.operator
        set_operator = next((prefix for prefix in _SET_PREFIXES if operator.startswith(prefix)), "")
        operator = operator.removeprefix(set_operator)
        if_exists = operator.endswith("IfExists")
        operator = operator.removesuffix("IfExists")
        if operator == "Null":
            absent = not actual
            return any((value.lower() == "true") == absent for value in self.expected)
        match, negated = _OPERATORS[operator]
        if not actual:
            if set_operator == "ForAllValues:" or if_exists:
                return True
            return negated and not set_operator

        def one(value: str) -> bool:
            matched = any(match(expected, value) for expected in self.expected)
            return not matched if negated else matched

        if set_operator == "ForAllValues:":
            return all(one(value) for value in actual)
        if set_operator == "ForAnyValue:":
            return any(one(value) for value in actual)
        # A single-valued key: negated operators hold when no policy value matches it.
        return all(one(value) for value in actual) if negated else any(one(value) for value in actual)


# ---- statements and policies ------------------------------------------------------------------


@dataclass(frozen=True)
class Principals:
    """A Principal or NotPrincipal element: "*", or AWS principals and service names."""

    anyone: bool = False
    aws: tuple[str, ...] = ()
    services: tuple[str, ...] = ()

    @classmethod
    def parse(cls, element: Any) -> "Principals":
        if element == WILDCARD:
            return cls(anyone=True)
        if not isinstance(element, dict):
            raise PolicyError(f"unsupported Principal element: {element!r}")
        unknown = set(element) - {"AWS", "Service"}
        if unknown:
            raise PolicyError(f"Principal types {sorted(unknown)} are not supported by the local stack")
        aws = tuple(_text(value) for value in _as_list(element.get("AWS", [])))
        services = tuple(_text(value) for value in _as_list(element.get("Service", [])))
        return cls(anyone=WILDCARD in aws, aws=aws, services=services)

    def include(self, caller: Caller) -> bool:
        """Whether ``caller`` is one of these principals. An account (its id or its root ARN)
        stands for every principal of that account, as in a key policy's root statement."""
        if self.anyone:
            return True
        if caller.service:
            return caller.service in self.services
        for principal in self.aws:
            if principal in caller.arns:
                return True
            if caller.account and principal in (caller.account, f"arn:aws:iam::{caller.account}:root"):
                return True
        return False


@dataclass(frozen=True)
class Statement:
    """One statement of a policy document."""

    effect: str
    actions: tuple[str, ...] | None = None
    not_actions: tuple[str, ...] | None = None
    resources: tuple[str, ...] | None = None
    not_resources: tuple[str, ...] | None = None
    principals: Principals | None = None
    not_principals: Principals | None = None
    conditions: tuple[Condition, ...] = ()
    sid: str = ""

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> "Statement":
        effect = raw.get("Effect")
        if effect not in ("Allow", "Deny"):
            raise PolicyError(
                f"statement {raw.get('Sid', '')!r}: Effect must be Allow or Deny, not {effect!r}"
            )
        if ("Action" in raw) == ("NotAction" in raw):
            raise PolicyError(f"statement {raw.get('Sid', '')!r}: needs exactly one of Action and NotAction")
        resources = _patterns(raw.get("Resource"))
        not_resources = _patterns(raw.get("NotResource"))
        for pattern in (*(resources or ()), *(not_resources or ())):
            if "${" in pattern:
                raise PolicyError(
                    f"policy variables in resources ({pattern}) are not supported by the local stack"
                )
        conditions = tuple(
            Condition.parse(operator, key, values)
            for operator, block in (raw.get("Condition") or {}).items()
            for key, values in block.items()
        )
        return cls(
            effect=effect,
            actions=_patterns(raw.get("Action")),
            not_actions=_patterns(raw.get("NotAction")),
            resources=resources,
            not_resources=not_resources,
            principals=Principals.parse(raw["Principal"]) if "Principal" in raw else None,
            not_principals=Principals.parse(raw["NotPrincipal"]) if "NotPrincipal" in raw else None,
            conditions=conditions,
            sid=_text(raw.get("Sid", "")),
        )

    def applies(self, request: Request) -> bool:
        """Whether this statement covers ``request`` (its action, resource, principal, conditions)."""
        caller = request.caller
        return (
            _covers(self.actions, self.not_actions, request.action, action_matches)
            and _covers(self.resources, self.not_resources, request.resource, arn_matches)
            and (self.principals is None or self.principals.include(caller))
            and (self.not_principals is None or not self.not_principals.include(caller))
            and all(condition.holds(request) for condition in self.conditions)
        )


def _covers(
    included: tuple[str, ...] | None,
    excluded: tuple[str, ...] | None,
    value: str,
    match: Callable[[str, str], bool],
) -> bool:
    """An element and its Not- twin (Action/NotAction, Resource/NotResource): ``value`` matches a
    pattern of the first, when there is one, and none of the second."""
    if included is not None and not any(match(pattern, value) for pattern in included):
        return False
    return excluded is None or not any(match(pattern, value) for pattern in excluded)


@dataclass(frozen=True)
class Policy:
    """A policy document: identity-based (a role's) or resource-based (a key policy)."""

    statements: tuple[Statement, ...]
    name: str = ""

    @classmethod
    def parse(cls, document: Any, name: str = "") -> "Policy":
        """A policy from its document (a dict, or JSON text); PolicyError if it cannot be evaluated."""
        if isinstance(document, str):
            document = json.loads(document)
        if not isinstance(document, Mapping) or "Statement" not in document:
            raise PolicyError(f"policy {name!r} has no Statement")
        try:
            statements = tuple(Statement.parse(raw) for raw in _as_list(document["Statement"]))
        except PolicyError as exc:
            raise PolicyError(f"policy {name!r}: {exc}") from exc
        return cls(statements, name)


def evaluate(policies: Iterable[Policy], request: Request) -> Decision:
    """AWS's evaluation logic over ``policies``: explicit deny, else allow, else implicit deny."""
    allowed = False
    for policy in policies:
        for statement in policy.statements:
            if statement.applies(request):
                if statement.effect == "Deny":
                    return Decision.EXPLICIT_DENY
                allowed = True
    return Decision.ALLOW if allowed else Decision.IMPLICIT_DENY


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _patterns(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(_text(item) for item in _as_list(value))


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
