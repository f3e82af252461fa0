"""EventBridge rules' targets on the local stack (local_stack/events/rules.py) over moto: function
and topic targets get put events, scheduled and disabled rules match none."""

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from local_stack.events import deliver_rule_targets

pytestmark = pytest.mark.integration

FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:receiver"
PATTERN = json.dumps({"source": ["shortener.jobs"]})


@pytest.fixture
def delivered(moto: None) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    calls: list[tuple[str, dict[str, Any]]] = []

    def deliver(arn: str, event: dict[str, Any]) -> bool:
        calls.append((arn, event))
        return True

    undo = deliver_rule_targets(deliver)
    yield calls
    undo()


def put_job_event() -> None:
    answer = boto3.client("events").put_events(
        Entries=[
            {
                "Source": "shortener.jobs",
                "DetailType": "Bulk job ended",
                "Detail": json.dumps({"job_id": "j1"}),
            }
        ]
    )
    assert answer["FailedEntryCount"] == 0


def queue() -> tuple[str, str]:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="receiver")["QueueUrl"]
    return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def received(url: str) -> list[dict[str, Any]]:
    messages = boto3.client("sqs").receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(message["Body"]) for message in messages]


def test_a_function_target_gets_the_event_and_a_scheduled_rule_gets_none(
    delivered: list[tuple[str, dict[str, Any]]],
) -> None:
    # Given a scheduled rule and a rule with a pattern, both with a function target (and a queue)
    events = boto3.client("events")
    url, queue_arn = queue()
    events.put_rule(Name="every-minute", ScheduleExpression="rate(1 minute)")
    events.put_targets(Rule="every-minute", Targets=[{"Id": "f", "Arn": FUNCTION}])
    events.put_rule(Name="jobs", EventPattern=PATTERN)
    events.put_targets(Rule="jobs", Targets=[{"Id": "f", "Arn": FUNCTION}, {"Id": "q", "Arn": queue_arn}])
    # When a matching event is put
    put_job_event()
    # Then the pattern rule's function gets the event once, and its queue too
    assert [(arn, event["detail"]) for arn, event in delivered] == [(FUNCTION, {"job_id": "j1"})]
    assert [body["detail"] for body in received(url)] == [{"job_id": "j1"}]


def test_a_disabled_rule_delivers_nothing(delivered: list[tuple[str, dict[str, Any]]]) -> None:
    events = boto3.client("events")
    events.put_rule(Name="jobs", EventPattern=PATTERN, State="DISABLED")
    events.put_targets(Rule="jobs", Targets=[{"Id": "f", "Arn": FUNCTION}])
    put_job_event()
    assert delivered == []


def test_a_topic_target_publishes_the_event_and_a_constant_input_replaces_it(
    delivered: list[tuple[str, dict[str, Any]]],
) -> None:
    # Given a rule whose targets are a topic (a queue subscribed) and a function with a constant input
    url, queue_arn = queue()
    sns = boto3.client("sns")
    topic = sns.create_topic(Name="jobs")["TopicArn"]
    sns.subscribe(
        TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"}
    )
    events = boto3.client("events")
    events.put_rule(Name="jobs", EventPattern=PATTERN)
    events.put_targets(
        Rule="jobs",
        Targets=[
            {"Id": "t", "Arn": topic},
            {"Id": "f", "Arn": FUNCTION, "Input": json.dumps({"fixed": True})},
        ],
    )
    # When an event is put
    put_job_event()
    # Then the topic's subscriber gets the event, and the function its constant input
    assert [body["detail"] for body in received(url)] == [{"job_id": "j1"}]
    assert delivered == [(FUNCTION, {"fixed": True})]
