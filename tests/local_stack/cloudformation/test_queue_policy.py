"""AWS::SQS::QueuePolicy, which moto's CloudFormation skips: the local provider sets the document
as each queue's Policy attribute and removes it on delete."""

import json

import boto3

from local_stack.sqs.resource_types import QueuePolicyProvider

POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "events.amazonaws.com"},
            "Action": "sqs:SendMessage",
            "Resource": "*",
        }
    ],
}


def test_a_queue_policy_is_each_queues_policy_until_deleted(moto: None) -> None:
    sqs = boto3.client("sqs")
    urls = [sqs.create_queue(QueueName=name)["QueueUrl"] for name in ("first", "second")]
    provider = QueuePolicyProvider()
    created = provider.create(
        "QueuesPolicy", {"Queues": urls, "PolicyDocument": POLICY}, "123456789012", "us-east-1"
    )
    for url in urls:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])["Attributes"]
        assert json.loads(attributes["Policy"]) == POLICY
    provider.delete(created, "123456789012", "us-east-1")
    for url in urls:
        assert "Attributes" not in sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])
