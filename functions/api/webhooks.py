"""The caller's webhooks: ``/webhooks`` (register, list), ``/webhooks/{id}`` (read, change,
remove), a test delivery, the deliveries with every attempt, and a replay. Included into the
API's resolver by app.py; errors raised here are mapped to JSON there. The rules live in
shortener.webhooks.endpoints; deliveries are sent by the webhooks function, never here."""

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from request import api_url, audit, body_fields, caller

from shortener.http import web
from shortener.http.openapi import Answer, link_to, operation
from shortener.services.api import api_webhooks
from shortener.webhooks.model import (
    DeliveriesQuery,
    DeliveryAccepted,
    DeliveryPage,
    DeliveryView,
    WebhookCreate,
    WebhookCreated,
    WebhookList,
    WebhookUpdate,
    WebhookView,
)

router = APIGatewayRouter()
_TAG = "webhooks"
_WEBHOOK_LINKS = {
    "GetWebhook": link_to("GET", "/webhooks/{webhook_id}", webhook_id="$response.body#/id"),
    "ListDeliveries": link_to("GET", "/webhooks/{webhook_id}/deliveries", webhook_id="$response.body#/id"),
}


def _json(status: int, text: str, headers: dict[str, str] | None = None) -> Response[str]:
    return Response(status, content_types.APPLICATION_JSON, text, headers=headers)


@router.post(
    "/webhooks",
    **operation(
        "Register an endpoint told of events (its signing secret is shown once)",
        {201: Answer("The endpoint and its secret", WebhookCreated, links=_WEBHOOK_LINKS)},
        body=WebhookCreate,
        tag=_TAG,
    ),
)
def create_webhook() -> Response[str]:
    event = router.current_event
    request = web.parse_request(WebhookCreate, body_fields(event))
    created = api_webhooks().create(caller(event), request)
    view = WebhookView.model_validate(created.model_dump(exclude={"secret"}))
    audit(event, "webhook.created", created.id, after=view.model_dump(mode="json"))
    location = api_url(event) + f"webhooks/{created.id}"
    return _json(201, created.model_dump_json(), {"Location": location})


@router.get(
    "/webhooks",
    **operation(
        "The caller's endpoints", {200: Answer("Every endpoint, oldest first", WebhookList)}, tag=_TAG
    ),
)
def list_webhooks() -> Response[str]:
    return _json(200, api_webhooks().list(caller(router.current_event)).model_dump_json())


@router.get(
    "/webhooks/<webhook_id>",
    **operation("One endpoint", {200: Answer("The endpoint", WebhookView)}, errors=(404,), tag=_TAG),
)
def show_webhook(webhook_id: str) -> Response[str]:
    return _json(200, api_webhooks().get(caller(router.current_event), webhook_id).model_dump_json())


@router.patch(
    "/webhooks/<webhook_id>",
    **operation(
        "Change an endpoint's URL, events, note, or enable or disable it",
        {200: Answer("The changed endpoint", WebhookView)},
        errors=(404,),
        body=WebhookUpdate,
        tag=_TAG,
    ),
)
def change_webhook(webhook_id: str) -> Response[str]:
    event = router.current_event
    update = web.parse_request(WebhookUpdate, body_fields(event))
    before, after = api_webhooks().update(caller(event), webhook_id, update)
    audit(
        event,
        "webhook.updated",
        webhook_id,
        before=before.model_dump(mode="json"),
        after=after.model_dump(mode="json"),
    )
    return _json(200, after.model_dump_json())


@router.delete(
    "/webhooks/<webhook_id>",
    **operation(
        "Remove an endpoint (nothing more is sent to it)",
        {204: Answer("Removed", empty=True)},
        errors=(404,),
        tag=_TAG,
    ),
)
def delete_webhook(webhook_id: str) -> Response[str]:
    event = router.current_event
    removed = api_webhooks().delete(caller(event), webhook_id)
    audit(event, "webhook.deleted", webhook_id, before=removed.model_dump(mode="json"))
    return Response(204, None, "")


@router.post(
    "/webhooks/<webhook_id>/test",
    **operation(
        "Send the endpoint a signed webhook.test delivery",
        {202: Answer("Queued: it is sent within seconds", DeliveryAccepted)},
        errors=(404,),
        tag=_TAG,
    ),
)
def test_webhook(webhook_id: str) -> Response[str]:
    event = router.current_event
    delivery = api_webhooks().test(caller(event), webhook_id)
    return _accepted(webhook_id, delivery)


@router.get(
    "/webhooks/<webhook_id>/deliveries",
    **operation(
        "The endpoint's deliveries, newest first, each with every attempt",
        {200: Answer("A page of deliveries", DeliveryPage)},
        errors=(400, 404),
        query=DeliveriesQuery,
        tag=_TAG,
    ),
)
def list_deliveries(webhook_id: str) -> Response[str]:
    event = router.current_event
    fields = {
        name: value for name in ("limit", "cursor") if (value := event.get_query_string_value(name, None))
    }
    query = web.parse_query(DeliveriesQuery, fields)
    return _json(200, api_webhooks().deliveries(caller(event), webhook_id, query).model_dump_json())


@router.get(
    "/webhooks/<webhook_id>/deliveries/<delivery_id>",
    **operation(
        "One delivery and its attempts", {200: Answer("The delivery", DeliveryView)}, errors=(404,), tag=_TAG
    ),
)
def show_delivery(webhook_id: str, delivery_id: str) -> Response[str]:
    view = api_webhooks().delivery(caller(router.current_event), webhook_id, delivery_id)
    return _json(200, view.model_dump_json())


@router.post(
    "/webhooks/<webhook_id>/deliveries/<delivery_id>/replay",
    **operation(
        "Send a delivery again (the same body and event id), with a fresh retry schedule",
        {202: Answer("Queued: it is sent within seconds", DeliveryAccepted)},
        errors=(404,),
        tag=_TAG,
    ),
)
def replay_delivery(webhook_id: str, delivery_id: str) -> Response[str]:
    event = router.current_event
    delivery = api_webhooks().replay(caller(event), webhook_id, delivery_id)
    return _accepted(webhook_id, delivery)


def _accepted(webhook_id: str, delivery: DeliveryView) -> Response[str]:
    status_url = api_url(router.current_event) + f"webhooks/{webhook_id}/deliveries/{delivery.id}"
    accepted = DeliveryAccepted(delivery_id=delivery.id, status_url=status_url)
    return _json(202, accepted.model_dump_json(), {"Location": status_url})
