"""Webhooks under moto, with a real receiver on loopback: an owner registers an endpoint (its
secret shown once), a change is announced through EventBridge's rule to the queue, the sender
delivers it signed; a failed attempt is retried on schedule, recorded, and the endpoint is
disabled after the last one; deliveries are listed, replayed and bounded per second."""

import json
import re
import time
from collections.abc import Iterator
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest

from shortener.audit.store import AuditSelection, AuditStore
from shortener.services import api as api_services
from shortener.webhooks import signing
from shortener.webhooks.destinations import parse_destination
from shortener.webhooks.queue import DELIVERY_KEY, DeliveryDue, WebhooksQueue, delivery_due
from shortener.webhooks.sender import RETRY_DELAYS, WebhookSender
from shortener.webhooks.store import WebhooksStore
from tests.support.api import ApiCaller
from tests.support.webhooks import WebhookReceiver, webhook_receiver

pytestmark = pytest.mark.integration


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with webhook_receiver() as found:
        yield found


class Clock:
    def __init__(self) -> None:
        self.moment = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.moment


@pytest.fixture
def stack(tables: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The webhooks queue and the rule that puts announced events on it, as template.yaml has them."""
    sqs, events = boto3.client("sqs"), boto3.client("events")
    url = sqs.create_queue(QueueName="webhooks")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="webhook-events", EventPattern=json.dumps({"source": ["shortener.webhooks"]}))
    events.put_targets(Rule="webhook-events", Targets=[{"Id": "queue", "Arn": arn}])
    monkeypatch.setenv("WEBHOOKS_QUEUE_URL", url)
    monkeypatch.setenv("LOOPBACK_RECEIVERS", "true")
    api_services.api_webhooks.cache_clear()
    api_services.api_announcer.cache_clear()
    from shortener import settings

    settings.api_settings.cache_clear()
    return {"queue_url": url, "table": tables["WEBHOOKS_TABLE"], "audit": tables["AUDIT_TABLE"]}


class HeldQueue:
    """The sender's queue for waiting deliveries, held here: SQS's DelaySeconds runs on the
    machine's clock, these tests on their own; the message is the one SQS would carry."""

    def __init__(self) -> None:
        self.held: list[dict[str, Any]] = []

    def send(self, due: DeliveryDue, delay_seconds: float) -> None:
        assert delay_seconds >= 0
        self.held.append({DELIVERY_KEY: asdict(due)})


def sender(
    stack: dict[str, Any], clock: Clock, per_second: int = 10, on_disabled: Any = None
) -> WebhookSender:
    queue = stack.setdefault("held", HeldQueue())
    return WebhookSender(
        WebhooksStore(stack["table"]),
        queue,
        allow_loopback=True,
        per_second=per_second,
        on_disabled=on_disabled,
        now=clock,
    )


def drain(stack: dict[str, Any], send: WebhookSender) -> list[dict[str, Any]]:
    """Every message on the queue now (delays ignored: the test's clock decides what is due)."""
    sqs = boto3.client("sqs")
    handled = []
    held: HeldQueue = stack.setdefault("held", HeldQueue())
    waiting, held.held = held.held, []
    for body in waiting:
        send.handle(body)
        handled.append(body)
    while True:
        answer = sqs.receive_message(QueueUrl=stack["queue_url"], MaxNumberOfMessages=10, WaitTimeSeconds=0)
        messages = answer.get("Messages", [])
        if not messages:
            return handled
        for message in messages:
            body = json.loads(message["Body"])
            send.handle(body)
            handled.append(body)
            sqs.delete_message(QueueUrl=stack["queue_url"], ReceiptHandle=message["ReceiptHandle"])


def register(caller: ApiCaller, url: str, events: list[str]) -> dict[str, Any]:
    answer = caller.request("POST", "/webhooks", body={"url": url, "events": events})
    assert answer["statusCode"] == 201, answer["body"]
    return dict(json.loads(answer["body"]))


def hook(caller: ApiCaller, method: str, path: str, body: Any = None, **query: str) -> dict[str, Any]:
    parts = path.strip("/").split("/")
    resource = "/" + "/".join(
        {1: "{webhook_id}", 3: "{delivery_id}"}.get(index, part) for index, part in enumerate(parts)
    )
    parameters = {
        name: parts[index] for index, name in ((1, "webhook_id"), (3, "delivery_id")) if len(parts) > index
    }
    return caller.request(
        method, path, resource=resource, path_parameters=parameters, body=body, query=query or None
    )


def test_a_created_link_reaches_the_receiver_signed_through_the_rule_and_queue(
    api: ModuleType, stack: dict[str, Any], receiver: WebhookReceiver
) -> None:
    alice = ApiCaller(api, "alice")
    created = register(alice, receiver.url, ["link.created", "link.updated"])
    assert set(created) >= {"id", "url", "events", "secret"} and created["secret"].startswith("whsec_")
    listed = json.loads(alice.request("GET", "/webhooks")["body"])["webhooks"]
    assert [w["id"] for w in listed] == [created["id"]] and "secret" not in listed[0]
    link = alice.shorten("https://example.com/told", code="told")
    handled = drain(stack, sender(stack, Clock()))
    assert len(handled) == 1 and handled[0]["detail-type"] == "link.created"
    [(headers, raw, _)] = receiver.deliveries
    body = json.loads(raw)
    assert set(body) == {"id", "type", "created_at", "data"} and body["type"] == "link.created"
    assert body["data"]["code"] == "told" and body["data"]["short_url"] == link["short_url"]
    assert body["data"]["owner"] == "alice" and "password_hash" not in body["data"]
    assert headers["content-length"] == str(len(raw)) and headers["shortener-delivery"]
    assert signing.verify(
        created["secret"], headers["shortener-signature"], raw, now=datetime.now(UTC).timestamp()
    )
    assert not signing.verify(
        "whsec_other", headers["shortener-signature"], raw, now=datetime.now(UTC).timestamp()
    )
    # The signature is exactly the documented HMAC over "<t>.<raw body>"
    t = headers["shortener-signature"].split(",")[0].removeprefix("t=")
    assert headers["shortener-signature"] == signing.signature_header(created["secret"], int(t), raw)
    # Another owner's change, and an event the endpoint did not ask for, are not announced
    ApiCaller(api, "bob").shorten("https://example.com/bob")
    assert alice.link("DELETE", "told")["statusCode"] == 200
    assert drain(stack, sender(stack, Clock())) == []


def test_a_failed_delivery_is_retried_on_schedule_and_every_attempt_is_listed(
    api: ModuleType, stack: dict[str, Any], receiver: WebhookReceiver
) -> None:
    alice, clock = ApiCaller(api, "alice"), Clock()
    created = register(alice, receiver.url, ["link.updated"])
    alice.shorten("https://example.com/a", code="retried")
    assert alice.link("PATCH", "retried", {"url": "https://example.com/b"})["statusCode"] == 200
    receiver.statuses[:] = [500]
    send = sender(stack, clock)
    drain(stack, send)
    [delivery] = json.loads(hook(alice, "GET", f"/webhooks/{created['id']}/deliveries")["body"])["deliveries"]
    assert (delivery["status"], delivery["attempts"], delivery["response_code"]) == ("pending", 1, 500)
    due = datetime.fromisoformat(delivery["next_attempt_at"]) - clock.moment
    assert timedelta(seconds=RETRY_DELAYS[0] - 1) <= due <= timedelta(seconds=RETRY_DELAYS[0] + 1)
    # Not due yet: a message received early goes back without sending
    drain(stack, send)
    assert len(receiver.deliveries) == 1
    clock.moment += timedelta(seconds=RETRY_DELAYS[0])
    drain(stack, send)
    assert len(receiver.deliveries) == 2
    shown = json.loads(hook(alice, "GET", f"/webhooks/{created['id']}/deliveries/{delivery['id']}")["body"])
    assert (shown["status"], shown["attempts"], shown["response_code"]) == ("delivered", 2, 200)
    assert [a["response_code"] for a in shown["history"]] == [500, 200]
    # Both attempts sent the same body, the same event id: a receiver dedupes on it
    first, second = receiver.bodies()
    assert first == second and first["data"]["url"] == "https://example.com/b"


def test_an_endpoint_that_keeps_failing_is_disabled_with_its_reason_and_audited(
    api: ModuleType, stack: dict[str, Any], receiver: WebhookReceiver
) -> None:
    alice, clock = ApiCaller(api, "alice"), Clock()
    created = register(alice, receiver.url, ["link.created"])
    alice.shorten("https://example.com/doomed")
    receiver.statuses[:] = [503] * (len(RETRY_DELAYS) + 1)
    noticed: list[str] = []
    send = sender(stack, clock, on_disabled=lambda endpoint, reason: noticed.append(reason))
    drain(stack, send)
    for delay in RETRY_DELAYS:
        clock.moment += timedelta(seconds=delay)
        drain(stack, send)
    assert len(receiver.deliveries) == len(RETRY_DELAYS) + 1
    shown = json.loads(hook(alice, "GET", f"/webhooks/{created['id']}")["body"])
    assert shown["status"] == "disabled" and "503" in shown["disabled_reason"] and noticed
    [delivery] = json.loads(hook(alice, "GET", f"/webhooks/{created['id']}/deliveries")["body"])["deliveries"]
    assert (delivery["status"], delivery["attempts"]) == ("failed", len(RETRY_DELAYS) + 1)
    # Nothing more is sent to it; re-enabling it and replaying the delivery sends it again
    alice.shorten("https://example.com/after")
    drain(stack, send)
    assert len(receiver.deliveries) == len(RETRY_DELAYS) + 1
    assert hook(alice, "PATCH", f"/webhooks/{created['id']}", {"status": "enabled"})["statusCode"] == 200
    replay = hook(alice, "POST", f"/webhooks/{created['id']}/deliveries/{delivery['id']}/replay")
    assert replay["statusCode"] == 202, replay["body"]
    drain(stack, send)
    again = json.loads(hook(alice, "GET", f"/webhooks/{created['id']}/deliveries/{delivery['id']}")["body"])
    assert (again["status"], again["attempts"]) == ("delivered", len(RETRY_DELAYS) + 2)


def test_the_sender_records_the_disable_in_the_audit_log(
    stack: dict[str, Any], receiver: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shortener.access.model import Caller
    from shortener.services.webhooks import webhook_sender
    from shortener.webhooks.endpoints import WebhookEndpoints
    from shortener.webhooks.model import WebhookCreate

    monkeypatch.setenv("WEBHOOKS_QUEUE_URL", stack["queue_url"])
    endpoints = WebhookEndpoints(
        WebhooksStore(stack["table"]), WebhooksQueue(stack["queue_url"]), allow_loopback=True
    )
    created = endpoints.create(
        Caller(owner_id="alice", role="member"), WebhookCreate(url=receiver.url, events=["link.created"])
    )
    webhook_sender.cache_clear()
    disabled = webhook_sender()._on_disabled
    assert disabled is not None
    endpoint = WebhooksStore(stack["table"]).endpoint("alice", created.id)
    assert endpoint is not None
    disabled(endpoint, "A delivery failed for 25 hours")
    now = datetime.now(UTC)
    entries, _ = AuditStore(stack["audit"]).page(
        AuditSelection(now - timedelta(minutes=1), now + timedelta(minutes=1)), 10
    )
    assert [(e.actor, e.action, e.target) for e in entries] == [("system", "webhook.disabled", created.id)]


def test_a_test_delivery_and_a_second_copy_of_an_event(
    api: ModuleType, stack: dict[str, Any], receiver: WebhookReceiver
) -> None:
    alice = ApiCaller(api, "alice")
    created = register(alice, receiver.url, ["link.created"])
    accepted = hook(alice, "POST", f"/webhooks/{created['id']}/test")
    assert accepted["statusCode"] == 202
    assert receiver.deliveries == []  # queued, never sent in the request
    alice.shorten("https://example.com/copied")
    sqs = boto3.client("sqs")
    messages = sqs.receive_message(QueueUrl=stack["queue_url"], MaxNumberOfMessages=10)["Messages"]
    send = sender(stack, Clock())
    for message in messages:
        send.handle(json.loads(message["Body"]))
    # EventBridge or SQS may deliver an event twice: it makes no second delivery
    announced = next(json.loads(m["Body"]) for m in messages if delivery_due(json.loads(m["Body"])) is None)
    send.handle(announced)
    assert sorted(body["type"] for body in receiver.bodies()) == ["link.created", "webhook.test"]
    page = json.loads(hook(alice, "GET", f"/webhooks/{created['id']}/deliveries", limit="1")["body"])
    assert len(page["deliveries"]) == 1 and page["next_cursor"]
    rest = json.loads(
        hook(alice, "GET", f"/webhooks/{created['id']}/deliveries", cursor=page["next_cursor"])["body"]
    )
    assert len(rest["deliveries"]) == 1 and rest["deliveries"][0]["id"] != page["deliveries"][0]["id"]


def test_an_endpoint_is_sent_at_most_its_deliveries_a_second(
    api: ModuleType, stack: dict[str, Any], receiver: WebhookReceiver
) -> None:
    alice, clock = ApiCaller(api, "alice"), Clock()
    register(alice, receiver.url, ["link.created"])
    for number in range(5):
        alice.shorten(f"https://example.com/burst/{number}")
    send = sender(stack, clock, per_second=2)
    sqs = boto3.client("sqs")
    messages = sqs.receive_message(QueueUrl=stack["queue_url"], MaxNumberOfMessages=10)["Messages"]
    for message in messages:
        send.handle(json.loads(message["Body"]))
        sqs.delete_message(QueueUrl=stack["queue_url"], ReceiptHandle=message["ReceiptHandle"])
    assert len(receiver.deliveries) == 2
    clock.moment += timedelta(seconds=1)
    drain(stack, send)
    assert len(receiver.deliveries) == 4


@pytest.mark.parametrize(
    ("url", "word"),
    [
        ("http://10.0.0.8/hook", "private"),
        ("https://169.254.169.254/latest/meta-data", "private"),
        ("https://[::ffff:192.168.1.1]/", "private"),
        ("http://0.0.0.0:8080/", "private"),
        ("ftp://127.0.0.1/", "https"),
        ("https://user:pw@127.0.0.1/", "password"),
        ("not a url", "URL"),
    ],
)
def test_destinations_that_would_reach_inside_are_refused(
    api: ModuleType, stack: dict[str, Any], url: str, word: str
) -> None:
    answer = ApiCaller(api, "alice").request(
        "POST", "/webhooks", body={"url": url, "events": ["link.created"]}
    )
    assert answer["statusCode"] == 422 and word in json.loads(answer["body"])["message"], answer["body"]


def test_loopback_is_taken_only_where_the_stack_lives_on_loopback() -> None:
    assert parse_destination("http://127.0.0.1:9/x", allow_loopback=True).port == 9
    with pytest.raises(Exception, match="private"):
        parse_destination("http://127.0.0.1:9/x", allow_loopback=False)
    with pytest.raises(Exception, match="private"):
        parse_destination("https://localhost/x", allow_loopback=False)


def test_bodies_are_strict_and_endpoints_are_their_owners(
    api: ModuleType, stack: dict[str, Any], receiver: WebhookReceiver
) -> None:
    alice, bob = ApiCaller(api, "alice"), ApiCaller(api, "bob")
    unknown = alice.request(
        "POST", "/webhooks", body={"url": receiver.url, "events": ["link.created"], "secret": "x"}
    )
    assert unknown["statusCode"] == 422 and "secret" in unknown["body"]
    wrong = alice.request("POST", "/webhooks", body={"url": receiver.url, "events": ["link.renamed"]})
    assert wrong["statusCode"] == 422
    created = register(alice, receiver.url, ["link.created"])
    for limit in ("null", "0", "101"):
        bad = hook(alice, "GET", f"/webhooks/{created['id']}/deliveries", limit=limit)
        assert bad["statusCode"] == 400 and "limit" in json.loads(bad["body"])["message"], bad["body"]
    for method, path in (
        ("GET", ""),
        ("PATCH", ""),
        ("DELETE", ""),
        ("GET", "/deliveries"),
        ("POST", "/test"),
    ):
        answer = hook(
            bob,
            method,
            f"/webhooks/{created['id']}{path}",
            {"description": "x"} if method == "PATCH" else None,
        )
        assert answer["statusCode"] == 404 and json.loads(answer["body"])["error"] == "webhook_not_found"
    assert hook(alice, "DELETE", f"/webhooks/{created['id']}")["statusCode"] == 204
    assert hook(alice, "GET", f"/webhooks/{created['id']}")["statusCode"] == 404


def test_a_counted_batch_of_clicks_is_one_delivery_to_the_owner_who_asked_and_only_once(
    api: ModuleType, stack: dict[str, Any], receiver: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions.collector import app as collector
    from tests.shortener.clicks.test_collector import T0, deliveries, follow
    from tests.support.loops import LambdaContext

    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "collector")
    monkeypatch.setattr(collector.metrics, "namespace", "BulkShortenerTests")
    alice, bob = ApiCaller(api, "alice"), ApiCaller(api, "bob")
    register(alice, receiver.url, ["link.clicked"])
    alice.shorten("https://example.com/clicked", code="clicked-a")
    bob.shorten("https://example.com/other", code="clicked-b")
    drain(stack, sender(stack, Clock()))
    records = [follow("clicked-a", at=T0 + n) for n in range(3)] + [follow("clicked-b", at=T0 + 5)]
    [event] = deliveries(records)
    for _ in range(2):  # the same batch delivered twice is announced once
        collector.lambda_handler(event, LambdaContext("collector"))
    drain(stack, sender(stack, Clock()))
    [body] = receiver.bodies()
    assert body["type"] == "link.clicked"
    clicks = body["data"]["clicks"]
    assert [click["code"] for click in clicks] == ["clicked-a"] * 3
    assert set(clicks[0]) == {
        "time", "code", "job_id", "row", "destination", "status",
        "country", "device", "browser", "os", "referrer", "bot", "visitor",
    }  # fmt: skip
    assert "8.8.8.8" not in json.dumps(body)


def test_a_change_is_answered_when_the_endpoints_cannot_be_read(
    api: ModuleType, stack: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a webhooks table the API cannot read (here: gone)
    monkeypatch.setenv("WEBHOOKS_TABLE", "no-such-table")
    from shortener import settings

    settings.api_settings.cache_clear()
    api_services.api_announcer.cache_clear()
    # Then a link is still made and answered; nothing is announced
    created = ApiCaller(api, "alice").request("POST", "/", body={"url": "https://example.com/unannounced"})
    assert created["statusCode"] == 201, created["body"]
    assert drain(stack, sender(stack, Clock())) == []


def test_the_documented_verification_snippet_accepts_a_delivery_and_refuses_a_tampered_or_old_one() -> None:
    # The snippet a receiver copies from docs/webhooks.md, run as written
    text = (Path(__file__).parents[3] / "docs" / "webhooks.md").read_text(encoding="utf-8")
    [snippet] = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    namespace: dict[str, Any] = {}
    exec(snippet, namespace)
    verified = namespace["verified"]
    secret, body, now = signing.new_secret(), b'{"id":"evt_1","type":"link.created"}', int(time.time())
    assert verified(secret, signing.signature_header(secret, now, body), body)
    assert not verified(secret, signing.signature_header(secret, now, body), body + b" ")
    assert not verified(secret, signing.signature_header(secret, now - 301, body), body)
    assert not verified("whsec_other", signing.signature_header(secret, now, body), body)
