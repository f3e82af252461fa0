"""Survive a clean restart: on stop, the tables' items and the queues' messages go to a snapshot
in the data dir; on start they come back. moto keeps everything in memory, so without this a
restart would forget every link, job and loop token.

Queue URLs contain the embedded AWS's port; when it changed, stored values that were a resource's
old physical id (a token's queue_url) are rewritten to the new one."""

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_stack.aws import aws_client
from local_stack.intrinsics import ACCOUNT_ID
from local_stack.resources import QUEUE, TABLE, Resources

log = logging.getLogger(__name__)

SNAPSHOT_FILE = "snapshot.json"
_BATCH_WRITE_LIMIT = 25
_SEND_BATCH_LIMIT = 10


@dataclass(frozen=True)
class SnapshotSummary:
    """How much a snapshot held."""

    items: int
    messages: int


def save_snapshot(resources: Resources, data_dir: Path) -> SnapshotSummary:
    """Write every table's items and every queue's messages (in flight or not) to ``data_dir``."""
    dynamodb = aws_client("dynamodb", resources.aws_endpoint, resources.region)
    tables = {
        logical_id: _scan(dynamodb, resources.physical_id(logical_id))
        for logical_id in resources.of_type(TABLE)
    }
    queues = {logical_id: _queue_messages(resources, logical_id) for logical_id in resources.of_type(QUEUE)}
    snapshot = {"names": resources.names, "tables": tables, "queues": queues}
    data_dir.mkdir(parents=True, exist_ok=True)
    partial = data_dir / f"{SNAPSHOT_FILE}.partial"
    partial.write_text(json.dumps(snapshot), encoding="utf-8")
    os.replace(partial, data_dir / SNAPSHOT_FILE)  # never a half-written snapshot
    return SnapshotSummary(
        sum(len(items) for items in tables.values()), sum(len(messages) for messages in queues.values())
    )


def restore_snapshot(resources: Resources, data_dir: Path) -> SnapshotSummary | None:
    """Load the snapshot in ``data_dir`` into the fresh tables and queues; None when there is none."""
    path = data_dir / SNAPSHOT_FILE
    if not path.is_file():
        return None
    snapshot = json.loads(path.read_text(encoding="utf-8"))
    renames = {
        old: resources.names[logical_id]
        for logical_id, old in snapshot.get("names", {}).items()
        if logical_id in resources.names and resources.names[logical_id] != old
    }
    dynamodb = aws_client("dynamodb", resources.aws_endpoint, resources.region)
    sqs = aws_client("sqs", resources.aws_endpoint, resources.region)
    tables, items = resources.of_type(TABLE), 0
    for logical_id, stored in snapshot.get("tables", {}).items():
        if logical_id not in tables:
            log.warning("snapshot: table %s is no longer in the template; its items are dropped", logical_id)
            continue
        _write_items(
            dynamodb, resources.physical_id(logical_id), [_renamed(item, renames) for item in stored]
        )
        items += len(stored)
    queues, messages = resources.of_type(QUEUE), 0
    for logical_id, stored in snapshot.get("queues", {}).items():
        if logical_id in queues:
            _send_messages(sqs, resources.physical_id(logical_id), stored)
            messages += len(stored)
    return SnapshotSummary(items, messages)


def _scan(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items += page["Items"]
    return items


def _write_items(dynamodb: Any, table: str, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), _BATCH_WRITE_LIMIT):
        requests = [{"PutRequest": {"Item": item}} for item in items[start : start + _BATCH_WRITE_LIMIT]]
        pending: dict[str, Any] = {table: requests}
        while pending:
            pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def _queue_messages(resources: Resources, logical_id: str) -> list[dict[str, Any]]:
    """Every message of a queue, including those in flight: their loops were just stopped, and on
    AWS they would become visible again. Only the in-process moto backend can list those."""
    from moto.sqs.models import sqs_backends

    name = resources.resolver.attributes[logical_id]["QueueName"]
    try:
        queue = sqs_backends[ACCOUNT_ID][resources.region].get_queue(name)
        stored = list(queue._messages)
    except Exception:
        log.warning("snapshot: could not read the messages of %s; they are not saved", name, exc_info=True)
        return []
    return [
        {"body": message.body, "attributes": _api_attributes(message.message_attributes)}
        for message in stored
    ]


def _api_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    converted = {}
    for key, value in attributes.items():
        data_type = value.get("data_type") or value.get("DataType", "String")
        text = value.get("string_value") or value.get("StringValue")
        if text is not None:  # binary attributes are rare here and not worth the encoding dance
            converted[key] = {"DataType": data_type, "StringValue": text}
    return converted


def _send_messages(sqs: Any, queue_url: str, messages: list[dict[str, Any]]) -> None:
    for start in range(0, len(messages), _SEND_BATCH_LIMIT):
        entries = [
            {
                "Id": str(index),
                "MessageBody": message["body"],
                "MessageAttributes": message.get("attributes", {}),
            }
            for index, message in enumerate(messages[start : start + _SEND_BATCH_LIMIT])
        ]
        sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)


def _renamed(value: Any, renames: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {key: _renamed(item, renames) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed(item, renames) for item in value]
    if isinstance(value, str):
        return renames.get(value, value)
    return value
