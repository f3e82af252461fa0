"""Putting webhook events on an EventBridge bus (the account's default bus): source
``shortener.webhooks``, detail-type the event's type, and a detail naming the owner, the
endpoints that asked for it and the event. The stack's rule puts them on the webhooks queue."""

import json

from botocore.exceptions import BotoCoreError, ClientError

from shortener import aws
from shortener.webhooks.model import WebhookEvent

SOURCE = "shortener.webhooks"
# PutEvents takes at most 10 entries a call.
ENTRIES_PER_CALL = 10


class WebhookEventsBus(aws.EventBus):
    """Webhook events on the bus (aws.EventBus: by name, its client made lazily)."""

    def put(self, owner: str, webhooks: list[str], events: list[WebhookEvent]) -> tuple[int, str | None]:
        """Put the events; how many were not taken, and why (PutEvents answers a failed entry in
        its answer, not with an error)."""
        entries = [
            {
                "Source": SOURCE,
                "DetailType": event.type,
                "Detail": json.dumps(
                    {"owner": owner, "webhooks": webhooks, "event": event.model_dump(mode="json")},
                    separators=(",", ":"),
                ),
                "EventBusName": self.bus_name,
            }
            for event in events
        ]
        failed, reason = 0, None
        for start in range(0, len(entries), ENTRIES_PER_CALL):
            chunk = entries[start : start + ENTRIES_PER_CALL]
            try:
                answer = self.client.put_events(Entries=chunk)  # type: ignore[arg-type]
            except (ClientError, BotoCoreError) as exc:
                failed, reason = failed + len(chunk), str(exc)
                continue
            if answer.get("FailedEntryCount"):
                failed += answer["FailedEntryCount"]
                reason = next(
                    (e.get("ErrorMessage") for e in answer["Entries"] if e.get("ErrorCode")), reason
                )
        return failed, reason
