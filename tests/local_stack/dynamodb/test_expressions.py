"""Condition and filter expressions parsed once per text (local_stack.dynamodb.expressions): the
kept tree is the one of the expression's own names and values, so each item is still judged by
what its request said."""

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb import comparisons

from local_stack.dynamodb import expressions

pytestmark = pytest.mark.integration


@pytest.fixture
def client() -> Any:
    expressions.install()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="T",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def put_if(client: Any, pk: str, expression: str, names: dict[str, str], values: dict[str, Any]) -> bool:
    """A transaction's conditional put (as a bulk message's claims are made); whether it was written."""
    put = {"TableName": "T", "Item": {"pk": {"S": pk}, "n": {"N": "1"}}, "ConditionExpression": expression}
    if names:
        put["ExpressionAttributeNames"] = names
    if values:
        put["ExpressionAttributeValues"] = values
    try:
        client.transact_write_items(TransactItems=[{"Put": put}])
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "TransactionCanceledException"
        return False
    return True


def test_one_text_with_other_values_is_judged_by_each_requests_values(client: Any) -> None:
    client.put_item(TableName="T", Item={"pk": {"S": "a"}, "n": {"N": "5"}})
    below = "attribute_not_exists(pk) OR #n < :limit"
    # The same text, three times, with values that make it hold, fail, then hold again
    assert put_if(client, "a", below, {"#n": "n"}, {":limit": {"N": "9"}})
    client.put_item(TableName="T", Item={"pk": {"S": "a"}, "n": {"N": "5"}})
    assert not put_if(client, "a", below, {"#n": "n"}, {":limit": {"N": "2"}})
    assert put_if(client, "a", below, {"#n": "n"}, {":limit": {"N": "6"}})


def test_one_text_with_other_names_is_judged_by_each_requests_names(client: Any) -> None:
    client.put_item(TableName="T", Item={"pk": {"S": "b"}, "n": {"N": "5"}, "m": {"N": "50"}})
    above = "#x > :floor"
    assert put_if(client, "b", above, {"#x": "n"}, {":floor": {"N": "1"}})
    client.put_item(TableName="T", Item={"pk": {"S": "b"}, "n": {"N": "5"}, "m": {"N": "0"}})
    assert not put_if(client, "b", above, {"#x": "m"}, {":floor": {"N": "1"}})


def test_a_claim_holds_once_per_key(client: Any) -> None:
    claims = [put_if(client, key, "attribute_not_exists(pk)", {}, {}) for key in ("c", "d", "c", "d", "e")]
    assert claims == [True, True, False, False, True]


def test_ten_puts_with_one_text_parse_it_once(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    parses: list[str] = []
    create = comparisons.create_condition_expression_parser

    def counted(expression: str, names: Any, values: Any) -> Any:
        parses.append(expression)
        return create(expression, names, values)

    monkeypatch.setattr(comparisons, "create_condition_expression_parser", counted)
    # A text no other test used (kept trees outlive a test)
    text = "attribute_not_exists(#only_here)"
    assert all(put_if(client, f"g{n}", text, {"#only_here": "pk"}, {}) for n in range(10))
    # moto alone parses it twice a put (the check, then the put's own)
    assert parses == [text]
