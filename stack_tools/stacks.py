"""A deployed stack, read through CloudFormation: its outputs and the resources its deletion keeps."""

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from samtranslator.yaml_helper import yaml_parse


class StackToolError(Exception):
    """A stack or configuration that the tools cannot use, with a sentence for a person."""


def deploy_parameters(config_file: Path, config_env: str) -> dict[str, Any]:
    """The ``[<env>.deploy.parameters]`` of a samconfig.toml, with the env's global parameters
    (stack_name lives there); empty when the env has never been deployed (guided deploy first)."""
    if not config_file.is_file():
        return {}
    config = tomllib.loads(config_file.read_text(encoding="utf-8"))
    environment = config.get(config_env, {})
    deploy = environment.get("deploy", {}).get("parameters", {})
    if not deploy:
        return {}
    return {**environment.get("global", {}).get("parameters", {}), **deploy}


def stack_name_of(config_file: Path, config_env: str) -> str:
    """The stack name samconfig.toml gives an environment."""
    name = deploy_parameters(config_file, config_env).get("stack_name")
    if not name:
        raise StackToolError(
            f"{config_file} has no stack_name for environment {config_env!r}: pass STACK=<stack name>"
        )
    return str(name)


def outputs_of(stack_name: str, cloudformation: Any) -> dict[str, str]:
    """The stack's outputs, by key (``describe_stacks``)."""
    try:
        [stack] = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except cloudformation.exceptions.ClientError as exc:
        raise StackToolError(f"No stack {stack_name!r} here: {exc}") from exc
    return {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}


@dataclass(frozen=True)
class KeptResource:
    """A resource that deleting the stack leaves behind (DeletionPolicy: Retain)."""

    logical_id: str
    resource_type: str
    physical_id: str

    def removal_hint(self) -> str:
        """The command that removes it, once nobody needs it any more."""
        if self.resource_type == "AWS::DynamoDB::Table":
            table = self.physical_id
            return (
                f"aws dynamodb update-table --table-name {table} --no-deletion-protection-enabled; "
                f"aws dynamodb delete-table --table-name {table}"
            )
        return f"delete {self.physical_id} with the {self.resource_type.split('::')[1]} console or CLI"


def kept_on_delete(stack_name: str, cloudformation: Any) -> list[KeptResource]:
    """The stack's resources whose DeletionPolicy is Retain (read from its processed template)."""
    body = cloudformation.get_template(StackName=stack_name, TemplateStage="Processed")["TemplateBody"]
    template = body if isinstance(body, dict) else _parse(body)
    retained = {
        logical_id: resource["Type"]
        for logical_id, resource in template.get("Resources", {}).items()
        if resource.get("DeletionPolicy") == "Retain"
    }
    physical: dict[str, str] = {}
    paginator = cloudformation.get_paginator("list_stack_resources")
    for page in paginator.paginate(StackName=stack_name):
        for summary in page["StackResourceSummaries"]:
            physical[summary["LogicalResourceId"]] = summary.get("PhysicalResourceId", "")
    return [
        KeptResource(logical_id, resource_type, physical.get(logical_id, "(not created)"))
        for logical_id, resource_type in sorted(retained.items())
    ]


def stack_status(stack_name: str, cloudformation: Any) -> str | None:
    """The stack's status (DELETE_FAILED, ...), None when there is no such stack any more."""
    try:
        [stack] = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except cloudformation.exceptions.ClientError:
        return None
    return str(stack["StackStatus"])


def buckets_deleted_with(stack_name: str, cloudformation: Any) -> list[str]:
    """The names of the stack's S3 buckets that its deletion deletes (not DeletionPolicy: Retain)."""
    body = cloudformation.get_template(StackName=stack_name, TemplateStage="Processed")["TemplateBody"]
    template = body if isinstance(body, dict) else _parse(body)
    deleted = {
        logical_id
        for logical_id, resource in template.get("Resources", {}).items()
        if resource["Type"] == "AWS::S3::Bucket" and resource.get("DeletionPolicy") != "Retain"
    }
    names = []
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name):
        for summary in page["StackResourceSummaries"]:
            if summary["LogicalResourceId"] in deleted and summary.get("PhysicalResourceId"):
                names.append(summary["PhysicalResourceId"])
    return sorted(names)


def empty_bucket(bucket: str, s3: Any) -> int:
    """Delete every object of ``bucket`` (every version and delete marker: S3 refuses to delete a
    bucket until they are all gone, Amazon S3 API Reference, DeleteBucket); how many were deleted.
    0 when the bucket does not exist."""
    deleted = 0
    try:
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            objects = [
                {"Key": entry["Key"], "VersionId": entry["VersionId"]}
                for entry in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
            ]
            # DeleteObjects takes at most 1,000 keys a call; a page holds at most 1,000.
            if objects:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
                deleted += len(objects)
    except s3.exceptions.NoSuchBucket:
        return 0
    return deleted


def _parse(body: str) -> dict[str, Any]:
    try:
        return dict(json.loads(body))
    except json.JSONDecodeError:
        return dict(yaml_parse(body))
