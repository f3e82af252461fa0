"""template.yaml as the local stack sees it: SAM-expanded, with a resolver of its intrinsics."""

from typing import Any

from local_stack.cloudformation.intrinsics import Resolver, parameter_values
from local_stack.cloudformation.template import expand_sam, load_template


def expanded_template(
    params: dict[str, str] | None = None, stack_name: str = "test"
) -> tuple[dict[str, Any], Resolver]:
    """The expanded template with ``params`` and a resolver of its parameters and conditions (the
    caller adds the resources' names and attributes it needs)."""
    expanded = expand_sam(load_template(), stack_name, "us-east-1", params or {})
    resolver = Resolver(
        parameters=parameter_values(expanded["Parameters"], params or {}),
        region="us-east-1",
        stack_name=stack_name,
        conditions=expanded.get("Conditions", {}),
    )
    return expanded, resolver
