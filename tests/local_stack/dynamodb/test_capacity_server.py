"""The embedded DynamoDB with its capacity enforced (--dynamodb-capacity), over real HTTP: what a
throttled request is answered, as botocore parses it. The model's clock is held still, so what is
granted depends only on what was asked."""

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from local_stack.dynamodb import throttling as dynamodb_throttling
from local_stack.dynamodb.capacity import CapacitySettings
from local_stack.dynamodb.throttling import DynamoDbCapacity
from local_stack.embedded import EmbeddedAws

pytestmark = pytest.mark.integration

# 4,000 write units / 400: the table takes 10 a second, each partition key 2.5.
SCALE = 400.0
TABLE = "capacity-links"
ARN = f"arn:aws:dynamodb:us-east-1:123456789012:table/{TABLE}"
PROPERTIES: dict[str, Any] = {
    "KeySchema": [{"AttributeName": "code", "KeyType": "HASH"}],
    "AttributeDefinitions": [
        {"AttributeName": "code", "AttributeType": "S"},
        {"AttributeName": "list_pk", "AttributeType": "S"},
    ],
    "BillingMode": "PAY_PER_REQUEST",
    "GlobalSecondaryIndexes": [
        {
            "IndexName": "ByOwner",
            "KeySchema": [{"AttributeName": "list_pk", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"},
            # The index takes 2 writes a second: it throttles the table's writes first.
            "OnDemandThroughput": {"MaxWriteRequestUnits": 800},
        }
    ],
}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="module")
def aws(clock: Clock) -> Iterator[tuple[EmbeddedAws, DynamoDbCapacity]]:
    server = EmbeddedAws(0)
    capacity = dynamodb_throttling.attach(server, CapacitySettings(scale=SCALE))
    assert capacity is not None
    capacity._clock = clock
    server.start()
    dynamodb = client(server)
    dynamodb.create_table(
        TableName=TABLE,
        **{key: value for key, value in PROPERTIES.items() if key != "GlobalSecondaryIndexes"},
        GlobalSecondaryIndexes=[
            {k: v for k, v in index.items() if k != "OnDemandThroughput"}
            for index in PROPERTIES["GlobalSecondaryIndexes"]
        ],
    )
    capacity.add_table(TABLE, ARN, PROPERTIES)
    yield server, capacity
    server.stop()


def client(server: EmbeddedAws) -> Any:
    """No retries: each call shows the answer itself."""
    return boto3.client(
        "dynamodb",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )


@pytest.fixture
def dynamodb(aws: tuple[EmbeddedAws, DynamoDbCapacity], clock: Clock) -> Any:
    clock.now += 10.0  # every bucket full again
    return client(aws[0])


def link(code: str, owner: str | None = None) -> dict[str, Any]:
    item = {"code": {"S": code}, "url": {"S": f"https://example.com/{code}"}}
    if owner:
        item["list_pk"] = {"S": owner}
    return item


def test_writes_beyond_the_table_rate_are_throttled_as_dynamodb_throttles_them(dynamodb: Any) -> None:
    for number in range(10):
        dynamodb.put_item(TableName=TABLE, Item=link(f"a{number}"))
    with pytest.raises(ClientError) as refused:
        dynamodb.put_item(TableName=TABLE, Item=link("a10"))
    error = refused.value.response
    assert error["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert error["ThrottlingReasons"] == [{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": ARN}]
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key={"code": {"S": "a10"}})


def test_a_batch_beyond_the_rate_writes_what_fits_and_hands_the_rest_back(dynamodb: Any) -> None:
    requests = [{"PutRequest": {"Item": link(f"b{number}")}} for number in range(25)]
    answer = dynamodb.batch_write_item(RequestItems={TABLE: requests})
    handed_back = answer["UnprocessedItems"][TABLE]
    assert handed_back == requests[10:]
    written = [
        code
        for code in (f"b{number}" for number in range(25))
        if "Item" in dynamodb.get_item(TableName=TABLE, Key={"code": {"S": code}})
    ]
    assert written == [f"b{number}" for number in range(10)]
    with pytest.raises(ClientError) as refused:  # nothing fits: the whole batch is refused
        dynamodb.batch_write_item(RequestItems={TABLE: requests[10:]})
    assert refused.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"


def test_an_index_at_its_maximum_throttles_the_table_write_with_throttling_exception(dynamodb: Any) -> None:
    dynamodb.put_item(TableName=TABLE, Item=link("c0", owner="o#0"))
    dynamodb.put_item(TableName=TABLE, Item=link("c1", owner="o#1"))
    dynamodb.put_item(TableName=TABLE, Item=link("c2"))  # not in the index: only the table's units
    with pytest.raises(ClientError) as refused:
        dynamodb.put_item(TableName=TABLE, Item=link("c3", owner="o#2"))
    error = refused.value.response
    assert error["Error"]["Code"] == "ThrottlingException"
    assert error["throttlingReasons"][0] == {
        "reason": "IndexWriteMaxOnDemandThroughputExceeded",
        "resource": f"{ARN}/index/ByOwner",
    }


def test_a_throttled_transaction_is_cancelled_with_throttling_errors(dynamodb: Any, clock: Clock) -> None:
    dynamodb.put_item(TableName=TABLE, Item=link("d-first"))
    puts = [{"Put": {"TableName": TABLE, "Item": link(f"d{number}")}} for number in range(5)]
    with pytest.raises(ClientError) as refused:  # 5 puts x 2 units > the 9 left
        dynamodb.transact_write_items(TransactItems=puts)
    error = refused.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    assert {reason["Code"] for reason in error["CancellationReasons"]} == {"ThrottlingError"}
    clock.now += 1.0
    dynamodb.transact_write_items(TransactItems=puts)


def test_the_figures_count_units_and_throttled_requests(
    aws: tuple[EmbeddedAws, DynamoDbCapacity], dynamodb: Any
) -> None:
    with urllib.request.urlopen(f"{aws[0].url}/_local/dynamodb-capacity") as answer:
        before = json.load(answer)["tables"][TABLE]
    dynamodb.put_item(TableName=TABLE, Item=link("e0", owner="o#3"))
    dynamodb.batch_write_item(
        RequestItems={TABLE: [{"PutRequest": {"Item": link(f"e{number}")}} for number in range(1, 21)]}
    )  # 9 of them fit
    dynamodb.query(
        TableName=TABLE,
        IndexName="ByOwner",
        KeyConditionExpression="list_pk = :p",
        ExpressionAttributeValues={":p": {"S": "o#3"}},
    )
    with urllib.request.urlopen(f"{aws[0].url}/_local/dynamodb-capacity") as answer:
        figures = json.load(answer)
    after = figures["tables"][TABLE]
    assert figures["settings"] == "scale=400"
    assert after["write_units"] - before["write_units"] == 10
    assert after["indexes"]["ByOwner"]["write_units"] - before["indexes"]["ByOwner"]["write_units"] == 1
    assert after["write_requests"] - before["write_requests"] == 2
    assert after["throttled_write_requests"] - before["throttled_write_requests"] == 1
    assert after["throttled_items"] - before["throttled_items"] == 11
    assert after["read_units"] - before["read_units"] == 0  # the Query read the index
    assert after["write_rate"] == 10.0
