"""Alarm actions on encrypted topics, on the embedded AWS: CloudWatch publishes only where the
topic's key lets it, and the alarm's history (DescribeAlarmHistory) records each action's outcome."""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudwatch.alarms import KMS_ACTION_ERROR, AlarmEvaluation, AlarmEvaluator, AlarmSpec
from local_stack.embedded.client import aws_client
from local_stack.embedded.server import EmbeddedAws
from local_stack.iam.policy import Policy
from local_stack.kms.keys import Key, KeyRing

pytestmark = pytest.mark.integration

REGION = "us-east-1"
KEY_ID = "0f0e0d0c-0b0a-4909-8807-060504030201"
CLOUDWATCH_MAY_USE = {
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "cloudwatch.amazonaws.com"},
            "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
            "Resource": "*",
        }
    ]
}
KEYS = KeyRing(
    REGION, {KEY_ID: Key(f"arn:aws:kms:{REGION}:{ACCOUNT_ID}:key/{KEY_ID}", Policy.parse(CLOUDWATCH_MAY_USE))}
)


@pytest.fixture(scope="module")
def aws() -> Iterator[EmbeddedAws]:
    server = EmbeddedAws(0)
    server.start()
    aws_client("sqs", server.url, REGION).create_queue(QueueName="alarm-watched")
    yield server
    server.stop()


def topic_with_inbox(aws: EmbeddedAws, name: str, key: str | None) -> tuple[str, str]:
    """A topic (encrypted with ``key``) and the URL of a queue subscribed to it."""
    sns, sqs = aws_client("sns", aws.url, REGION), aws_client("sqs", aws.url, REGION)
    topic = sns.create_topic(Name=name, Attributes={"KmsMasterKeyId": key} if key else {})["TopicArn"]
    inbox = sqs.create_queue(QueueName=f"{name}-inbox")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=inbox_arn)
    return topic, inbox


def breaching_alarm(aws: EmbeddedAws, name: str, topic: str) -> AlarmSpec:
    """An alarm on the watched queue whose first datapoint (0 messages) breaches."""
    properties: dict[str, Any] = {
        "Namespace": "AWS/SQS",
        "MetricName": "ApproximateNumberOfMessagesVisible",
        "Dimensions": [{"Name": "QueueName", "Value": "alarm-watched"}],
        "Statistic": "Maximum",
        "Period": 60,
        "EvaluationPeriods": 1,
        "Threshold": -1.0,
        "ComparisonOperator": "GreaterThanThreshold",
        "AlarmActions": [topic],
    }
    aws_client("cloudwatch", aws.url, REGION).put_metric_alarm(AlarmName=name, **properties)
    arn = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT_ID}:alarm:{name}"
    return AlarmSpec.from_properties(name, arn, properties)


def fire(aws: EmbeddedAws, spec: AlarmSpec) -> None:
    evaluator = AlarmEvaluator([spec], aws.url, REGION, time_scale=1.0, keys=KEYS)
    transition = evaluator.evaluate(AlarmEvaluation(spec))
    assert transition is not None and transition.new == "ALARM"


def delivered(aws: EmbeddedAws, inbox: str) -> list[dict[str, Any]]:
    messages = aws_client("sqs", aws.url, REGION).receive_message(QueueUrl=inbox, WaitTimeSeconds=0)
    return [json.loads(message["Body"]) for message in messages.get("Messages", [])]


def actions_in_history(aws: EmbeddedAws, alarm: str) -> list[str]:
    history = aws_client("cloudwatch", aws.url, REGION).describe_alarm_history(
        AlarmName=alarm, HistoryItemType="Action"
    )
    return [item["HistorySummary"] for item in history["AlarmHistoryItems"]]


def test_an_action_on_a_topic_under_the_aws_managed_key_fails_and_history_says_why(aws: EmbeddedAws) -> None:
    # Given an alarm whose action is a topic encrypted with alias/aws/sns
    topic, inbox = topic_with_inbox(aws, "managed-key", "alias/aws/sns")
    spec = breaching_alarm(aws, "on-managed-key", topic)
    # When it goes to ALARM
    fire(aws, spec)
    # Then nothing is published, and the history records CloudWatch's failure
    assert delivered(aws, inbox) == []
    assert actions_in_history(aws, "on-managed-key") == [
        f'Failed to execute action {topic}. Received error: "{KMS_ACTION_ERROR}"'
    ]


def test_an_action_on_a_topic_under_a_key_granting_cloudwatch_publishes(aws: EmbeddedAws) -> None:
    topic, inbox = topic_with_inbox(aws, "granting-key", KEY_ID)
    spec = breaching_alarm(aws, "on-granting-key", topic)
    fire(aws, spec)
    [notification] = delivered(aws, inbox)
    assert json.loads(notification["Message"])["NewStateValue"] == "ALARM"
    assert actions_in_history(aws, "on-granting-key") == [f"Successfully executed action {topic}"]


def test_an_action_on_an_unencrypted_topic_publishes(aws: EmbeddedAws) -> None:
    topic, inbox = topic_with_inbox(aws, "plain", None)
    fire(aws, breaching_alarm(aws, "on-plain", topic))
    assert len(delivered(aws, inbox)) == 1


def test_the_history_records_the_state_update_too(aws: EmbeddedAws) -> None:
    topic, _ = topic_with_inbox(aws, "for-history", None)
    fire(aws, breaching_alarm(aws, "with-history", topic))
    history = aws_client("cloudwatch", aws.url, REGION).describe_alarm_history(
        AlarmName="with-history", HistoryItemType="StateUpdate"
    )["AlarmHistoryItems"]
    assert [item["HistorySummary"] for item in history] == ["Alarm updated from INSUFFICIENT_DATA to ALARM"]
    assert json.loads(history[0]["HistoryData"])["newState"]["stateValue"] == "ALARM"
