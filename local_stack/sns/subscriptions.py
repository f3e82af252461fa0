"""SNS to Lambda: moto delivers a topic's messages to HTTP subscribers only, so a function's
subscription is an HTTP one on the local Lambda endpoint, and this turns the HTTP notification into
the event Lambda receives from SNS (`sam local generate-event sns notification`)."""

from typing import Any
from urllib.parse import parse_qs, urlsplit


def lambda_event(notification: dict[str, Any]) -> dict[str, Any]:
    """The Lambda SNS event for one HTTP notification that SNS (moto) posted."""
    unsubscribe_url = notification.get("UnsubscribeURL", "")
    query = parse_qs(urlsplit(unsubscribe_url).query)
    subscription_arn = query.get("SubscriptionArn", [notification.get("TopicArn", "")])[0]
    record = {
        "Type": notification.get("Type", "Notification"),
        "MessageId": notification["MessageId"],
        "TopicArn": notification["TopicArn"],
        "Subject": notification.get("Subject"),
        "Message": notification["Message"],
        "Timestamp": notification["Timestamp"],
        "SignatureVersion": notification.get("SignatureVersion", "1"),
        "Signature": notification.get("Signature", ""),
        "SigningCertUrl": notification.get("SigningCertURL", ""),
        "UnsubscribeUrl": unsubscribe_url,
        "MessageAttributes": notification.get("MessageAttributes", {}),
    }
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription_arn,
                "Sns": record,
            }
        ]
    }
