"""Sending deliveries (the webhooks function, fed by the webhooks queue).

An announced event becomes one delivery per endpoint that still wants it, tried at once. A failed
attempt (no answer, or a status that is not 2xx, redirects included) is tried again after
RETRY_DELAYS (10 s up to 10 h: 11 attempts over 25.7 hours); the last failure ends the delivery
``failed`` and disables its endpoint with the reason, an audit entry ``webhook.disabled`` and a
log line. Each endpoint is sent at most ``per_second`` deliveries a second; one over it waits a
second. Delivery is at least once: a receiver dedupes on the event's ``id``."""

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from shortener import clock
from shortener.exceptions import ShortenerError
from shortener.observability import logger
from shortener.webhooks import destinations, signing
from shortener.webhooks.model import DeliveryAttempt, DeliveryView, WebhookEvent
from shortener.webhooks.queue import DeliveryDue, delivery_due
from shortener.webhooks.store import Delivery, Endpoint, delivery_position

RETRY_DELAYS = (10, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 36000)

Post = Callable[[destinations.Destination, bytes, dict[str, str], bool], destinations.Answer]


class DeliveriesTable(Protocol):
    """``shortener.webhooks.store.WebhooksStore``."""

    def endpoint(self, owner: str, webhook_id: str) -> Endpoint | None: ...
    def put_delivery(self, delivery: Delivery, now: datetime) -> None: ...
    def save_delivery(self, delivery: Delivery) -> None: ...
    def delivery(self, webhook_id: str, position: str) -> Delivery | None: ...
    def take_send_slot(self, webhook_id: str, second: int, per_second: int) -> bool: ...
    def disable(self, owner: str, webhook_id: str, reason: str, now: datetime) -> bool: ...


class DueDeliveries(Protocol):
    """``shortener.webhooks.queue.WebhooksQueue``."""

    def send(self, due: DeliveryDue, delay_seconds: float) -> None: ...


def event_delivery_id(event: WebhookEvent, webhook_id: str) -> str:
    """The one delivery of an event to an endpoint: the same for a second copy of the event, so
    a copy SQS or EventBridge delivers twice makes no second delivery."""
    digest = hashlib.sha256(f"{event.id}|{webhook_id}".encode()).hexdigest()[:10]
    return f"{event.created_at.astimezone(UTC):%Y%m%dT%H%M%S%f}Z{digest}"


def new_delivery(
    owner: str, webhook_id: str, delivery_id: str, event: WebhookEvent, now: datetime
) -> Delivery:
    position = delivery_position(delivery_id)
    assert position is not None
    return Delivery(
        owner=owner,
        webhook_id=webhook_id,
        position=position,
        body=event.model_dump_json(),
        view=DeliveryView(
            id=delivery_id,
            event_id=event.id,
            type=event.type,
            status="pending",
            attempts=0,
            response_code=None,
            created_at=now,
            next_attempt_at=now,
            history=[],
        ),
    )


class WebhookSender:
    """Fans announced events out to deliveries and sends them."""

    def __init__(
        self,
        table: DeliveriesTable,
        queue: DueDeliveries,
        *,
        allow_loopback: bool,
        per_second: int,
        on_disabled: Callable[[Endpoint, str], None] | None = None,
        post: Post = destinations.post,
        now: Callable[[], datetime] = clock.now,
    ) -> None:
        self._table = table
        self._queue = queue
        self._allow_loopback = allow_loopback
        self._per_second = per_second
        self._on_disabled = on_disabled
        self._post = post
        self._now = now

    def handle(self, body: dict[str, Any]) -> None:
        """One queue message: an announced event (as EventBridge puts it), or a delivery due."""
        due = delivery_due(body)
        if due is not None:
            self._due(due)
            return
        detail = body["detail"]
        event = WebhookEvent.model_validate(detail["event"])
        for webhook_id in detail["webhooks"]:
            self._fan_out(detail["owner"], webhook_id, event)

    def _fan_out(self, owner: str, webhook_id: str, event: WebhookEvent) -> None:
        endpoint = self._table.endpoint(owner, webhook_id)
        if endpoint is None or endpoint.view.status != "enabled" or event.type not in endpoint.view.events:
            return
        delivery_id = event_delivery_id(event, webhook_id)
        position = delivery_position(delivery_id)
        if position is not None and self._table.delivery(webhook_id, position) is not None:
            return  # a second copy of the event
        delivery = new_delivery(owner, webhook_id, delivery_id, event, self._now())
        self._table.put_delivery(delivery, self._now())
        self._attempt(endpoint, delivery)

    def _due(self, due: DeliveryDue) -> None:
        delivery = self._table.delivery(due.webhook_id, due.position)
        if delivery is None or delivery.view.status != "pending":
            return
        wait = due.due - self._now().timestamp()
        if wait > 1:
            self._queue.send(due, wait)
            return
        endpoint = self._table.endpoint(due.owner, due.webhook_id)
        if endpoint is None or endpoint.view.status != "enabled":
            reason = "The endpoint was deleted." if endpoint is None else "The endpoint is disabled."
            self._end(delivery, "failed", None, reason)
            return
        self._attempt(endpoint, delivery)

    def _attempt(self, endpoint: Endpoint, delivery: Delivery) -> None:
        now = self._now()
        if not self._table.take_send_slot(endpoint.id, int(now.timestamp()), self._per_second):
            self._queue.send(_due_of(delivery, now.timestamp() + 1), 1)
            return
        answer = self._send(endpoint, delivery)
        attempt = DeliveryAttempt(
            time=now, response_code=answer.status, error=answer.error, duration_ms=answer.duration_ms
        )
        history = [*delivery.view.history, attempt]
        if answer.delivered:
            self._save(delivery, "delivered", answer.status, history, None)
            return
        # A replay starts the schedule again: it follows the attempts since the last replay.
        retry = len(_failed_run(history, delivery.view.replayed_at)) - 1
        if retry < len(RETRY_DELAYS):
            due = now + timedelta(seconds=RETRY_DELAYS[retry])
            saved = self._save(delivery, "pending", answer.status, history, due)
            self._queue.send(_due_of(saved, due.timestamp()), RETRY_DELAYS[retry])
            return
        self._save(delivery, "failed", answer.status, history, None)
        reason = (
            f"A delivery failed for {sum(RETRY_DELAYS) // 3600} hours ({len(RETRY_DELAYS) + 1} attempts); "
            f"the last: {answer.error or answer.status}"
        )
        if self._table.disable(endpoint.owner, endpoint.id, reason, now):
            logger.warning("Webhook endpoint disabled", extra={"webhook_id": endpoint.id, "reason": reason})
            if self._on_disabled is not None:
                self._on_disabled(endpoint, reason)

    def _send(self, endpoint: Endpoint, delivery: Delivery) -> destinations.Answer:
        try:
            destination = destinations.parse_destination(endpoint.view.url, self._allow_loopback)
        except ShortenerError as exc:
            return destinations.Answer(None, exc.message, 0)
        body = delivery.body.encode()
        timestamp = int(time.time())
        headers = {
            "Shortener-Signature": signing.signature_header(endpoint.secret, timestamp, body),
            "Shortener-Delivery": delivery.view.id,
            "Shortener-Event": delivery.view.type,
            "Content-Length": str(len(body)),
        }
        return self._post(destination, body, headers, self._allow_loopback)

    def _save(
        self,
        delivery: Delivery,
        status: str,
        code: int | None,
        history: list[DeliveryAttempt],
        due: datetime | None,
    ) -> Delivery:
        view = delivery.view.model_copy(
            update={
                "status": status,
                "attempts": len(history),
                "response_code": code,
                "history": history,
                "next_attempt_at": due,
            }
        )
        saved = replace(delivery, view=view)
        self._table.save_delivery(saved)
        return saved

    def _end(self, delivery: Delivery, status: str, code: int | None, reason: str) -> None:
        attempt = DeliveryAttempt(time=self._now(), response_code=code, error=reason, duration_ms=0)
        self._save(delivery, status, code, [*delivery.view.history, attempt], None)


def _failed_run(history: list[DeliveryAttempt], since: datetime | None) -> list[DeliveryAttempt]:
    """The attempts since the last replay (all of them when never replayed)."""
    return [attempt for attempt in history if since is None or attempt.time >= since]


def _due_of(delivery: Delivery, due: float) -> DeliveryDue:
    return DeliveryDue(delivery.owner, delivery.webhook_id, delivery.position, due)


def message_body(text: str) -> dict[str, Any]:
    body = json.loads(text)
    if not isinstance(body, dict):
        raise ValueError("A webhooks queue message is a JSON object.")
    return body
