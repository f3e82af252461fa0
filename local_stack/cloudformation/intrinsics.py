"""CloudFormation intrinsic functions, resolved against the local stack's names.

After the SAM transform the template is plain CloudFormation; this resolves what CloudFormation
would: parameters (defaults or overrides), pseudo parameters, conditions, Ref, Fn::GetAtt, Fn::Sub,
Fn::Join, Fn::If and friends. Physical names come from the caller, so nothing is declared twice."""

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ACCOUNT_ID = "123456789012"  # moto's default account


class IntrinsicError(Exception):
    """A reference the local stack cannot resolve."""


class _NoValue:
    """AWS::NoValue: the property is removed."""

    def __repr__(self) -> str:
        return "AWS::NoValue"


NO_VALUE = _NoValue()
_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")


def parameter_values(
    declared: Mapping[str, Any], overrides: Mapping[str, Any], *, strict: bool = True
) -> dict[str, str | list[str]]:
    """Each parameter's value: the override, else the template default. Lists stay lists.

    ``strict`` (the local stack, started from the working tree): an unknown override, a parameter
    with neither, or a value outside its AllowedValues is refused here. Not strict (a `sam deploy`
    to the embedded AWS, as CloudFormation takes parameters): a parameter with no value is left
    out, and the deploy's own checks (deploy.check_parameters, the Rules) judge the values."""
    unknown = sorted(set(overrides) - set(declared))
    if strict and unknown:
        raise IntrinsicError(f"Unknown template parameter(s): {', '.join(unknown)}")
    values: dict[str, str | list[str]] = {}
    for name, spec in declared.items():
        raw: Any = overrides[name] if name in overrides else spec.get("Default")
        if raw is None:
            if strict:
                raise IntrinsicError(f"Parameter {name} has no default; pass --param {name}=<value>")
            continue
        allowed = [str(value) for value in spec.get("AllowedValues", [])]
        if strict and allowed and str(raw) not in allowed:
            raise IntrinsicError(f"Parameter {name}={raw} is not one of {', '.join(allowed)}")
        if str(spec.get("Type", "String")).endswith("List"):
            values[name] = raw if isinstance(raw, list) else [item.strip() for item in str(raw).split(",")]
        else:
            values[name] = str(raw)
    return values


@dataclass
class Resolver:
    """Resolves intrinsic functions against parameters and the resources' local physical names."""

    parameters: dict[str, Any]
    region: str
    stack_name: str
    conditions: dict[str, Any] = field(default_factory=dict)
    mappings: dict[str, Any] = field(default_factory=dict)
    # The UUID that ends AWS::StackId: CloudFormation makes one per stack; the local stack keeps
    # one per data dir (the template keys generated codes with it).
    stack_uuid: str = "00000000-0000-0000-0000-000000000000"
    # Logical id -> the value of Ref, and logical id -> {attribute: value} for Fn::GetAtt.
    refs: dict[str, Any] = field(default_factory=dict)
    attributes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def pseudo(self, name: str) -> Any:
        return {
            "AWS::Region": self.region,
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::StackName": self.stack_name,
            "AWS::StackId": (
                f"arn:aws:cloudformation:{self.region}:{ACCOUNT_ID}:stack/{self.stack_name}/{self.stack_uuid}"
            ),
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NotificationARNs": [],
            "AWS::NoValue": NO_VALUE,
        }[name]

    def condition(self, name: str) -> bool:
        """The value of a named condition of the template."""
        if name not in self.conditions:
            raise IntrinsicError(f"Unknown condition {name}")
        return bool(self.resolve(self.conditions[name]))

    def ref(self, name: str) -> Any:
        if name.startswith("AWS::"):
            return self.pseudo(name)
        if name in self.parameters:
            return self.parameters[name]
        if name in self.refs:
            return self.refs[name]
        raise IntrinsicError(f"Ref to {name}, which the local stack does not create")

    def get_att(self, logical_id: str, attribute: str) -> Any:
        try:
            return self.attributes[logical_id][attribute]
        except KeyError:
            raise IntrinsicError(f"Fn::GetAtt {logical_id}.{attribute} is not known locally") from None

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic function replaced by its local value."""
        if isinstance(value, list):
            items = [self.resolve(item) for item in value]
            return [item for item in items if item is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, argument),) = value.items()
            if key == "Ref":
                return self.ref(argument)
            if key == "Condition":
                return self.condition(argument)
            if key.startswith("Fn::"):
                return self._function(key, argument)
        resolved = {key: self.resolve(item) for key, item in value.items()}
        return {key: item for key, item in resolved.items() if item is not NO_VALUE}

    def _function(self, name: str, argument: Any) -> Any:  # noqa: PLR0911, PLR0912
        if name == "Fn::GetAtt":
            logical_id, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
            return self.get_att(logical_id, self.resolve(attribute))
        if name == "Fn::Sub":
            return self._sub(argument)
        if name == "Fn::Join":
            delimiter, items = argument
            return str(delimiter).join(_text(item) for item in self.resolve(items))
        if name == "Fn::If":
            condition, when_true, when_false = argument
            return self.resolve(when_true if self.condition(condition) else when_false)
        if name == "Fn::Equals":
            left, right = (self.resolve(item) for item in argument)
            return _text(left) == _text(right)
        if name == "Fn::Not":
            return not self.resolve(argument[0])
        if name == "Fn::And":
            return all(self.resolve(item) for item in argument)
        if name == "Fn::Or":
            return any(self.resolve(item) for item in argument)
        if name == "Fn::Select":
            index, items = argument
            return self.resolve(items)[int(self.resolve(index))]
        if name == "Fn::Split":
            delimiter, text = argument
            return _text(self.resolve(text)).split(delimiter)
        if name == "Fn::Base64":
            return base64.b64encode(_text(self.resolve(argument)).encode()).decode()
        if name == "Fn::GetAZs":
            return [f"{self.region}{zone}" for zone in "abc"]
        if name == "Fn::FindInMap":
            mapping, top, second = (self.resolve(item) for item in argument)
            return self.mappings[mapping][top][second]
        raise IntrinsicError(f"{name} is not supported by the local stack")

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else (argument[0], argument[1])
        values = {name: self.resolve(value) for name, value in variables.items()}

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):  # ${!Literal} is the escape for a literal ${Literal}
                return "${" + name[1:] + "}"
            if name in values:
                return _text(values[name])
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return _text(self.get_att(logical_id, attribute))
            return _text(self.ref(name))

        return _SUB_VARIABLE.sub(substitute, text)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_text(item) for item in value)
    return str(value)
