"""Parsing CloudWatch alarm notifications out of SNS events with Powertools' parser."""

import pytest
from aws_lambda_powertools.utilities.parser import envelopes, parse
from pydantic import ValidationError

from shortener.loops.alarms_model import AlarmNotification
from tests.support.alarms import QUEUE_NAME, alarm_message, sns_event


def parsed(*messages: dict) -> list[AlarmNotification]:
    return [
        notification
        for notification in parse(
            sns_event(*messages), model=AlarmNotification, envelope=envelopes.SnsEnvelope
        )
        if notification is not None
    ]


def test_region_code_and_account_come_from_the_alarm_arn_not_the_display_name() -> None:
    # Given an ALARM notification whose Region is the display name AWS sends
    message = alarm_message("OK", "ALARM", region="eu-west-1", account_id="210987654321")
    message["Region"] = "EU (Ireland)"
    # When it is parsed
    [notification] = parsed(message)
    # Then the region code and the account id are taken from the ARN
    assert notification.Region == "EU (Ireland)"
    assert notification.arn.region == "eu-west-1"
    assert notification.arn.account_id == "210987654321"


def test_queue_name_comes_from_the_lowercase_dimension() -> None:
    # Given the default alarm document (dimension keys "name"/"value")
    # When it is parsed
    [notification] = parsed(alarm_message("OK", "ALARM"))
    # Then the queue is the QueueName dimension's value
    assert notification.queue_name == QUEUE_NAME


@pytest.mark.parametrize(
    ("old", "new", "entered_alarm", "returned_to_ok"),
    [
        ("OK", "ALARM", True, False),
        ("INSUFFICIENT_DATA", "ALARM", True, False),
        ("ALARM", "OK", False, True),
        ("INSUFFICIENT_DATA", "OK", False, False),
        ("OK", "INSUFFICIENT_DATA", False, False),
        ("ALARM", "INSUFFICIENT_DATA", False, False),
    ],
)
def test_transitions_are_classified(old: str, new: str, entered_alarm: bool, returned_to_ok: bool) -> None:
    # Given a state change from old to new
    # When it is parsed
    [notification] = parsed(alarm_message(old, new))
    # Then only entering ALARM scales up and only ALARM -> OK scales down
    assert notification.entered_alarm is entered_alarm
    assert notification.returned_to_ok is returned_to_ok


def test_one_event_can_carry_several_alarms() -> None:
    # Given an SNS event with two records
    # When it is parsed
    notifications = parsed(alarm_message("OK", "ALARM"), alarm_message("ALARM", "OK"))
    # Then each record is one notification, in order
    assert [n.NewStateValue for n in notifications] == ["ALARM", "OK"]


def test_a_message_that_is_not_an_alarm_arn_is_rejected() -> None:
    # Given an alarm document whose AlarmArn is not a CloudWatch alarm ARN
    message = alarm_message("OK", "ALARM")
    message["AlarmArn"] = "arn:aws:sns:us-east-1:123456789012:topic"
    # When it is parsed
    # Then validation fails rather than scaling the wrong queue
    with pytest.raises(ValidationError):
        parsed(message)
