"""AWS::Athena::WorkGroup, created in moto's Athena (moto's CloudFormation has no model for it)."""

from typing import Any

from local_stack.resource_provider import Created


class WorkGroupProvider:
    TYPE, NAME_PROPERTY = "AWS::Athena::WorkGroup", "Name"

    def create(self, name: str, properties: dict[str, Any], account_id: str, region: str) -> Created:
        from moto.athena.models import athena_backends

        work_group = str(properties.get("Name") or name)
        athena_backends[account_id][region].create_work_group(
            work_group,
            dict(properties.get("WorkGroupConfiguration") or {}),
            str(properties.get("Description") or ""),
            list(properties.get("Tags") or []),
        )
        return Created(work_group)

    def delete(self, created: Created, account_id: str, region: str) -> None:
        from moto.athena.models import athena_backends

        athena_backends[account_id][region].work_groups.pop(created.physical_id, None)
