"""Bulk writes paced to a table small enough to throttle them (the embedded DynamoDB with its
capacity enforced, the real clock): every link is written, the pacer slowed down on the throttles,
and the job's meter counted them."""

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from local_stack.cloudformation.template import create_table_arguments, resources_of_type
from local_stack.dynamodb import throttling as dynamodb_throttling
from local_stack.dynamodb.capacity import CapacitySettings
from local_stack.embedded import EmbeddedAws
from shortener import aws_usage as usage
from shortener.links.model import Link
from shortener.links.store import LinksStore
from shortener.loops.pacing import WritePacer

pytestmark = pytest.mark.integration

# The links table takes 4,000 / 40 = 100 write units a second.
SCALE = 40.0
TABLE = "paced-links"


@pytest.fixture(scope="module")
def links_store() -> Iterator[tuple[EmbeddedAws, Any]]:
    server = EmbeddedAws(0)
    capacity = dynamodb_throttling.attach(server, CapacitySettings(scale=SCALE))
    assert capacity is not None
    server.start()
    client = boto3.client(
        "dynamodb",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    client.create_table(**create_table_arguments("LinksTable", TABLE))
    properties = resources_of_type("AWS::DynamoDB::Table")["LinksTable"]["Properties"]
    capacity.add_table(TABLE, f"arn:aws:dynamodb:us-east-1:123456789012:table/{TABLE}", properties)
    yield server, usage.install(client)
    server.stop()


def links(prefix: str, count: int) -> list[Link]:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        Link(code=f"{prefix}{n}", url=f"https://example.com/{n}", created_at=created, owner="o", job_id="j")
        for n in range(count)
    ]


def test_paced_batches_through_a_throttling_table_write_every_link(
    links_store: tuple[EmbeddedAws, Any],
) -> None:
    # Given a pacer that starts well above the table's 100 writes a second (with no burst: a
    # loop's after its first, so every batch is paced)
    _, client = links_store
    pacer = WritePacer(start_rate=400, burst=0)
    store = LinksStore(TABLE, client, pacer=pacer)
    batch = links("p", 300)
    # When 300 links are written in batches, as a chunk does, under a job's meter
    with usage.Meter() as meter:
        store.put_generated_batch(batch)
        counted = meter.take()
    # Then every link is stored, the table throttled and the pacer slowed to about its rate
    stored = store.get_many([link.code for link in batch])
    assert len(stored) == 300
    assert pacer.throttles > 0 and counted.throttled_requests >= pacer.throttles
    assert pacer.rate < 400
    assert pacer.last_throttled_at is not None
