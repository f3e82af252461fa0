"""The webhooks' requests, views and events (docs/webhooks.md)."""

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from shortener.request_model import RequestModel

# What an endpoint can be told of; the audit log names its actions the same way.
WebhookEventType = Literal[
    "link.created",
    "link.updated",
    "link.deleted",
    "link.clicked",
    "job.completed",
    "batch.completed",
]
WEBHOOK_EVENT_TYPES: tuple[str, ...] = WebhookEventType.__args__  # type: ignore[attr-defined]
# The one event a test delivery carries: never sent for anything else.
TEST_EVENT = "webhook.test"
WebhookStatus = Literal["enabled", "disabled"]
DeliveryStatus = Literal["pending", "delivered", "failed"]


class WebhookCreate(RequestModel):
    """The body of ``POST /webhooks``."""

    url: str = Field(
        max_length=2048, description="Where deliveries are POSTed (https; http on loopback locally)."
    )
    events: list[WebhookEventType] = Field(min_length=1, description="The events to deliver.")
    description: str = Field(default="", max_length=200, description="A note for people.")


class WebhookUpdate(RequestModel):
    """The body of ``PATCH /webhooks/{id}``: only the fields given change. Enabling an endpoint
    the stack disabled clears its ``disabled_reason``."""

    url: str | None = Field(default=None, max_length=2048)
    events: list[WebhookEventType] | None = Field(default=None, min_length=1)
    description: str | None = Field(default=None, max_length=200)
    status: WebhookStatus | None = None


class WebhookView(BaseModel):
    """An endpoint as ``GET /webhooks`` shows it: never its secret."""

    id: str
    url: str
    events: list[WebhookEventType]
    description: str
    status: WebhookStatus
    disabled_reason: str | None = Field(description="Why the stack disabled it (null when enabled).")
    created_at: datetime
    updated_at: datetime | None


class WebhookCreated(WebhookView):
    """``POST /webhooks``: the endpoint and its signing secret, shown this once."""

    secret: str = Field(description="Keys the HMAC of `Shortener-Signature`; shown only in this answer.")


class WebhookList(BaseModel):
    """``GET /webhooks``: the caller's endpoints, oldest first."""

    webhooks: list[WebhookView]


class WebhookEvent(BaseModel):
    """What a delivery's body holds. ``id`` is the event's: the same in every delivery and retry
    of it, so a receiver dedupes on it."""

    id: str
    type: str
    created_at: datetime
    data: dict[str, Any]


class DeliveryAttempt(BaseModel):
    """One try of a delivery."""

    time: datetime
    response_code: int | None = Field(description="The receiver's status; null when none came.")
    error: str | None = Field(description="Why the attempt failed, for people; null when delivered.")
    duration_ms: int


class DeliveryView(BaseModel):
    """A delivery of one event to one endpoint, with every attempt."""

    id: str
    event_id: str
    type: str
    status: DeliveryStatus
    attempts: int = Field(description="How many times it was sent.")
    response_code: int | None = Field(description="The last attempt's answer; null before any.")
    created_at: datetime
    next_attempt_at: datetime | None = Field(description="When it is tried again (pending only).")
    replayed_at: datetime | None = Field(default=None, description="When it was last replayed.")
    history: list[DeliveryAttempt] = Field(description="Every attempt, oldest first.")


class DeliveryPage(BaseModel):
    """``GET /webhooks/{id}/deliveries``: newest first."""

    deliveries: list[DeliveryView]
    next_cursor: str | None


class DeliveryAccepted(BaseModel):
    """A test delivery or a replay, queued: it is sent within seconds."""

    delivery_id: str
    status_url: str


class DeliveriesQuery(BaseModel):
    """The query of ``GET /webhooks/{id}/deliveries``."""

    limit: int = Field(default=50, ge=1, le=100)
    cursor: str | None = None
