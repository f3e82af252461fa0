"""`python -m stack_tools ...`: the steps of `make deploy` and `make delete` that need Python."""

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
from samtranslator.yaml_helper import yaml_parse

from stack_tools.concurrency import check_quota, parameter_overrides, template_reservations
from stack_tools.edge_preflight import EdgePlan, refusals, warnings
from stack_tools.stacks import (
    StackToolError,
    buckets_deleted_with,
    deploy_parameters,
    empty_bucket,
    kept_on_delete,
    stack_name_of,
    stack_status,
)


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit code says how it went."""
    parser = argparse.ArgumentParser(prog="python -m stack_tools")
    commands = parser.add_subparsers(dest="command", required=True)
    configured = commands.add_parser(
        "configured", help="exit 0 when samconfig.toml has deploy parameters for the environment"
    )
    delete = commands.add_parser("delete", help="delete a stack with sam delete, and say what it keeps")
    for command in (configured, delete):
        command.add_argument("--config-file", type=Path, default=Path("samconfig.toml"))
        command.add_argument("--config-env", default="default")
    delete.add_argument("--stack-name", default="", help="default: samconfig.toml's stack_name")
    delete.add_argument("--sam", default="sam", help="the sam executable")
    quota = commands.add_parser(
        "check-quota",
        help="exit 1, saying the quota to ask for, when the reserved concurrency does not fit the account",
    )
    quota.add_argument("--config-file", type=Path, default=Path("samconfig.toml"))
    quota.add_argument("--config-env", default="default")
    quota.add_argument("--template", type=Path, default=Path("template.yaml"))
    edge = commands.add_parser(
        "check-edge",
        help=(
            "exit 1, saying what to pass, when the edge's us-east-1 parts or the domains' "
            "app-site associations would make the deploy fail"
        ),
    )
    edge.add_argument("--config-file", type=Path, default=Path("samconfig.toml"))
    edge.add_argument("--config-env", default="default")
    edge.add_argument("--region", default="", help="default: samconfig.toml's region, else the AWS profile's")
    args, extra = parser.parse_known_args(argv)
    try:
        if args.command == "configured":
            return 0 if deploy_parameters(args.config_file, args.config_env) else 1
        if args.command == "check-quota":
            return _check_quota(args, extra)
        if args.command == "check-edge":
            return _check_edge(args, extra)
        return _delete(args, extra)
    except StackToolError as exc:
        print(f"stack_tools: {exc}", file=sys.stderr)
        return 2


def _deploy_arguments(
    configured: dict[str, Any], sam_arguments: list[str]
) -> tuple[dict[str, str], str, str]:
    """The parameter overrides, stack name and region of a deploy: samconfig.toml's, then the
    command line's."""
    overrides = parameter_overrides(str(configured.get("parameter_overrides", "")))
    stack_name = str(configured.get("stack_name", ""))
    region = str(configured.get("region", ""))
    option = ""
    for argument in sam_arguments:
        if argument.startswith("--"):
            option = argument
        elif option == "--parameter-overrides":
            # sam takes one quoted string or several Key=Value arguments.
            overrides |= parameter_overrides(argument)
        elif option == "--stack-name":
            stack_name = argument
        elif option == "--region":
            region = argument
    return overrides, stack_name, region


def _check_edge(args: argparse.Namespace, sam_arguments: list[str]) -> int:
    """The edge's certificate and web ACL against the region they must be in."""
    configured = deploy_parameters(args.config_file, args.config_env)
    overrides, _, region = _deploy_arguments(configured, sam_arguments)
    region = args.region or region or boto3.session.Session().region_name or "us-east-1"
    plan = EdgePlan.of(region, overrides)
    for warning in warnings(plan):
        print(f"stack_tools: warning: {warning}", file=sys.stderr)
    problems = refusals(plan)
    for problem in problems:
        print(f"stack_tools: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"The edge's parts fit a deploy to {region} (Edge={plan.edge}).")
    return 0


def _check_quota(args: argparse.Namespace, sam_arguments: list[str]) -> int:
    """The deploy's reserved concurrency against ``lambda get-account-settings``."""
    configured = deploy_parameters(args.config_file, args.config_env)
    overrides, stack_name, _ = _deploy_arguments(configured, sam_arguments)
    template = yaml_parse(args.template.read_text(encoding="utf-8"))
    reserved = sum(template_reservations(template, overrides).values())
    lambda_client = boto3.client("lambda")
    held = _held_by_stack(stack_name, boto3.client("cloudformation"), lambda_client) if stack_name else 0
    check = check_quota(reserved, lambda_client.get_account_settings(), held)
    if check.fits:
        print(f"Reserved concurrency {reserved} fits the account's quota of {check.quota}.")
        return 0
    print(f"stack_tools: {check.message()}", file=sys.stderr)
    return 1


def _held_by_stack(stack_name: str, cloudformation: Any, lambda_client: Any) -> int:
    """What the stack's functions reserve today (0 when it does not exist yet)."""
    try:
        pages = list(cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name))
    except cloudformation.exceptions.ClientError:
        return 0
    held = 0
    for page in pages:
        for summary in page["StackResourceSummaries"]:
            if summary["ResourceType"] == "AWS::Lambda::Function" and summary.get("PhysicalResourceId"):
                answer = lambda_client.get_function_concurrency(FunctionName=summary["PhysicalResourceId"])
                held += int(answer.get("ReservedConcurrentExecutions") or 0)
    return held


def _delete(args: argparse.Namespace, sam_arguments: list[str]) -> int:
    stack_name = args.stack_name or stack_name_of(args.config_file, args.config_env)
    cloudformation = boto3.client("cloudformation")
    # Read before deleting: afterwards the stack's template and resources are gone.
    kept = kept_on_delete(stack_name, cloudformation)
    buckets = buckets_deleted_with(stack_name, cloudformation)
    command = [args.sam, "delete", "--stack-name", stack_name, *sam_arguments]
    if args.config_file.is_file():
        command += ["--config-file", str(args.config_file.resolve()), "--config-env", args.config_env]
    returncode = subprocess.run(command, check=False).returncode
    if returncode != 0 and buckets and stack_status(stack_name, cloudformation) == "DELETE_FAILED":
        # S3 refuses to delete a bucket that holds objects, so the stack ends DELETE_FAILED. The
        # stack's bucket holds only job files (uploads and results files, which expire with their
        # jobs; the jobs table is gone with the stack): once the deletion was confirmed, they are
        # deleted, saying how many, and the deletion is run again.
        s3 = boto3.client("s3")
        emptied = {bucket: empty_bucket(bucket, s3) for bucket in buckets}
        if any(emptied.values()):
            for bucket, files in emptied.items():
                print(f"\nEmptied bucket {bucket}: {files} job files (uploads and results files of its jobs)")
            again = [*command, *([] if "--no-prompts" in command else ["--no-prompts"])]
            returncode = subprocess.run(again, check=False).returncode
    if returncode != 0:
        return returncode
    if kept:
        print(f"\nKept (DeletionPolicy: Retain), so no link or key is lost with stack {stack_name}:")
        for resource in kept:
            print(f"  {resource.logical_id:<14} {resource.resource_type:<24} {resource.physical_id}")
        print("A new stack starts with an empty table; to remove a kept table for good:")
        for resource in kept:
            print(f"  {resource.removal_hint()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
