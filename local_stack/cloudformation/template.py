"""Reading template.yaml, the single source of truth for every resource: tests and the local stack
create tables (and the rest) from the template's own properties, never from a copy in Python."""

import copy
import logging
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import boto3
from samtranslator.parser.parser import Parser
from samtranslator.public.exceptions import InvalidDocumentException
from samtranslator.translator.translator import Translator
from samtranslator.yaml_helper import yaml_parse

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = PROJECT_ROOT / "template.yaml"

# The properties of AWS::DynamoDB::Table that CreateTable takes as they are.
_INDEX_CAPACITY_KEYS = frozenset({"WarmThroughput", "OnDemandThroughput"})
_TABLE_KEYS = (
    "AttributeDefinitions",
    "KeySchema",
    "GlobalSecondaryIndexes",
    "LocalSecondaryIndexes",
    "BillingMode",
    "ProvisionedThroughput",
)

# SAM wants S3 locations for code; local folders are kept in the S3 key of this pretend bucket
# (the same trick `sam validate` uses), so the expanded functions still say where their code is.
LOCAL_CODE_BUCKET = "local-code"


class TemplateError(Exception):
    """The template cannot be expanded (the SAM transform rejected it)."""


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


def table_arguments(properties: dict[str, Any], table_name: str) -> dict[str, Any]:
    """CreateTable keyword arguments from an AWS::DynamoDB::Table's (resolved) properties."""
    arguments: dict[str, Any] = {key: properties[key] for key in _TABLE_KEYS if key in properties}
    if "GlobalSecondaryIndexes" in arguments:
        # An index's capacity settings are the capacity model's (dynamodb_capacity.py), not moto's.
        arguments["GlobalSecondaryIndexes"] = [
            {key: value for key, value in index.items() if key not in _INDEX_CAPACITY_KEYS}
            for index in arguments["GlobalSecondaryIndexes"]
        ]
    arguments["TableName"] = table_name
    return arguments


def create_table_arguments(
    logical_id: str, table_name: str, template: dict[str, Any] | None = None
) -> dict[str, Any]:
    """CreateTable keyword arguments for the table that ``logical_id`` declares."""
    properties = resources_of_type("AWS::DynamoDB::Table", template)[logical_id]["Properties"]
    return table_arguments(properties, table_name)


def expand_sam(
    template: dict[str, Any], stack_name: str, region: str, parameters: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The template with the SAM transform applied by aws-sam-translator (the library SAM itself
    uses): Globals merged into functions, Api events into a RestApi, SNS events into
    subscriptions, Schedule events into rules. Intrinsic functions are left for the caller.

    ``parameters`` (overrides of the template's defaults) reach the transform as CloudFormation
    passes them: SAM resolves a few properties itself, e.g. an Api's Auth (the default authorizer)."""
    sam = copy.deepcopy(template)
    for resource in sam["Resources"].values():
        properties = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(key), str):
                properties[key] = f"s3://{LOCAL_CODE_BUCKET}/{properties[key]}"
    try:
        return sam_transform(
            sam, {**(parameters or {}), "AWS::StackName": stack_name, "AWS::Region": region}, region
        )
    except InvalidDocumentException as exc:
        causes = "; ".join(str(cause) for cause in exc.causes)
        raise TemplateError(f"The SAM transform rejected the template: {causes}") from exc


def sam_transform(
    template: dict[str, Any], parameter_values: Mapping[str, Any], region: str
) -> dict[str, Any]:
    """``template`` as the AWS::Serverless-2016-10-31 transform leaves it, by aws-sam-translator
    (the library SAM and CloudFormation's transform use), with ``parameter_values`` (pseudo
    parameters such as AWS::StackName included); InvalidDocumentException when SAM refuses it. The
    one transform of both the local stack (expand_sam) and `sam deploy` to the embedded AWS."""
    # Without SAM's hosted feature-toggle configuration, the translator warns about each feature
    # it looks up ("Feature ... not available in Feature Toggle Config"): nothing about this stack.
    logging.getLogger("samtranslator.feature_toggle").setLevel(logging.ERROR)
    translator = Translator(None, Parser(), boto_session=boto3.Session(region_name=region))
    # The managed policies named in a function's Policies would come from IAM; this project names
    # none (SAM adds AWSLambdaBasicExecutionRole and friends by ARN itself).
    return translator.translate(
        copy.deepcopy(template), parameter_values=dict(parameter_values), get_managed_policy_map=dict
    )
