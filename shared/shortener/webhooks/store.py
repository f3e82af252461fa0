"""The webhooks table (data access):

- an endpoint: ``pk`` = ``owner#<owner>``, ``sk`` = ``webhook#<id>`` (an owner's are one Query,
  read at every change that could be announced);
- a delivery: ``pk`` = ``deliveries#<webhook id>``, ``sk`` = ``<created ISO time>#<delivery id>``
  (newest first by a reversed Query), with the exact body sent and every attempt; it expires
  DELIVERY_DAYS after it was made (the table's TTL);
- a second of an endpoint's sending: ``pk`` = ``rate#<webhook id>``, ``sk`` = ``<unix second>``,
  counting the deliveries sent in it (expiring after an hour).
"""

import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from shortener import aws
from shortener.webhooks.model import DeliveryAttempt, DeliveryStatus, DeliveryView, WebhookView

OWNER_PREFIX = "owner#"
WEBHOOK_PREFIX = "webhook#"
DELIVERIES_PREFIX = "deliveries#"
RATE_PREFIX = "rate#"
DELIVERY_DAYS = 30


@dataclass(frozen=True)
class Endpoint:
    """An endpoint as the stack keeps it: its view, its owner and its secret."""

    owner: str
    view: WebhookView
    secret: str

    @property
    def id(self) -> str:
        return self.view.id


@dataclass(frozen=True)
class Delivery:
    """A delivery as kept: its view, whose endpoint, and the body every attempt sends."""

    owner: str
    webhook_id: str
    position: str  # its sort key
    body: str
    view: DeliveryView


def _time(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


_DELIVERY_ID = re.compile(r"(\d{8}T\d{12})Z([0-9a-f]{10})")


def new_delivery_id(moment: datetime) -> str:
    """A delivery's id: when it was made and a random part, so that its item is found from it."""
    return f"{moment.astimezone(UTC):%Y%m%dT%H%M%S%f}Z{secrets.token_hex(5)}"


def delivery_position(delivery_id: str) -> str | None:
    """The sort key of the delivery ``delivery_id`` names (None: not an id this stack gives)."""
    match = _DELIVERY_ID.fullmatch(delivery_id)
    if match is None:
        return None
    moment = datetime.strptime(match[1], "%Y%m%dT%H%M%S%f").replace(tzinfo=UTC)
    return f"{_time(moment)}#{delivery_id}"


class WebhooksStore(aws.DynamoDBTable):
    """Data access for the webhooks table."""

    # ---- endpoints

    def put_endpoint(self, endpoint: Endpoint) -> None:
        view = endpoint.view
        item: dict[str, Any] = {
            "pk": {"S": OWNER_PREFIX + endpoint.owner},
            "sk": {"S": WEBHOOK_PREFIX + view.id},
            "url": {"S": view.url},
            "events": {"L": [{"S": name} for name in view.events]},
            "description": {"S": view.description},
            "status": {"S": view.status},
            "secret": {"S": endpoint.secret},
            "created_at": {"S": _time(view.created_at)},
        }
        if view.updated_at is not None:
            item["updated_at"] = {"S": _time(view.updated_at)}
        if view.disabled_reason:
            item["disabled_reason"] = {"S": view.disabled_reason}
        self.client.put_item(TableName=self.table_name, Item=item)

    def endpoint(self, owner: str, webhook_id: str) -> Endpoint | None:
        item = self.client.get_item(
            TableName=self.table_name,
            Key={"pk": {"S": OWNER_PREFIX + owner}, "sk": {"S": WEBHOOK_PREFIX + webhook_id}},
            ConsistentRead=True,
        ).get("Item")
        return _endpoint(item) if item else None

    def endpoints(self, owner: str) -> list[Endpoint]:
        """The owner's endpoints, oldest first (read consistently: one registered a moment ago is
        told of the next change)."""
        found: list[Endpoint] = []
        for page in self.client.get_paginator("query").paginate(
            TableName=self.table_name,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": {"S": OWNER_PREFIX + owner}, ":prefix": {"S": WEBHOOK_PREFIX}},
            ConsistentRead=True,
        ):
            found.extend(_endpoint(item) for item in page.get("Items", []))
        return sorted(found, key=lambda endpoint: endpoint.view.created_at)

    def delete_endpoint(self, owner: str, webhook_id: str) -> None:
        self.client.delete_item(
            TableName=self.table_name,
            Key={"pk": {"S": OWNER_PREFIX + owner}, "sk": {"S": WEBHOOK_PREFIX + webhook_id}},
        )

    def disable(self, owner: str, webhook_id: str, reason: str, now: datetime) -> bool:
        """Disable an enabled endpoint; False when it was not (gone, or disabled already)."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"pk": {"S": OWNER_PREFIX + owner}, "sk": {"S": WEBHOOK_PREFIX + webhook_id}},
                UpdateExpression="SET #status = :disabled, disabled_reason = :reason, updated_at = :now",
                ConditionExpression="#status = :enabled",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":disabled": {"S": "disabled"},
                    ":enabled": {"S": "enabled"},
                    ":reason": {"S": reason},
                    ":now": {"S": _time(now)},
                },
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    # ---- deliveries

    def put_delivery(self, delivery: Delivery, now: datetime) -> None:
        self.client.put_item(
            TableName=self.table_name,
            Item=self._delivery_item(delivery)
            | {"expires_at": {"N": str(int((now + timedelta(days=DELIVERY_DAYS)).timestamp()))}},
        )

    def save_delivery(self, delivery: Delivery) -> None:
        """Write a delivery's state after an attempt (its status, attempts, next time)."""
        view = delivery.view
        values: dict[str, Any] = {
            ":status": {"S": view.status},
            ":attempts": {"N": str(view.attempts)},
            ":history": {"S": json.dumps([attempt.model_dump(mode="json") for attempt in view.history])},
        }
        expression = "SET #status = :status, attempts = :attempts, history = :history"
        if view.response_code is not None:
            expression += ", response_code = :code"
            values[":code"] = {"N": str(view.response_code)}
        if view.replayed_at is not None:
            expression += ", replayed_at = :replayed"
            values[":replayed"] = {"S": _time(view.replayed_at)}
        if view.next_attempt_at is not None:
            expression += ", next_attempt_at = :next"
            values[":next"] = {"S": _time(view.next_attempt_at)}
        else:
            expression += " REMOVE next_attempt_at"
        self.client.update_item(
            TableName=self.table_name,
            Key={"pk": {"S": DELIVERIES_PREFIX + delivery.webhook_id}, "sk": {"S": delivery.position}},
            UpdateExpression=expression,
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues=values,
        )

    def delivery(self, webhook_id: str, position: str) -> Delivery | None:
        item = self.client.get_item(
            TableName=self.table_name,
            Key={"pk": {"S": DELIVERIES_PREFIX + webhook_id}, "sk": {"S": position}},
            ConsistentRead=True,
        ).get("Item")
        return _delivery(item) if item else None

    def delivery_by_id(self, webhook_id: str, delivery_id: str) -> Delivery | None:
        position = delivery_position(delivery_id)
        return self.delivery(webhook_id, position) if position else None

    def deliveries(
        self, webhook_id: str, before: str | None, limit: int
    ) -> tuple[list[Delivery], str | None]:
        found: list[Delivery] = []
        for delivery in self._deliveries(webhook_id, before):
            found.append(delivery)
            if len(found) == limit:
                return found, delivery.position
        return found, None

    def _deliveries(self, webhook_id: str, before: str | None) -> Iterator[Delivery]:
        asked: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": DELIVERIES_PREFIX + webhook_id}},
            "ScanIndexForward": False,
        }
        if before:
            asked["KeyConditionExpression"] += " AND sk < :before"
            asked["ExpressionAttributeValues"][":before"] = {"S": before}
        for page in self.client.get_paginator("query").paginate(**asked):
            for item in page.get("Items", []):
                yield _delivery(item)

    @staticmethod
    def _delivery_item(delivery: Delivery) -> dict[str, Any]:
        view = delivery.view
        item: dict[str, Any] = {
            "pk": {"S": DELIVERIES_PREFIX + delivery.webhook_id},
            "sk": {"S": delivery.position},
            "owner": {"S": delivery.owner},
            "delivery_id": {"S": view.id},
            "event_id": {"S": view.event_id},
            "type": {"S": view.type},
            "body": {"S": delivery.body},
            "status": {"S": view.status},
            "attempts": {"N": str(view.attempts)},
            "history": {"S": json.dumps([attempt.model_dump(mode="json") for attempt in view.history])},
            "created_at": {"S": _time(view.created_at)},
        }
        if view.next_attempt_at is not None:
            item["next_attempt_at"] = {"S": _time(view.next_attempt_at)}
        return item

    # ---- rate

    def take_send_slot(self, webhook_id: str, second: int, per_second: int) -> bool:
        """Count one delivery in ``second``; False when ``per_second`` were sent in it already."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"pk": {"S": RATE_PREFIX + webhook_id}, "sk": {"S": str(second)}},
                UpdateExpression="ADD sent :one SET expires_at = :expires",
                ConditionExpression="attribute_not_exists(sent) OR sent < :limit",
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":limit": {"N": str(per_second)},
                    ":expires": {"N": str(second + 3600)},
                },
            )
        except ClientError as exc:
            if aws.error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True


def _endpoint(item: dict[str, Any]) -> Endpoint:
    updated = item.get("updated_at", {}).get("S")
    return Endpoint(
        owner=item["pk"]["S"].removeprefix(OWNER_PREFIX),
        secret=item["secret"]["S"],
        view=WebhookView(
            id=item["sk"]["S"].removeprefix(WEBHOOK_PREFIX),
            url=item["url"]["S"],
            events=[value["S"] for value in item["events"]["L"]],  # type: ignore[misc]
            description=item.get("description", {}).get("S", ""),
            status=item["status"]["S"],  # type: ignore[arg-type]
            disabled_reason=item.get("disabled_reason", {}).get("S"),
            created_at=datetime.fromisoformat(item["created_at"]["S"]),
            updated_at=datetime.fromisoformat(updated) if updated else None,
        ),
    )


def _delivery(item: dict[str, Any]) -> Delivery:
    code = item.get("response_code", {}).get("N")
    following = item.get("next_attempt_at", {}).get("S")
    replayed = item.get("replayed_at", {}).get("S")
    status: DeliveryStatus = item["status"]["S"]  # type: ignore[assignment]
    return Delivery(
        owner=item["owner"]["S"],
        webhook_id=item["pk"]["S"].removeprefix(DELIVERIES_PREFIX),
        position=item["sk"]["S"],
        body=item["body"]["S"],
        view=DeliveryView(
            id=item["delivery_id"]["S"],
            event_id=item["event_id"]["S"],
            type=item["type"]["S"],
            status=status,
            attempts=int(item["attempts"]["N"]),
            response_code=int(code) if code else None,
            created_at=datetime.fromisoformat(item["created_at"]["S"]),
            next_attempt_at=datetime.fromisoformat(following) if following else None,
            replayed_at=datetime.fromisoformat(replayed) if replayed else None,
            history=[DeliveryAttempt.model_validate(entry) for entry in json.loads(item["history"]["S"])],
        ),
    )
