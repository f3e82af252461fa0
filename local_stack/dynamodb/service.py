"""DynamoDB in the stack: the capacity model inside the embedded AWS, and the tables' durable state."""

from pathlib import Path

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudformation.resources import TABLE, Resources
from local_stack.dynamodb import throttling
from local_stack.dynamodb.state import DynamoDbState
from local_stack.service import Service, Stack


class DynamoDbService(Service):
    name = "dynamodb"

    def __init__(self) -> None:
        self._capacity: throttling.DynamoDbCapacity | None = None

    def attach(self, stack: Stack) -> None:
        self._capacity = throttling.attach(stack.moto, stack.options.dynamodb_capacity)

    def configure(self, stack: Stack) -> None:
        resources, region = stack.resources, stack.options.region
        throttling.add_tables(
            self._capacity,
            {resources.physical_id(lid): props for lid, props in resources.of_type(TABLE).items()},
            lambda name: f"arn:aws:dynamodb:{region}:{ACCOUNT_ID}:table/{name}",
        )

    def durable_state(self, stack: Stack, data_dir: Path) -> DynamoDbState:
        resources = stack.resources
        return DynamoDbState(
            ACCOUNT_ID,
            resources.region,
            forget_on_restart(resources),
            forget_on_restart(resources, "ExpireOnRestart"),
        )


def forget_on_restart(resources: Resources, rule: str = "ForgetOnRestart") -> dict[str, list[str]]:
    """Table name -> the attributes that its restored items lose, from the table's
    ``Metadata: {LocalStack: {ForgetOnRestart: [...]}}``: what describes a process of the previous
    run (a loop's heartbeat), since a restart ended every process. With ``rule``
    ``ExpireOnRestart``: the lease attributes that restored items keep, run out (set to 0)."""
    forgotten = {}
    for logical_id in resources.of_type(TABLE):
        metadata = resources.template["Resources"][logical_id].get("Metadata", {})
        attributes = metadata.get("LocalStack", {}).get(rule, [])
        if attributes:
            forgotten[resources.physical_id(logical_id)] = [str(name) for name in attributes]
    return forgotten
