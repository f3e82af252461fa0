"""Reserved concurrency against the account's quota, before deploying.

The stack reserves concurrent executions (the poller 2 x MaxLoops, the files function 10, the API
ApiReservedConcurrency when set), and Lambda keeps at least 100 of the account's executions
unreserved: a deploy whose reservations leave fewer fails halfway, in CloudFormation, with "Specified
ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution below
its minimum value of [100]". `make deploy` reads the account's settings first (`lambda
get-account-settings`) and stops with the quota to ask for."""

import shlex
from dataclasses import dataclass
from typing import Any

MIN_UNRESERVED = 100
_FUNCTION_TYPES = ("AWS::Serverless::Function", "AWS::Lambda::Function")


def template_reservations(template: dict[str, Any], overrides: dict[str, str]) -> dict[str, int]:
    """Each function's ReservedConcurrentExecutions in ``template`` (a SAM template as parsed),
    with its parameters' defaults and ``overrides``."""
    parameters = {
        name: str(spec.get("Default", "")) for name, spec in template.get("Parameters", {}).items()
    } | overrides
    resolver = _Resolver(parameters, template.get("Conditions", {}))
    globals_value = template.get("Globals", {}).get("Function", {}).get("ReservedConcurrentExecutions")
    found = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") not in _FUNCTION_TYPES:
            continue
        value = resource.get("Properties", {}).get("ReservedConcurrentExecutions", globals_value)
        resolved = resolver.value(value) if value is not None else None
        if resolved is not None:
            found[logical_id] = int(resolved)
    return found


@dataclass(frozen=True)
class QuotaCheck:
    """What the stack reserves, and the account's quota and unreserved executions (this stack's
    current reservations added back: an update replaces them)."""

    reserved: int
    quota: int
    unreserved: int

    @property
    def needed_quota(self) -> int:
        """The smallest quota with which the deploy succeeds, the account's other reservations kept."""
        others = self.quota - self.unreserved
        return others + self.reserved + MIN_UNRESERVED

    @property
    def fits(self) -> bool:
        return self.unreserved - self.reserved >= MIN_UNRESERVED

    def message(self) -> str:
        return (
            f"This stack reserves {self.reserved} concurrent executions (PollerFunction 2 x MaxLoops, "
            f"and ApiReservedConcurrency), and Lambda keeps at least {MIN_UNRESERVED} unreserved; the "
            f"account's quota is {self.quota} with {self.unreserved} unreserved. Ask for a "
            f"'Concurrent executions' quota of at least {self.needed_quota} (Service Quotas, AWS Lambda, "
            "L-B99A9384), or deploy with a smaller MaxLoops."
        )


def check_quota(reserved: int, account_settings: Any, held_now: int = 0) -> QuotaCheck:
    """``reserved`` against ``lambda get-account-settings``; ``held_now``: what this stack's
    functions reserve today (an update gives it back)."""
    limit = account_settings["AccountLimit"]
    return QuotaCheck(
        reserved=reserved,
        quota=int(limit["ConcurrentExecutions"]),
        unreserved=int(limit["UnreservedConcurrentExecutions"]) + held_now,
    )


def parameter_overrides(text: str) -> dict[str, str]:
    """``Key=Value Key2=Value2`` (sam's --parameter-overrides; quotes allowed) as a dict."""
    pairs = {}
    for part in shlex.split(text):
        key, _, value = part.partition("=")
        if key.startswith("ParameterKey"):
            # The long form: ParameterKey=K,ParameterValue=V
            fields = dict(item.split("=", 1) for item in part.split(",") if "=" in item)
            key, value = fields.get("ParameterKey", ""), fields.get("ParameterValue", "")
        if key:
            pairs[key] = value
    return pairs


class _Resolver:
    """The few intrinsics a reservation is written with: Ref, Fn::If, Fn::Select, and the
    conditions' Fn::Equals, Fn::Not, Fn::And, Fn::Or."""

    def __init__(self, parameters: dict[str, str], conditions: dict[str, Any]) -> None:
        self._parameters = parameters
        self._conditions = conditions

    def value(self, node: Any) -> Any:  # noqa: PLR0911
        if not isinstance(node, dict) or len(node) != 1:
            return node
        [(name, argument)] = node.items()
        if name == "Ref":
            return None if argument == "AWS::NoValue" else self._parameters.get(argument, argument)
        if name == "Fn::If":
            condition, when_true, when_false = argument
            return self.value(when_true if self.condition(condition) else when_false)
        if name == "Fn::Select":
            index, items = argument
            return self.value(self.value(items)[int(self.value(index))])
        if name == "Condition":
            return self.condition(argument)
        if name == "Fn::Equals":
            first, second = (str(self.value(item)) for item in argument)
            return first == second
        if name == "Fn::Not":
            return not self.value(argument[0])
        if name == "Fn::And":
            return all(self.value(item) for item in argument)
        if name == "Fn::Or":
            return any(self.value(item) for item in argument)
        return node

    def condition(self, name: str) -> bool:
        return bool(self.value(self._conditions[name]))
