"""The embedded AWS (moto's server with the local stack's fixes), over real HTTP on loopback."""

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.models.table import Table

from local_stack.moto_server import EmbeddedAws


@pytest.fixture
def dynamodb(aws: EmbeddedAws) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=aws.url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


@pytest.fixture
def table(dynamodb: Any, request: pytest.FixtureRequest) -> str:
    name = f"t-{request.node.name}"[:200]
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def put(table: str, key: str, value: str, condition: str | None = None) -> dict[str, Any]:
    operation: dict[str, Any] = {"TableName": table, "Item": {"k": {"S": key}, "v": {"S": value}}}
    if condition:
        operation["ConditionExpression"] = condition
    return {"Put": operation}


def value_of(dynamodb: Any, table: str, key: str) -> str | None:
    item = dynamodb.get_item(TableName=table, Key={"k": {"S": key}}, ConsistentRead=True).get("Item")
    return item["v"]["S"] if item else None


def test_a_transaction_commits_all_its_writes(dynamodb: Any, table: str) -> None:
    dynamodb.transact_write_items(TransactItems=[put(table, "a", "1"), put(table, "b", "2")])
    assert (value_of(dynamodb, table, "a"), value_of(dynamodb, table, "b")) == ("1", "2")


def test_a_failed_transaction_leaves_every_item_as_it_was(dynamodb: Any, table: str) -> None:
    # Given an existing item
    dynamodb.put_item(TableName=table, Item={"k": {"S": "old"}, "v": {"S": "before"}})
    # When a transaction overwrites it, adds a new one, then fails a condition
    with pytest.raises(ClientError) as raised:
        dynamodb.transact_write_items(
            TransactItems=[
                put(table, "old", "after"),
                put(table, "new", "x"),
                put(table, "old2", "y", condition="attribute_exists(k)"),
            ]
        )
    # Then it is cancelled and nothing it wrote remains
    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert value_of(dynamodb, table, "old") == "before"
    assert value_of(dynamodb, table, "new") is None
    assert value_of(dynamodb, table, "old2") is None


def test_concurrent_transactions_do_not_break_the_server(dynamodb: Any, table: str) -> None:
    # moto's DynamoDB is not thread-safe; the embedded server serialises its requests.
    def write(number: int) -> None:
        for index in range(10):
            dynamodb.transact_write_items(TransactItems=[put(table, f"{number}-{index}", "v")])

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(write, range(8)))
    count = dynamodb.scan(TableName=table, Select="COUNT", ConsistentRead=True)["Count"]
    assert count == 80


def test_model_records_do_not_accumulate(dynamodb: Any, table: str) -> None:
    # moto records every instance it creates (copies included) unless the server drops them.
    for index in range(5):
        dynamodb.transact_write_items(TransactItems=[put(table, f"r{index}", "v")])
    assert len(Table.instances_tracked) == 0  # type: ignore[attr-defined]
