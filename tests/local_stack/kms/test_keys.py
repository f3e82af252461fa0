"""Key policies for alarm actions: CloudWatch may publish to an encrypted topic only when the key
policy lets cloudwatch.amazonaws.com use the key; never with the AWS managed alias/aws/sns."""

from typing import Any

from local_stack.cloudformation.intrinsics import Resolver
from local_stack.cloudformation.resources import name_resources
from local_stack.iam.policy import Policy
from local_stack.kms.keys import PUBLISH_ACTIONS, Key, KeyRing

REGION, ACCOUNT = "us-east-1", "123456789012"
KEY_ID = "1234abcd-12ab-34cd-56ef-1234567890ab"
KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{KEY_ID}"
ROOT = {
    "Effect": "Allow",
    "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
    "Action": "kms:*",
    "Resource": "*",
}
CLOUDWATCH = {
    "Sid": "Allow_CloudWatch_for_CMK",
    "Effect": "Allow",
    "Principal": {"Service": ["cloudwatch.amazonaws.com"]},
    "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
    "Resource": "*",
}


def ring(*statements: dict[str, Any]) -> KeyRing:
    key = Key(KEY_ARN, Policy.parse({"Statement": list(statements)}))
    return KeyRing(REGION, {KEY_ID: key}, {"alias/alarms": KEY_ID})


def cloudwatch_may_publish(keys: KeyRing, key_ref: str) -> bool:
    return keys.service_may_use(key_ref, "cloudwatch.amazonaws.com", PUBLISH_ACTIONS, via="sns")


def test_the_aws_managed_sns_key_does_not_let_cloudwatch_publish() -> None:
    keys = ring(ROOT, CLOUDWATCH)
    assert not cloudwatch_may_publish(keys, "alias/aws/sns")
    assert not cloudwatch_may_publish(keys, f"arn:aws:kms:{REGION}:{ACCOUNT}:alias/aws/sns")


def test_a_customer_managed_key_granting_cloudwatch_lets_it_publish() -> None:
    keys = ring(ROOT, CLOUDWATCH)
    # by key id, key ARN, alias name and alias ARN
    for reference in (KEY_ID, KEY_ARN, "alias/alarms", f"arn:aws:kms:{REGION}:{ACCOUNT}:alias/alarms"):
        assert cloudwatch_may_publish(keys, reference), reference


def test_a_customer_managed_key_without_the_grant_does_not() -> None:
    assert not cloudwatch_may_publish(ring(ROOT), KEY_ID)


def test_both_actions_are_needed() -> None:
    decrypt_only = {**CLOUDWATCH, "Action": "kms:Decrypt"}
    assert not cloudwatch_may_publish(ring(ROOT, decrypt_only), KEY_ID)


def test_a_key_the_stack_does_not_know_is_refused() -> None:
    assert not cloudwatch_may_publish(ring(ROOT, CLOUDWATCH), "alias/someone-elses")


def test_keys_and_aliases_come_from_the_template() -> None:
    # Given a template with a customer-managed key granting CloudWatch, an alias, and a topic on it
    template = {
        "Resources": {
            "AlarmKey": {
                "Type": "AWS::KMS::Key",
                "Properties": {"KeyPolicy": {"Statement": [ROOT, CLOUDWATCH]}},
            },
            "AlarmKeyAlias": {
                "Type": "AWS::KMS::Alias",
                "Properties": {"AliasName": "alias/alarms", "TargetKeyId": {"Ref": "AlarmKey"}},
            },
            "Alarms": {"Type": "AWS::SNS::Topic", "Properties": {"KmsMasterKeyId": {"Ref": "AlarmKey"}}},
            "ByArn": {
                "Type": "AWS::SNS::Topic",
                "Properties": {"KmsMasterKeyId": {"Fn::GetAtt": ["AlarmKey", "Arn"]}},
            },
        }
    }
    resolver = Resolver(parameters={}, region=REGION, stack_name="local")
    resources = name_resources(template, resolver, "http://127.0.0.1:1", REGION)
    keys = KeyRing.from_resources(resources)
    # Then the topics' key references (Ref: the key id, GetAtt: its ARN) and the alias find the key
    for topic in ("Alarms", "ByArn"):
        assert cloudwatch_may_publish(keys, resources.properties(topic)["KmsMasterKeyId"]), topic
    assert cloudwatch_may_publish(keys, "alias/alarms")
    assert (
        resources.resolver.get_att("AlarmKey", "Arn")
        == f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{resources.physical_id('AlarmKey')}"
    )
