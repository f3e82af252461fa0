"""Putting job events on an EventBridge bus (the account's default bus), and on the SNS topic a job\nnamed."""

import json
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from shortener import aws
from shortener.jobs.events_model import DETAIL_TYPE, SOURCE, JobEndedDetail, JobEventNotPutError

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient


class JobEventsBus(aws.EventBus):
    """Job events on the bus (aws.EventBus: by name, its client made lazily)."""

    def job_ended(self, detail: JobEndedDetail, resources: list[str]) -> None:
        """Put the job-ended event; JobEventNotPutError when it was not taken (PutEvents answers
        a failed entry in its answer, not with an error)."""
        entry = {
            "Source": SOURCE,
            "DetailType": DETAIL_TYPE,
            "Detail": detail.model_dump_json(),
            "Resources": resources,
            "EventBusName": self.bus_name,
        }
        try:
            answer = self.client.put_events(Entries=[entry])  # type: ignore[list-item]
        except (ClientError, BotoCoreError) as exc:
            raise JobEventNotPutError(str(exc)) from exc
        if answer.get("FailedEntryCount"):
            failed = answer["Entries"][0]
            raise JobEventNotPutError(f"{failed.get('ErrorCode')}: {failed.get('ErrorMessage')}")


class JobTopics:
    """SNS topics that jobs named for their job-ended message. The client is created lazily unless
    one is passed."""

    def __init__(self, client: "SNSClient | None" = None) -> None:
        self._client = client

    @property
    def client(self) -> "SNSClient":
        return self._client or aws.sns()

    def job_ended(self, topic_arn: str, detail: JobEndedDetail) -> None:
        """Publish the job-ended message (the event as EventBridge delivers it: source, detail-type,
        detail); JobEventNotPutError when SNS refused it."""
        message = {"source": SOURCE, "detail-type": DETAIL_TYPE, "detail": detail.model_dump(mode="json")}
        try:
            self.client.publish(TopicArn=topic_arn, Subject=DETAIL_TYPE, Message=json.dumps(message))
        except (ClientError, BotoCoreError) as exc:
            raise JobEventNotPutError(str(exc)) from exc
