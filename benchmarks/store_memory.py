"""Where the embedded AWS's memory goes, per link: moto's DynamoDB items, the sorted index beside
them, and what an SQS message leaves behind once deleted.

    python -m benchmarks store_memory [--links 100000] [--messages 20000] [--moto-items] [--sites]

In this process (moto in process, every local stack patch installed, no server), a links table
shaped as template.yaml's (hash key ``code``, the ByOwner index on ``list_pk``/``list_sk``,
projection ALL) gets --links bulk links through boto3's BatchWriteItem, 25 a request, as the
loops write them (shortener.links.store_items). Python's own allocation tracer (tracemalloc) counts
the bytes still allocated after the writes, grouped by what allocated them: moto's items (its
Item and DynamoType objects and their dicts), the attribute values (the strings parsed from the
requests), the sorted index (local_stack/dynamodb/index.py and sortedcontainers). Then
one queue sends, receives and deletes --messages messages, and the bytes still held after are
printed per message. --moto-items measures moto's own items (without the compaction of
local_stack/dynamodb/compact.py), the figure before it. --sites also prints the lines
that allocated the most bytes still held, per link (what each object of an item costs). The
figures are those of the embedded AWS process; the whole local stack's peak memory during a job is printed by
``make bench ARGS="bulk --direct"``.
"""

import argparse
import gc
import os
import tracemalloc
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from moto.core.model_instances import reset_model_data
from moto.dynamodb.models.dynamo_type import Item

BATCH = 25
_GROUPS = (
    ("sorted index", ("dynamodb_index.py", "sortedcontainers")),
    ("moto items (Item, DynamoType, attribute dicts)", ("moto/dynamodb/models", "dynamodb_compact.py")),
    ("attribute values and names (parsed request strings)", ("json/", "moto/dynamodb/responses")),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=100_000, help="links written into the table")
    parser.add_argument("--messages", type=int, default=20_000, help="SQS messages sent and deleted")
    parser.add_argument(
        "--moto-items",
        action="store_true",
        help="moto's own items, without local_stack/dynamodb/compact.py (the before figure)",
    )
    parser.add_argument("--sites", action="store_true", help="the top allocating lines, per link")
    options = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID="local", AWS_SECRET_ACCESS_KEY="local", AWS_DEFAULT_REGION="us-east-1"
    )
    import boto3
    from moto import mock_aws

    from local_stack import patches

    with mock_aws():
        patches.install_all()
        if options.moto_items:
            Item.__init__ = Item.__init__.__wrapped__  # type: ignore[attr-defined]
        dynamodb = boto3.client("dynamodb")
        _links_table(dynamodb)
        items = _write_links(dynamodb, options.links, options.sites)
        print(f"moto DynamoDB, {options.links:,} bulk links ({items}):")
        sqs = boto3.client("sqs")
        held = _sqs_messages(sqs, options.messages)
        print(f"moto SQS: {held / options.messages:,.0f} bytes held per message sent and deleted")


def _links_table(dynamodb: Any) -> None:
    strings = [{"AttributeName": name, "AttributeType": "S"} for name in ("code", "list_pk", "list_sk")]
    dynamodb.create_table(
        TableName="links",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=strings,
        KeySchema=[{"AttributeName": "code", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "ByOwner",
                "KeySchema": [
                    {"AttributeName": "list_pk", "KeyType": "HASH"},
                    {"AttributeName": "list_sk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )


def _write_links(dynamodb: Any, count: int, sites: bool = False) -> str:
    from shortener.links.model import Link
    from shortener.links.store_items import link_to_item

    created = datetime(2026, 11, 26, 8, 0, tzinfo=UTC)
    job_id = "5f0c1e9e-4a57-4a0e-9d4b-2b0d3f6c1a77"
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for start in range(0, count, BATCH):
        batch = [
            link_to_item(
                Link(
                    code=_code(n),
                    url=f"https://shop.example.com/timed/{n}",
                    owner="key-0123456789abcdef",
                    created_at=created,
                    job_id=job_id,
                )
            )
            for n in range(start, min(count, start + BATCH))
        ]
        dynamodb.batch_write_item(RequestItems={"links": [{"PutRequest": {"Item": i}} for i in batch]})
    reset_model_data()  # as the embedded server does after every request
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    if sites:
        for stat in sorted(after.compare_to(before, "lineno"), key=lambda s: -s.size_diff)[:14]:
            frame = stat.traceback[0]
            where = "/".join(frame.filename.split("/")[-2:])
            print(
                f"  {where}:{frame.lineno:<28} {stat.size_diff / count:>7,.1f} bytes per link,"
                f" {stat.count_diff / count:.2f} blocks"
            )
    groups: Counter[str] = Counter()
    for stat in after.compare_to(before, "filename"):
        where = stat.traceback[0].filename
        name = next((g for g, marks in _GROUPS if any(m in where for m in marks)), "other")
        groups[name] += stat.size_diff
    total = sum(groups.values())
    for name, size in groups.most_common():
        print(f"  {name:<55} {size / count:>7,.0f} bytes per link")
    return f"{total / count:,.0f} bytes per link in all, {total / 1e6:,.1f} MB"


def _code(number: int) -> str:
    """A 7-character code, as the bulk path's codes are (base 62 of a scattered number)."""
    value, digits = number * 2_654_435_761 % 62**7, []
    for _ in range(7):
        value, digit = divmod(value, 62)
        digits.append(_DIGITS[digit])
    return "".join(digits)


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sqs_messages(sqs: Any, count: int) -> float:
    url = sqs.create_queue(QueueName="measured")["QueueUrl"]
    body = '{"job_id": "5f0c1e9e-4a57-4a0e-9d4b-2b0d3f6c1a77", "chunk": 1}'
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for start in range(0, count, 10):
        entries = [{"Id": str(n), "MessageBody": body} for n in range(start, min(count, start + 10))]
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
        received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if received:
            sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(received)],
            )
    reset_model_data()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    return float(sum(stat.size_diff for stat in after.compare_to(before, "filename")))


if __name__ == "__main__":
    main()
