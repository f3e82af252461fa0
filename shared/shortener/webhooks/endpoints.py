"""An owner's webhook endpoints (the ``/webhooks`` routes' rules): each caller registers, reads,
changes and removes only their own (an admin too: an endpoint hears of its owner's links); an
owner keeps at most MAX_ENDPOINTS. A test delivery and a replay are queued, never sent in the
request."""

import secrets
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from shortener import clock
from shortener.access.model import Caller
from shortener.exceptions import DeliveryNotFoundError, InvalidFieldsError, WebhookNotFoundError
from shortener.http.paging import decode_cursor, encode_cursor
from shortener.webhooks import destinations, signing
from shortener.webhooks.announce import new_event_id
from shortener.webhooks.model import (
    TEST_EVENT,
    DeliveriesQuery,
    DeliveryPage,
    DeliveryView,
    WebhookCreate,
    WebhookCreated,
    WebhookEvent,
    WebhookList,
    WebhookUpdate,
    WebhookView,
)
from shortener.webhooks.queue import DeliveryDue
from shortener.webhooks.sender import new_delivery
from shortener.webhooks.store import Delivery, Endpoint, new_delivery_id

MAX_ENDPOINTS = 20


class EndpointsTable(Protocol):
    """``shortener.webhooks.store.WebhooksStore``."""

    def put_endpoint(self, endpoint: Endpoint) -> None: ...
    def endpoint(self, owner: str, webhook_id: str) -> Endpoint | None: ...
    def endpoints(self, owner: str) -> list[Endpoint]: ...
    def delete_endpoint(self, owner: str, webhook_id: str) -> None: ...
    def put_delivery(self, delivery: Delivery, now: datetime) -> None: ...
    def save_delivery(self, delivery: Delivery) -> None: ...
    def delivery_by_id(self, webhook_id: str, delivery_id: str) -> Delivery | None: ...
    def deliveries(
        self, webhook_id: str, before: str | None, limit: int
    ) -> tuple[list[Delivery], str | None]: ...


class DueDeliveries(Protocol):
    def send(self, due: DeliveryDue, delay_seconds: float) -> None: ...


class WebhookEndpoints:
    """The rules of ``/webhooks``."""

    def __init__(
        self,
        table: EndpointsTable,
        queue: DueDeliveries,
        *,
        allow_loopback: bool,
        now: Callable[[], datetime] = clock.now,
    ) -> None:
        self._table = table
        self._queue = queue
        self._allow_loopback = allow_loopback
        self._now = now

    def create(self, caller: Caller, request: WebhookCreate) -> WebhookCreated:
        url = self._checked_url(request.url)
        if len(self._table.endpoints(caller.owner_id)) >= MAX_ENDPOINTS:
            raise InvalidFieldsError(f"An owner keeps at most {MAX_ENDPOINTS} webhooks; delete one first.")
        view = WebhookView(
            id="wh_" + secrets.token_hex(8),
            url=url,
            events=sorted(set(request.events)),  # type: ignore[arg-type]
            description=request.description,
            status="enabled",
            disabled_reason=None,
            created_at=self._now(),
            updated_at=None,
        )
        endpoint = Endpoint(owner=caller.owner_id, view=view, secret=signing.new_secret())
        self._table.put_endpoint(endpoint)
        return WebhookCreated(**view.model_dump(), secret=endpoint.secret)

    def list(self, caller: Caller) -> WebhookList:
        return WebhookList(webhooks=[endpoint.view for endpoint in self._table.endpoints(caller.owner_id)])

    def get(self, caller: Caller, webhook_id: str) -> WebhookView:
        return self._endpoint(caller, webhook_id).view

    def update(
        self, caller: Caller, webhook_id: str, update: WebhookUpdate
    ) -> tuple[WebhookView, WebhookView]:
        """The endpoint before and after ``update``."""
        endpoint = self._endpoint(caller, webhook_id)
        changes: dict[str, Any] = update.model_dump(exclude_none=True)
        if "url" in changes:
            changes["url"] = self._checked_url(changes["url"])
        if "events" in changes:
            changes["events"] = sorted(set(changes["events"]))
        if changes.get("status") == "enabled":
            changes["disabled_reason"] = None
        elif changes.get("status") == "disabled" and endpoint.view.status == "enabled":
            changes["disabled_reason"] = "Disabled by its owner."
        view = endpoint.view.model_copy(update=changes | {"updated_at": self._now()})
        self._table.put_endpoint(replace(endpoint, view=view))
        return endpoint.view, view

    def delete(self, caller: Caller, webhook_id: str) -> WebhookView:
        endpoint = self._endpoint(caller, webhook_id)
        self._table.delete_endpoint(caller.owner_id, webhook_id)
        return endpoint.view

    def test(self, caller: Caller, webhook_id: str) -> DeliveryView:
        """Queue a ``webhook.test`` delivery to the endpoint, whatever events it asked for."""
        endpoint = self._endpoint(caller, webhook_id)
        now = self._now()
        event = WebhookEvent(
            id=new_event_id(),
            type=TEST_EVENT,
            created_at=now,
            data={
                "webhook_id": webhook_id,
                "message": "A test delivery: the signature verifies with your secret.",
            },
        )
        delivery = new_delivery(endpoint.owner, webhook_id, new_delivery_id(now), event, now)
        self._table.put_delivery(delivery, now)
        self._queue.send(DeliveryDue(endpoint.owner, webhook_id, delivery.position, now.timestamp()), 0)
        return delivery.view

    def deliveries(self, caller: Caller, webhook_id: str, query: DeliveriesQuery) -> DeliveryPage:
        self._endpoint(caller, webhook_id)
        found, last = self._table.deliveries(webhook_id, decode_cursor(query.cursor), query.limit)
        return DeliveryPage(
            deliveries=[delivery.view for delivery in found],
            next_cursor=encode_cursor(last) if last else None,
        )

    def delivery(self, caller: Caller, webhook_id: str, delivery_id: str) -> DeliveryView:
        return self._delivery(caller, webhook_id, delivery_id).view

    def replay(self, caller: Caller, webhook_id: str, delivery_id: str) -> DeliveryView:
        """Send a delivery again, the same body (its event's id too), with a fresh retry schedule."""
        delivery = self._delivery(caller, webhook_id, delivery_id)
        now = self._now()
        view = delivery.view.model_copy(
            update={"status": "pending", "next_attempt_at": now, "replayed_at": now}
        )
        self._table.save_delivery(replace(delivery, view=view))
        self._queue.send(DeliveryDue(delivery.owner, webhook_id, delivery.position, now.timestamp()), 0)
        return view

    def _endpoint(self, caller: Caller, webhook_id: str) -> Endpoint:
        endpoint = self._table.endpoint(caller.owner_id, webhook_id) if webhook_id.startswith("wh_") else None
        if endpoint is None:
            raise WebhookNotFoundError(f"No webhook {webhook_id[:40]!r} of yours.")
        return endpoint

    def _delivery(self, caller: Caller, webhook_id: str, delivery_id: str) -> Delivery:
        self._endpoint(caller, webhook_id)
        delivery = self._table.delivery_by_id(webhook_id, delivery_id)
        if delivery is None:
            raise DeliveryNotFoundError(f"No delivery {delivery_id[:40]!r} of this webhook.")
        return delivery

    def _checked_url(self, url: str) -> str:
        destinations.parse_destination(url, self._allow_loopback)
        return url.strip()
