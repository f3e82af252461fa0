"""Announcing what happened to the endpoints that asked for it: an event on the EventBridge bus
(source ``shortener.webhooks``, detail-type the event's type), which the stack's rule puts on the
webhooks queue, and which anyone can route elsewhere too. Only an owner with an enabled endpoint
for the type is announced to: one consistent Query of the owner's endpoints per change; no event,
no cost, for everyone else. Never in the request's way beyond that Query and one PutEvents."""

import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from shortener import clock
from shortener.clicks.events import ClickEvent
from shortener.jobs.batches_model import Batch
from shortener.observability import logger, metrics
from shortener.webhooks.model import WebhookEvent
from shortener.webhooks.store import Endpoint

# The most clicks one link.clicked event carries (an EventBridge entry holds at most 256 KB; a
# click is about 300 bytes); a larger batch is several events.
CLICKS_PER_EVENT = 500
# What a delivered click tells (the export's columns, without the owner and the request id).
CLICK_FIELDS = (
    "time", "code", "job_id", "row", "destination", "status",
    "country", "device", "browser", "os", "referrer", "bot", "visitor",
)  # fmt: skip


class EventsBus(Protocol):
    """``shortener.webhooks.events_bus.WebhookEventsBus``."""

    def put(self, owner: str, webhooks: list[str], events: list[WebhookEvent]) -> tuple[int, str | None]: ...


class OwnersEndpoints(Protocol):
    """``shortener.webhooks.store.WebhooksStore``'s read of an owner's endpoints."""

    def endpoints(self, owner: str) -> list[Endpoint]: ...


def new_event_id() -> str:
    return "evt_" + secrets.token_hex(12)


class WebhookAnnouncer:
    """Puts events for the owners' endpoints on the bus."""

    def __init__(
        self, endpoints: OwnersEndpoints, bus: EventsBus, now: Callable[[], datetime] = clock.now
    ) -> None:
        self._endpoints = endpoints
        self._bus = bus
        self._now = now

    def subscribed(self, owner: str | None, event_type: str) -> list[str]:
        """The ids of ``owner``'s enabled endpoints that asked for ``event_type``. When they
        cannot be read the event is not announced, logged and counted (``WebhookEventsNotPut``):
        the change it tells of has happened and is answered all the same."""
        if not owner:
            return []
        try:
            endpoints = self._endpoints.endpoints(owner)
        except (ClientError, BotoCoreError) as exc:
            self._not_announced(owner, 1, f"the endpoints could not be read: {exc}")
            return []
        return [
            endpoint.id
            for endpoint in endpoints
            if endpoint.view.status == "enabled" and event_type in endpoint.view.events
        ]

    def announce(
        self, owner: str | None, event_type: str, data: Callable[[], Mapping[str, Any]]
    ) -> WebhookEvent | None:
        """Announce ``event_type`` to ``owner``'s endpoints that asked for it (``data`` is made only
        then)."""
        webhooks = self.subscribed(owner, event_type)
        if not webhooks or owner is None:
            return None
        event = WebhookEvent(id=new_event_id(), type=event_type, created_at=self._now(), data=dict(data()))
        self.put(owner, webhooks, [event])
        return event

    def announce_clicks(self, owners: set[str], clicks: Callable[[], Sequence[ClickEvent]]) -> None:
        """``link.clicked`` for a counted batch whose links are ``owners``': per owner with an
        endpoint for it, their clicks in events of at most CLICKS_PER_EVENT, each click with its
        ``code``. The clicks are made only when an owner asked."""
        subscribed = {
            owner: webhooks
            for owner in sorted(owners)
            if (webhooks := self.subscribed(owner, "link.clicked"))
        }
        if not subscribed:
            return
        by_owner: dict[str, list[ClickEvent]] = {}
        for click in clicks():
            if click.owner in subscribed:
                by_owner.setdefault(click.owner, []).append(click)
        for owner, owned in by_owner.items():
            webhooks = subscribed[owner]
            now = self._now()
            events = [
                WebhookEvent(
                    id=new_event_id(),
                    type="link.clicked",
                    created_at=now,
                    data={
                        "clicks": [
                            click.model_dump(mode="json", include=set(CLICK_FIELDS))
                            for click in owned[start : start + CLICKS_PER_EVENT]
                        ]
                    },
                )
                for start in range(0, len(owned), CLICKS_PER_EVENT)
            ]
            self.put(owner, webhooks, events)

    def put(self, owner: str, webhooks: list[str], events: list[WebhookEvent]) -> None:
        """Put events for ``webhooks`` of ``owner``. Events the bus did not take are logged, not
        raised: the change they tell of has happened and is answered; the log line and the
        ``WebhookEventsNotPut`` metric say so."""
        failed, reason = self._bus.put(owner, webhooks, events)
        if failed:
            self._not_announced(owner, failed, reason)

    @staticmethod
    def _not_announced(owner: str, count: int, reason: str | None) -> None:
        metrics.add_metric(name="WebhookEventsNotPut", unit=MetricUnit.Count, value=count)
        logger.error(
            "Webhook events were not announced", extra={"owner": owner, "failed": count, "reason": reason}
        )


def batch_completed(batch: Batch) -> dict[str, Any]:
    """The ``data`` of ``batch.completed``: what the batch asked and how it ended."""
    return batch.model_dump(
        mode="json",
        include={
            "batch_id", "action", "selector", "job_id", "tag", "status",
            "total", "changed", "unchanged", "failed", "created_at", "finished_at", "error",
        },
    )  # fmt: skip
