"""Who each function is, and what its role allows: read from the SAM-expanded template.

aws-sam-translator turns a function's `Policies` (statements, SAM policy templates, managed policy
names) into an `AWS::IAM::Role` with inline `Policies` and `ManagedPolicyArns`, and sets the
function's `Role` to it. This reads those roles, plus `AWS::IAM::Policy` and
`AWS::IAM::ManagedPolicy` resources attached to them, with every intrinsic resolved to the local
stack's names; and the AWS managed policies that SAM attaches by itself, whose documents are below
(AWS Managed Policy Reference Guide).

Each function's execution environments get credentials of their own, as Lambda gives each
function its role's session credentials: the access key id names the function, which is how the
local stack knows who is calling; the secret is the stack's own, random (signing_secret.py), and
the signatures of presigned URLs are checked against it."""

import base64
import hashlib
import logging
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudformation.resources import IAM_POLICY, MANAGED_POLICY, ROLE, Resources
from local_stack.iam.policy import Caller, Policy, PolicyError

log = logging.getLogger(__name__)

# The documents of the AWS managed policies that SAM attaches to function roles.
AWS_MANAGED_POLICIES: dict[str, dict[str, Any]] = {
    # Attached to every function's role (CloudWatch Logs).
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "*",
            }
        ],
    },
    # Attached for an SQS event (the event source mapping reads the queue with the role's
    # permissions; AWS Managed Policy Reference, "AWSLambdaSQSQueueExecutionRole").
    "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "sqs:ReceiveMessage",
                    "sqs:DeleteMessage",
                    "sqs:GetQueueAttributes",
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:PutLogEvents",
                ],
                "Resource": "*",
            }
        ],
    },
    # Attached when `Tracing: Active`.
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "xray:PutTraceSegments",
                    "xray:PutTelemetryRecords",
                    "xray:GetSamplingRules",
                    "xray:GetSamplingTargets",
                    "xray:GetSamplingStatisticSummaries",
                ],
                "Resource": ["*"],
            }
        ],
    },
}


def function_access_key(function_name: str) -> str:
    """The access key id of ``function_name``'s execution environments: ASIA (a session key, as
    Lambda's are) and 16 characters derived from the name, the same on every start."""
    digest = base64.b32encode(hashlib.sha256(f"lambda:{function_name}".encode()).digest()).decode()
    return "ASIA" + digest[:16]


def function_credentials(function_name: str, secret: str) -> dict[str, str]:
    """The credential variables Lambda sets for a function, with the function's own key and the
    stack's secret (signing_secret.py)."""
    return {
        "AWS_ACCESS_KEY_ID": function_access_key(function_name),
        "AWS_SECRET_ACCESS_KEY": secret,
    }


@dataclass(frozen=True)
class Principal:
    """A function's role session: its identity in error messages and the policies it holds."""

    function_name: str
    role_name: str
    role_arn: str
    policies: tuple[Policy, ...]
    account: str = ACCOUNT_ID

    @property
    def arn(self) -> str:
        """The assumed-role ARN that AWS names in an AccessDenied message."""
        return f"arn:aws:sts::{self.account}:assumed-role/{self.role_name}/{self.function_name}"

    @cached_property
    def access_key(self) -> str:
        return function_access_key(self.function_name)

    def context(self, region: str) -> dict[str, list[str]]:
        """The global condition keys AWS puts in every request of a Lambda role session (IAM User
        Guide, "AWS global condition context keys"; Lambda reaches AWS over HTTPS)."""
        return {
            "aws:PrincipalArn": [self.role_arn],
            "aws:PrincipalAccount": [self.account],
            "aws:PrincipalType": ["AssumedRole"],
            "aws:RequestedRegion": [region],
            "aws:SecureTransport": ["true"],
        }

    @property
    def caller(self) -> Caller:
        """This principal as resource-based policies see it."""
        return Caller(account=self.account, arns=(self.role_arn, self.arn))


@dataclass
class Principals:
    """Every function's principal, by access key, and what could not be read."""

    by_access_key: dict[str, Principal] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def function_principals(resources: Resources) -> Principals:
    """The principal of every function that runs, from its role in the template.

    A function whose role is not in the template (a literal ARN of a role made elsewhere) cannot
    be judged and is left unrestricted, with a warning; a managed policy that is neither one of
    AWS_MANAGED_POLICIES nor in the template grants nothing, with a warning. A policy that cannot be
    evaluated faithfully stops the start (PolicyError)."""
    found = Principals()
    roles = {
        resources.resolver.get_att(logical_id, "Arn"): logical_id for logical_id in resources.of_type(ROLE)
    }
    for logical_id, spec in resources.functions.items():
        role_arn = str(resources.properties(logical_id).get("Role", ""))
        role_id = roles.get(role_arn)
        if role_id is None:
            found.warnings.append(
                f"{logical_id}: its role {role_arn or '(none)'} is not in the template; not restricted"
            )
            continue
        policies = _role_policies(resources, role_id, found.warnings)
        principal = Principal(spec.name, resources.physical_id(role_id), role_arn, policies)
        found.by_access_key[principal.access_key] = principal
    return found


def _role_policies(resources: Resources, role_id: str, warnings: list[str]) -> tuple[Policy, ...]:
    properties = resources.properties(role_id)
    policies = [
        _parse(inline["PolicyDocument"], f"{role_id}/{inline.get('PolicyName', '')}")
        for inline in properties.get("Policies", [])
    ]
    managed = {
        resources.physical_id(logical_id): policy.get("PolicyDocument", {})
        for logical_id, policy in resources.of_type(MANAGED_POLICY).items()
    }
    for arn in properties.get("ManagedPolicyArns", []):
        document = AWS_MANAGED_POLICIES.get(arn) or managed.get(arn)
        if document is None:
            warnings.append(
                f"{role_id}: managed policy {arn} is unknown to the local stack; it grants nothing here"
            )
            continue
        policies.append(_parse(document, arn))
    # Policies that name the role themselves (AWS::IAM::Policy, AWS::IAM::ManagedPolicy's Roles).
    role_name = resources.physical_id(role_id)
    for kind in (IAM_POLICY, MANAGED_POLICY):
        for logical_id, policy in resources.of_type(kind).items():
            if role_name in policy.get("Roles", []):
                policies.append(_parse(policy["PolicyDocument"], logical_id))
    return tuple(policies)


def _parse(document: Any, name: str) -> Policy:
    try:
        return Policy.parse(document, name)
    except PolicyError:
        log.error(
            "IAM policy %s cannot be evaluated by the local stack (run with --no-iam to skip IAM)", name
        )
        raise
