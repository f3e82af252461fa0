"""Query and Scan answers written as JSON straight away (local_stack.dynamodb.results): boto3 reads
back every attribute type as it was put, with moto's counts, keys and errors."""

from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core.responses import ActionResult

from local_stack.dynamodb import results as dynamodb_results

pytestmark = pytest.mark.integration

EVERY_TYPE: dict[str, Any] = {
    "pk": {"S": "p"},
    "sk": {"S": "a"},
    "n": {"N": "12.5"},
    "b": {"B": b"\x00\xffbytes"},
    "ss": {"SS": ["x", "y"]},
    "ns": {"NS": ["1", "2"]},
    "bs": {"BS": [b"\x01", b"\x02"]},
    "l": {"L": [{"S": "in"}, {"N": "3"}, {"B": b"\x03"}]},
    "m": {"M": {"k": {"BOOL": True}, "z": {"NULL": True}}},
}


@pytest.fixture
def client() -> Any:
    dynamodb_results.install()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="T",
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def _sorted_sets(item: dict[str, Any]) -> dict[str, Any]:
    return {
        name: {
            kind: sorted(value) if kind.endswith("S") and kind != "S" else value
            for kind, value in typed.items()
        }
        for name, typed in item.items()
    }


def test_every_attribute_type_reads_back_as_put(client: Any) -> None:
    client.put_item(TableName="T", Item=EVERY_TYPE)
    queried = client.query(
        TableName="T", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p"}}
    )
    scanned = client.scan(TableName="T")
    for answer in (queried, scanned):
        assert answer["Count"] == answer["ScannedCount"] == 1
        assert _sorted_sets(answer["Items"][0]) == _sorted_sets(EVERY_TYPE)


def test_pages_filters_and_errors_are_moto_s(client: Any) -> None:
    for sk in "abc":
        client.put_item(TableName="T", Item={"pk": {"S": "p"}, "sk": {"S": sk}, "odd": {"BOOL": sk != "b"}})
    first = client.query(
        TableName="T",
        KeyConditionExpression="pk = :p",
        FilterExpression="odd = :t",
        ExpressionAttributeValues={":p": {"S": "p"}, ":t": {"BOOL": True}},
        Limit=2,
        ReturnConsumedCapacity="TOTAL",
    )
    assert [item["sk"]["S"] for item in first["Items"]] == ["a"]
    assert (first["Count"], first["ScannedCount"]) == (1, 2)
    assert first["LastEvaluatedKey"] == {"pk": {"S": "p"}, "sk": {"S": "b"}}
    assert first["ConsumedCapacity"]["TableName"] == "T"
    last = client.scan(TableName="T", ExclusiveStartKey=first["LastEvaluatedKey"])
    assert [item["sk"]["S"] for item in last["Items"]] == ["c"] and "LastEvaluatedKey" not in last
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.scan(TableName="missing")


def _reads(client: Any) -> list[dict[str, Any]]:
    """The answers of every single-item and batch read, for an item of every type and a missing one."""
    keys = [{"pk": {"S": "p"}, "sk": {"S": "a"}}, {"pk": {"S": "p"}, "sk": {"S": "missing"}}]
    answers = [
        client.get_item(TableName="T", Key=keys[0], ConsistentRead=True),
        client.get_item(TableName="T", Key=keys[1]),
        client.get_item(TableName="T", Key=keys[0], ProjectionExpression="n, m.k"),
        client.batch_get_item(RequestItems={"T": {"Keys": keys}}),
        client.transact_get_items(TransactItems=[{"Get": {"TableName": "T", "Key": key}} for key in keys]),
    ]
    for answer in answers:
        answer.pop("ResponseMetadata")
        responses = answer.get("Responses", [])
        if isinstance(responses, dict):  # BatchGetItem's, by table; TransactGetItems' a list
            batch = responses.get("T", [])
        else:
            batch = [one.get("Item") for one in responses]
        for item in [answer.get("Item"), *batch]:
            if item:
                item.update(_sorted_sets(item))
    return answers


def test_single_item_and_batch_reads_answer_as_motos_own_serializer_does(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an item of every attribute type
    client.put_item(TableName="T", Item=EVERY_TYPE)
    # When it is read by GetItem, BatchGetItem and TransactGetItems, answered straight away
    fast = _reads(client)
    # Then boto3 reads the same answers as from moto's own serializer, the item as it was put
    monkeypatch.setattr(ActionResult, "execute_result", ActionResult.execute_result.__wrapped__)
    assert fast == _reads(client)
    assert _sorted_sets(fast[0]["Item"]) == _sorted_sets(EVERY_TYPE) and "Item" not in fast[1]
    assert fast[2]["Item"] == {"n": {"N": "12.5"}, "m": {"M": {"k": {"BOOL": True}}}}
