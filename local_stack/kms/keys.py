"""KMS key policies, for what AWS services do with keys on the stack's behalf: today, CloudWatch
publishing an alarm's notification to an encrypted SNS topic.

To publish to a topic encrypted with a KMS key, the publisher needs kms:GenerateDataKey* and
kms:Decrypt on the key (SNS developer guide, "Configuring AWS KMS permissions"). For an alarm
action the publisher is CloudWatch's service principal, `cloudwatch.amazonaws.com`, so only a key
whose key policy grants that principal both actions works; the AWS managed key `alias/aws/sns`
does not, and its policy cannot be changed (AWS knowledge center "cloudwatch-configure-alarm-sns").

Keys come from the template (`AWS::KMS::Key` with its `KeyPolicy`, `AWS::KMS::Alias`); the AWS
managed keys (`alias/aws/<service>`) have the policy AWS gives them: usable by the account's
principals only through that service (`kms:CallerAccount` and `kms:ViaService` conditions, KMS
developer guide, "AWS managed keys"). A service principal has no caller account, so that
statement never admits CloudWatch. A key the stack does not know is refused."""

from dataclasses import dataclass

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudformation.resources import KMS_ALIAS, KMS_KEY, Resources
from local_stack.iam.policy import Caller, Decision, Policy, Request, evaluate

AWS_MANAGED_ALIAS_PREFIX = "alias/aws/"
# What a publisher to an encrypted topic needs on its key.
PUBLISH_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")


def aws_managed_key_policy(service: str, region: str, account: str = ACCOUNT_ID) -> dict[str, object]:
    """The key policy of the AWS managed key ``alias/aws/<service>``."""
    return {
        "Version": "2012-10-17",
        "Id": f"auto-{service}",
        "Statement": [
            {
                "Sid": f"Allow access through {service} for all principals in the account",
                "Effect": "Allow",
                "Principal": {"AWS": "*"},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey*", "kms:CreateGrant", "kms:DescribeKey"],
                "Resource": "*",
                "Condition": {
                    "StringEquals": {
                        "kms:CallerAccount": account,
                        "kms:ViaService": f"{service}.{region}.amazonaws.com",
                    }
                },
            },
            {
                "Sid": "Allow direct access to key metadata to the account",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
                "Action": ["kms:Describe*", "kms:Get*", "kms:List*"],
                "Resource": "*",
            },
        ],
    }


@dataclass(frozen=True)
class Key:
    """A KMS key: its ARN and its key policy."""

    arn: str
    policy: Policy


class KeyRing:
    """The keys a topic's KmsMasterKeyId can name: by key id, key ARN, alias name or alias ARN."""

    def __init__(
        self, region: str, keys: dict[str, Key] | None = None, aliases: dict[str, str] | None = None
    ):
        self.region = region
        self._keys = keys or {}  # key id -> key
        self._aliases = aliases or {}  # alias name -> key id or key ARN

    @classmethod
    def from_resources(cls, resources: Resources) -> "KeyRing":
        """The template's keys and aliases."""
        keys = {
            resources.physical_id(logical_id): Key(
                resources.resolver.get_att(logical_id, "Arn"),
                Policy.parse(properties.get("KeyPolicy", {"Statement": []}), logical_id),
            )
            for logical_id, properties in resources.of_type(KMS_KEY).items()
        }
        aliases = {
            str(properties["AliasName"]): str(properties["TargetKeyId"])
            for properties in resources.of_type(KMS_ALIAS).values()
        }
        return cls(resources.region, keys, aliases)

    def key(self, key_ref: str) -> Key | None:
        """The key that a key id, key ARN, alias name or alias ARN designates, or None."""
        reference = key_ref.split(":", 5)[-1] if key_ref.startswith("arn:") else key_ref
        if reference.startswith(AWS_MANAGED_ALIAS_PREFIX):
            service = reference.removeprefix(AWS_MANAGED_ALIAS_PREFIX)
            arn = f"arn:aws:kms:{self.region}:{ACCOUNT_ID}:{reference}"
            return Key(arn, Policy.parse(aws_managed_key_policy(service, self.region), reference))
        if reference.startswith("alias/"):
            target = self._aliases.get(reference)
            return self.key(target) if target else None
        return self._keys.get(reference.removeprefix("key/"))

    def service_may_use(self, key_ref: str, service: str, actions: tuple[str, ...], via: str) -> bool:
        """Whether the key policy lets the AWS service principal ``service`` run every one of
        ``actions`` on the key, through the AWS service ``via`` (sns)."""
        key = self.key(key_ref)
        if key is None:
            return False
        caller = Caller(service=service)
        context = {"kms:ViaService": [f"{via}.{self.region}.amazonaws.com"]}
        return all(
            evaluate([key.policy], Request(action, key.arn, caller, context)) is Decision.ALLOW
            for action in actions
        )
