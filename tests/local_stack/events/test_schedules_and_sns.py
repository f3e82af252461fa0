"""Schedule rates and event shapes: the scheduled event and the SNS record Lambda receives."""

import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from local_stack.events.schedules import Schedule, Scheduler, rate_seconds, scheduled_event
from local_stack.sns.subscriptions import lambda_event


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [("rate(1 minute)", 60), ("rate(5 minutes)", 300), ("rate(2 hours)", 7200), ("rate(1 day)", 86400)],
)
def test_rate_expressions(expression: str, seconds: int) -> None:
    assert rate_seconds(expression) == seconds


def test_cron_is_not_a_rate() -> None:
    assert rate_seconds("cron(0 12 * * ? *)") is None


def test_the_scheduled_event_has_eventbridges_shape() -> None:
    rule = "arn:aws:events:us-east-1:123456789012:rule/local-Revive"
    event = scheduled_event(rule, "us-east-1", datetime(2026, 11, 22, 10, 0, 5, tzinfo=UTC))
    assert event["detail-type"] == "Scheduled Event"
    assert event["source"] == "aws.events"
    assert event["resources"] == [rule]
    assert event["time"] == "2026-11-22T10:00:05Z"
    assert (event["account"], event["region"], event["detail"]) == ("123456789012", "us-east-1", {})


def test_an_http_notification_becomes_the_lambda_sns_event() -> None:
    topic = "arn:aws:sns:us-east-1:123456789012:local-Scaling"
    notification = {
        "Type": "Notification",
        "MessageId": "m-1",
        "TopicArn": topic,
        "Subject": 'ALARM: "x" in US East (N. Virginia)',
        "Message": '{"NewStateValue": "ALARM"}',
        "Timestamp": "2026-11-22T10:00:00.000Z",
        "SignatureVersion": "2",
        "Signature": "sig",
        "SigningCertURL": "https://sns/cert.pem",
        "UnsubscribeURL": f"http://sns/?Action=Unsubscribe&SubscriptionArn={topic}:sub-1",
    }
    event = lambda_event(notification)
    (record,) = event["Records"]
    assert record["EventSource"] == "aws:sns"
    assert record["EventSubscriptionArn"] == f"{topic}:sub-1"
    assert record["Sns"]["Message"] == '{"NewStateValue": "ALARM"}'
    assert record["Sns"]["TopicArn"] == topic
    assert record["Sns"]["SigningCertUrl"] == "https://sns/cert.pem"


class RecordingRuntime:
    def __init__(self) -> None:
        self.invoked = threading.Event()
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def invoke_async(self, function: str, event: dict[str, Any]) -> None:
        self.calls.append((function, event))
        self.invoked.set()


def test_a_schedule_fires_at_start_then_at_its_rate() -> None:
    # Given an hourly schedule
    runtime = RecordingRuntime()
    schedule = Schedule(
        "revive", "arn:aws:events:us-east-1:123456789012:rule/revive", 3600, (("restarter", None),)
    )
    scheduler = Scheduler([schedule], runtime, "us-east-1")  # type: ignore[arg-type]
    # When the stack starts
    scheduler.start()
    try:
        # Then it fires at once (a fresh stack starts its loops without waiting an hour)
        assert runtime.invoked.wait(5)
    finally:
        scheduler.stop()
    assert [function for function, _ in runtime.calls] == ["restarter"]
    assert runtime.calls[0][1]["detail-type"] == "Scheduled Event"
