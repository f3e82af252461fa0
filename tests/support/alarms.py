"""CloudWatch alarm notifications delivered over SNS, in the shapes AWS sends.

The SNS record is the event `sam local generate-event sns notification` prints; its Message is the
alarm document CloudWatch publishes (tests/support/cloudwatch_alarm_message.json): Region a display
name, dimension keys lowercase."""

import copy
import json
from pathlib import Path
from typing import Any

_HERE = Path(__file__).parent
_SNS_EVENT = json.loads((_HERE / "sns_notification.json").read_text())
_ALARM_MESSAGE = json.loads((_HERE / "cloudwatch_alarm_message.json").read_text())

ACCOUNT_ID = "123456789012"
QUEUE_NAME = _ALARM_MESSAGE["Trigger"]["Dimensions"][0]["value"]


def alarm_message(
    old_state: str,
    new_state: str,
    *,
    queue_name: str = QUEUE_NAME,
    region: str = "us-east-1",
    account_id: str = ACCOUNT_ID,
    alarm_name: str = "shortener-QueueDepthLowAlarm-1A2B3C4D5E6F",
) -> dict[str, Any]:
    """The alarm document for one state change of a queue-depth alarm."""
    message = copy.deepcopy(_ALARM_MESSAGE)
    message["AlarmName"] = alarm_name
    message["AWSAccountId"] = account_id
    message["AlarmArn"] = f"arn:aws:cloudwatch:{region}:{account_id}:alarm:{alarm_name}"
    message["OldStateValue"] = old_state
    message["NewStateValue"] = new_state
    message["NewStateReason"] = f"Test transition {old_state} -> {new_state}."
    message["Trigger"]["Dimensions"] = [{"value": queue_name, "name": "QueueName"}]
    return message


def sns_event(*messages: dict[str, Any]) -> dict[str, Any]:
    """An SNS event to a Lambda subscriber, one record per alarm document."""
    event = copy.deepcopy(_SNS_EVENT)
    template = event["Records"][0]
    records = []
    for number, message in enumerate(messages):
        record = copy.deepcopy(template)
        sns = record["Sns"]
        sns["MessageId"] = f"95df01b4-ee98-5cb9-9903-4c221d41eb{number:02d}"
        sns["Subject"] = f'{message["NewStateValue"]}: "{message["AlarmName"]}" in {message["Region"]}'
        sns["Message"] = json.dumps(message)
        sns["MessageAttributes"] = {}
        # The generated event has "EXAMPLE" here; SNS sends https URLs, which Powertools' model checks.
        sns["SigningCertUrl"] = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000.pem"
        sns["UnsubscribeUrl"] = (
            "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn="
            f"{sns['TopicArn']}:21be56ed-a058-49f5-8c98-aedd2564c486"
        )
        records.append(record)
    event["Records"] = records
    return event
