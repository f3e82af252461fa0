"""Reading template.yaml, the single source of truth for every resource: tests and the local stack
create tables (and the rest) from the template's own properties, never from a copy in Python."""

from functools import lru_cache
from pathlib import Path
from typing import Any

from samtranslator.yaml_helper import yaml_parse

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TEMPLATE_PATH = PROJECT_ROOT / "template.yaml"

# The properties of AWS::DynamoDB::Table that CreateTable takes as they are.
_TABLE_KEYS = (
    "AttributeDefinitions",
    "KeySchema",
    "GlobalSecondaryIndexes",
    "LocalSecondaryIndexes",
    "BillingMode",
)


@lru_cache(maxsize=4)
def load_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """The template as a dict; intrinsic functions stay as {"Ref": ...}, {"Fn::GetAtt": ...}."""
    return yaml_parse(path.read_text(encoding="utf-8"))


def resources_of_type(
    resource_type: str, template: dict[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """The template's resources of one type, by logical id."""
    template = template or load_template()
    return {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == resource_type
    }


def create_table_arguments(
    logical_id: str, table_name: str, template: dict[str, Any] | None = None
) -> dict[str, Any]:
    """CreateTable keyword arguments for the table that ``logical_id`` declares."""
    properties = resources_of_type("AWS::DynamoDB::Table", template)[logical_id]["Properties"]
    arguments: dict[str, Any] = {key: properties[key] for key in _TABLE_KEYS if key in properties}
    arguments["TableName"] = table_name
    return arguments
