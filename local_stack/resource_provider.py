"""One CloudFormation resource type, as its service creates and deletes it in moto's backend.

A provider lives in its service's package (``<service>/resource_types.py``) and is registered once
(``local_stack.registry``); this module, above the packages, is the shape they share. Both ways the
template's resources are made use it: `make run` (``cloudformation.resources.create_resources``)
and `sam deploy` against the embedded AWS, where moto's CloudFormation finds it as a model
(``cloudformation.deploy.install``). It runs in the process that holds moto's backends."""

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Created:
    """A resource made by a provider: its physical id (its Ref), its ``Fn::GetAtt`` attributes, and
    what it belongs to (a plan's key belongs to the plan) when deleting it needs that."""

    physical_id: str
    attributes: dict[str, str] = field(default_factory=dict)
    owner: str = ""


class ResourceProvider(Protocol):
    """Create and delete one resource type in moto's backend for its service."""

    TYPE: str  # AWS::Service::Type
    NAME_PROPERTY: str  # the property that names it ("" when none does)

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created: ...

    def delete(self, created: Created, account_id: str, region: str) -> None: ...
