"""`shortener keys create|list|revoke`: API keys of a deployed stack (found by its CloudFormation
outputs, with the caller's AWS credentials) or of the local stack (found by its ``stack.json``)."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from shortener.access.keys import KeyManager
from shortener.access.model import ApiKey
from shortener.services import keys as stack_keys
from shortener_cli.config import LocalStack


class TargetError(Exception):
    """The stack to manage keys of cannot be found or is not a shortener with keys."""


@dataclass(frozen=True)
class Target:
    """A stack whose keys are managed: its name, outputs and a boto3 session to reach it."""

    stack_name: str
    outputs: Mapping[str, str]
    session: boto3.session.Session
    endpoint_url: str | None = None

    def manager(self) -> KeyManager:
        """The key logic over this stack's keys table and usage plan."""
        missing = stack_keys.missing_outputs(self.outputs)
        if missing:
            raise TargetError(
                f"stack {self.stack_name} has no {', '.join(missing)} output: is it a shortener with keys?"
            )
        client_args: dict[str, Any] = {"endpoint_url": self.endpoint_url} if self.endpoint_url else {}
        return stack_keys.key_manager(
            self.outputs,
            self.stack_name,
            self.session.client("apigateway", **client_args),
            self.session.client("dynamodb", **client_args),
            actor=self.operator(client_args),
        )

    def operator(self, client_args: Mapping[str, Any]) -> str:
        """Who runs the command, as the audit log names them: ``cli:<the credentials' ARN>``."""
        try:
            identity = self.session.client("sts", **client_args).get_caller_identity()
        except (BotoCoreError, ClientError):
            return "cli"
        return f"cli:{identity['Arn']}"


def deployed_target(stack_name: str, region: str | None) -> Target:
    """A deployed stack, by its name: its outputs from CloudFormation."""
    session = boto3.session.Session(region_name=region)
    stacks = session.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stacks[0].get("Outputs", [])}
    return Target(stack_name, outputs, session)


def local_target(stack: LocalStack) -> Target:
    """A running local stack: its outputs and embedded AWS from its ``stack.json`` (any
    credentials do there)."""
    info = stack.info
    session = boto3.session.Session(
        region_name=str(info.get("region", "us-east-1")),
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 - the embedded AWS accepts any credentials
    )
    name = str(info.get("stack_name") or "shortener-local")
    return Target(name, dict(info.get("outputs") or {}), session, str(info["aws_endpoint"]))


def key_view(key: ApiKey) -> dict[str, Any]:
    """A key's record as ``--json`` prints it: never its hash nor its usage plan key."""
    return key.model_dump(mode="json", exclude={"key_hash", "usage_key"})


def format_keys(keys: list[ApiKey]) -> str:
    """A table of keys for a terminal (never the keys themselves: only their ids)."""
    if not keys:
        return "No keys."
    rows = [("KEY ID", "NAME", "OWNER", "ROLE", "CREATED", "STATUS")]
    for key in keys:
        status = f"revoked {key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked and key.revoked_at else "active"
        if key.revoked and not key.revoked_at:
            status = "revoked"
        rows.append(
            (key.key_id, key.name, key.owner_id, key.role, f"{key.created_at:%Y-%m-%d %H:%M}", status)
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    )
