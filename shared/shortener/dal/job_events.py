"""Putting job events on an EventBridge bus (the account's default bus)."""

from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from shortener.dal import aws
from shortener.models.job_events import DETAIL_TYPE, SOURCE, JobEndedDetail, JobEventNotPutError

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient


class JobEventsBus:
    """The bus by name ("default", or an ARN). The client is created lazily unless one is passed."""

    def __init__(self, bus_name: str = "default", client: "EventBridgeClient | None" = None) -> None:
        self.bus_name = bus_name
        self._client = client

    @property
    def client(self) -> "EventBridgeClient":
        return self._client or aws.events()

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
