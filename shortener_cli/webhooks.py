"""``shortener webhooks``: the caller's endpoints (add, list, test, deliveries, replay, enable,
disable, remove), over the API's /webhooks routes (docs/webhooks.md)."""

import argparse
from typing import Any
from urllib.parse import quote, urlencode

from shortener_cli import output
from shortener_cli.client import ShortenerClient

EVENTS = "link.created, link.updated, link.deleted, link.clicked, job.completed, batch.completed"


def add_parser(commands: Any) -> None:
    webhooks = commands.add_parser("webhooks", help="endpoints told of link, click, job and batch events")
    actions = webhooks.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="register an endpoint (its signing secret is printed once)")
    add.add_argument("url", help="where deliveries are POSTed (https; http://127.0.0.1 on the local stack)")
    add.add_argument("--events", required=True, help=f"comma-separated: {EVENTS}")
    add.add_argument("--description", default="")
    actions.add_parser("list", help="the endpoints, oldest first")
    for name, text in (
        ("show", "one endpoint"),
        ("test", "send a signed webhook.test delivery"),
        ("enable", "send to it again (after the stack disabled it)"),
        ("disable", "stop sending to it"),
        ("remove", "delete it"),
    ):
        actions.add_parser(name, help=text).add_argument("webhook_id")
    deliveries = actions.add_parser("deliveries", help="its deliveries, newest first, with every attempt")
    deliveries.add_argument("webhook_id")
    deliveries.add_argument("--limit", type=int, default=20)
    replay = actions.add_parser("replay", help="send a delivery again (same body, fresh retries)")
    replay.add_argument("webhook_id")
    replay.add_argument("delivery_id")


def run(client: ShortenerClient, args: argparse.Namespace) -> int:
    action, hook = args.action, quote(getattr(args, "webhook_id", ""), safe="")
    if action == "add":
        events = [name.strip() for name in args.events.split(",") if name.strip()]
        answer = client.webhooks(
            "POST", fields={"url": args.url, "events": events, "description": args.description}
        )
    elif action == "list":
        found = client.webhooks("GET")["webhooks"]
        if args.json:
            print(output.as_json(found))
        for webhook in [] if args.json else found:
            print(_line(webhook))
        if not found and not args.json:
            print("No webhooks.")
        return 0
    elif action == "deliveries":
        page = client.webhooks("GET", f"{hook}/deliveries?{urlencode({'limit': args.limit})}")
        for delivery in page["deliveries"]:
            print(output.as_json_line(delivery) if args.json else _delivery_line(delivery))
        return 0
    elif action in ("enable", "disable"):
        answer = client.webhooks("PATCH", hook, {"status": f"{action}d"})
    elif action == "remove":
        client.webhooks("DELETE", hook)
        answer = {"id": args.webhook_id, "removed": True}
    elif action == "test":
        answer = client.webhooks("POST", f"{hook}/test")
    elif action == "replay":
        answer = client.webhooks("POST", f"{hook}/deliveries/{quote(args.delivery_id, safe='')}/replay")
    else:
        answer = client.webhooks("GET", hook)
    print(output.as_json(answer) if args.json else output.aligned_fields(answer))
    return 0


def _line(webhook: dict[str, Any]) -> str:
    reason = f"  ({webhook['disabled_reason']})" if webhook.get("disabled_reason") else ""
    return f"{webhook['id']}  {webhook['status']}  {','.join(webhook['events'])}  {webhook['url']}{reason}"


def _delivery_line(delivery: dict[str, Any]) -> str:
    codes = ",".join(str(attempt["response_code"] or "-") for attempt in delivery["history"])
    return (
        f"{delivery['created_at']}  {delivery['id']}  {delivery['type']}  {delivery['status']}  "
        f"attempts {delivery['attempts']} ({codes})"
    )
