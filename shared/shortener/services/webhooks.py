"""The webhooks' services: the announcer every function that announces shares (API, collector,
jobs worker), and the webhooks function's sender."""

from functools import lru_cache

from shortener.audit.store import AuditStore
from shortener.audit.trail import AuditTrail
from shortener.settings import WebhooksMixin, webhook_sender_settings
from shortener.webhooks.announce import WebhookAnnouncer
from shortener.webhooks.events_bus import WebhookEventsBus
from shortener.webhooks.queue import WebhooksQueue
from shortener.webhooks.sender import WebhookSender
from shortener.webhooks.store import Endpoint, WebhooksStore

# Who the audit log names for what the stack itself did.
SYSTEM_ACTOR = "system"


def webhook_announcer(settings: WebhooksMixin) -> WebhookAnnouncer | None:
    """Announcing to the owners' endpoints (None on a stack without the webhooks table)."""
    if not settings.WEBHOOKS_TABLE:
        return None
    return WebhookAnnouncer(WebhooksStore(settings.WEBHOOKS_TABLE), WebhookEventsBus(settings.WEBHOOKS_BUS))


@lru_cache(maxsize=1)
def webhook_sender() -> WebhookSender:
    settings = webhook_sender_settings()
    trail = (
        AuditTrail(AuditStore(settings.AUDIT_TABLE), settings.AUDIT_RETENTION_DAYS)
        if settings.AUDIT_TABLE
        else None
    )

    def disabled(endpoint: Endpoint, reason: str) -> None:
        if trail is not None:
            trail.record(
                SYSTEM_ACTOR,
                "webhook.disabled",
                endpoint.id,
                before={"status": "enabled", "url": endpoint.view.url},
                after={"status": "disabled", "url": endpoint.view.url, "disabled_reason": reason},
            )

    return WebhookSender(
        WebhooksStore(settings.WEBHOOKS_TABLE),
        WebhooksQueue(settings.WEBHOOKS_QUEUE_URL),
        allow_loopback=settings.LOOPBACK_RECEIVERS,
        per_second=settings.WEBHOOK_DELIVERIES_PER_SECOND,
        on_disabled=disabled,
    )
