"""An expression DynamoDB refuses is refused by the embedded AWS as DynamoDB does
(local_stack.dynamodb.expressions): ValidationException, a 400 that boto3 does not retry, never a
500; and nothing is written."""

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from local_stack.embedded.client import FAKE_CREDENTIALS
from local_stack.embedded.server import EmbeddedAws

pytestmark = pytest.mark.integration

REGION = "us-east-1"
TABLE = "expressions"


@pytest.fixture
def dynamodb(aws: EmbeddedAws) -> Any:
    # One attempt: a 500 would be retried, and this is about the first answer.
    client = boto3.client(
        "dynamodb",
        endpoint_url=aws.url,
        region_name=REGION,
        config=Config(retries={"total_max_attempts": 1}),
        **FAKE_CREDENTIALS,
    )
    if TABLE not in client.list_tables()["TableNames"]:
        client.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    return client


REFUSED = [
    ({"ConditionExpression": "a = :v"}, "attribute value: :v"),
    (
        {"ConditionExpression": "#n = :v", "ExpressionAttributeValues": {":v": {"S": "x"}}},
        "attribute name: #n",
    ),
    ({"ConditionExpression": "a = = b"}, "Syntax error"),
    ({"ConditionExpression": "nosuch(a)"}, "Syntax error"),
]


@pytest.mark.parametrize(("expression", "said"), REFUSED)
def test_a_put_with_a_refused_condition_is_a_validation_exception_and_writes_nothing(
    dynamodb: Any, expression: dict[str, Any], said: str
) -> None:
    with pytest.raises(ClientError) as refused:
        dynamodb.put_item(TableName=TABLE, Item={"k": {"S": "put"}}, **expression)
    error = refused.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Code"] == "ValidationException" and said in error["Error"]["Message"]
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key={"k": {"S": "put"}})


@pytest.mark.parametrize(("expression", "said"), REFUSED)
def test_a_transaction_and_a_scan_refuse_them_alike(
    dynamodb: Any, expression: dict[str, Any], said: str
) -> None:
    put = {"TableName": TABLE, "Item": {"k": {"S": "transacted"}}, **expression}
    with pytest.raises(ClientError) as refused:
        dynamodb.transact_write_items(TransactItems=[{"Put": put}])
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key={"k": {"S": "transacted"}})
    scan = {**expression, "FilterExpression": expression["ConditionExpression"]}
    del scan["ConditionExpression"]
    with pytest.raises(ClientError) as filtered:
        dynamodb.scan(TableName=TABLE, **scan)
    assert filtered.value.response["Error"]["Code"] == "ValidationException", filtered.value.response
    assert said in filtered.value.response["Error"]["Message"]


def test_a_condition_it_can_read_still_decides(dynamodb: Any) -> None:
    item = {"k": {"S": "decided"}, "a": {"S": "x"}}
    dynamodb.put_item(TableName=TABLE, Item=item, ConditionExpression="attribute_not_exists(k)")
    with pytest.raises(ClientError) as failed:
        dynamodb.put_item(TableName=TABLE, Item=item, ConditionExpression="attribute_not_exists(k)")
    assert failed.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    dynamodb.put_item(
        TableName=TABLE,
        Item={**item, "a": {"S": "y"}},
        ConditionExpression="#a = :v",
        ExpressionAttributeNames={"#a": "a"},
        ExpressionAttributeValues={":v": {"S": "x"}},
    )
    assert dynamodb.get_item(TableName=TABLE, Key={"k": {"S": "decided"}})["Item"]["a"] == {"S": "y"}
