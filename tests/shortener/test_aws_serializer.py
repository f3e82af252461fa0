"""The DynamoDB client's serializer writes the parameters directly where that gives the same request
as botocore's own serializer, and falls back to botocore's path everywhere else: every request it
makes is the one botocore would make (the same method, path, headers and JSON document)."""

import json
from datetime import UTC, datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

import boto3
import pytest
from botocore.serialize import JSONSerializer
from hypothesis import given, settings
from hypothesis import strategies as st

from shortener import aws
from shortener.aws_serializer import DirectJSONSerializer, install


class StrEnumValue(StrEnum):
    ONE = "one"


_MODEL = boto3.client("dynamodb", region_name="us-east-1").meta.service_model

text = st.text(max_size=12)
scalar_values = st.one_of(
    st.builds(lambda s: {"S": s}, text),
    st.builds(lambda n: {"N": str(n)}, st.integers()),
    st.builds(lambda b: {"BOOL": b}, st.booleans()),
    st.just({"NULL": True}),
    st.builds(lambda ss: {"SS": ss}, st.lists(text, max_size=3)),
    st.builds(lambda ns: {"NS": [str(n) for n in ns]}, st.lists(st.integers(), max_size=3)),
    # Blobs: bytes as the stubs type them, and the str botocore also takes (and encodes).
    st.builds(lambda b: {"B": b}, st.one_of(st.binary(max_size=8), text)),
    st.builds(lambda bs: {"BS": bs}, st.lists(st.binary(max_size=8), max_size=3)),
)
attribute_values = st.recursive(
    scalar_values,
    lambda children: st.one_of(
        st.builds(lambda items: {"L": items}, st.lists(children, max_size=3)),
        st.builds(lambda mapping: {"M": mapping}, st.dictionaries(text, children, max_size=3)),
    ),
    max_leaves=8,
)
items = st.dictionaries(text, attribute_values, min_size=1, max_size=5)


def requests() -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    return st.one_of(
        st.builds(lambda item: ("PutItem", {"TableName": "links", "Item": item}), items),
        st.builds(
            lambda batch: (
                "BatchWriteItem",
                {"RequestItems": {"links": [{"PutRequest": {"Item": item}} for item in batch]}},
            ),
            st.lists(items, min_size=1, max_size=4),
        ),
        st.builds(
            lambda keys, consistent: (
                "BatchGetItem",
                {"RequestItems": {"links": {"Keys": keys, "ConsistentRead": consistent}}},
            ),
            st.lists(items, min_size=1, max_size=4),
            st.booleans(),
        ),
        st.builds(
            lambda key, values: (
                "UpdateItem",
                {
                    "TableName": "jobs",
                    "Key": key,
                    "UpdateExpression": "SET a = :a",
                    "ExpressionAttributeValues": values,
                    "ReturnValues": "ALL_NEW",
                },
            ),
            items,
            items,
        ),
        st.builds(
            lambda item: (
                "TransactWriteItems",
                {
                    "TransactItems": [
                        {"Put": {"TableName": "links", "Item": item, "ConditionExpression": "x"}}
                    ],
                    "ClientRequestToken": "token",
                },
            ),
            items,
        ),
    )


def both(operation: str, parameters: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request each serializer makes of ``parameters``, its body parsed: the JSON document."""
    model = _MODEL.operation_model(operation)
    direct = DirectJSONSerializer().serialize_to_request(parameters, model)
    botocore = JSONSerializer().serialize_to_request(parameters, model)
    return {**direct, "body": json.loads(direct["body"])}, {**botocore, "body": json.loads(botocore["body"])}


@settings(max_examples=300, deadline=None)
@given(requests())
def test_every_request_is_the_one_botocore_makes(request: tuple[str, dict[str, Any]]) -> None:
    # Given any request of the operations the stores make, values of every type included
    operation, parameters = request

    # When both serializers write it
    direct, botocore = both(operation, parameters)

    # Then the request (method, path, headers, the body's JSON document) is the same
    assert direct == botocore


@pytest.mark.parametrize(
    ("operation", "parameters"),
    [
        # A blob as str: botocore base64-encodes its UTF-8 bytes; json would write it as it is.
        ("PutItem", {"TableName": "t", "Item": {"k": {"B": "plain text"}}}),
        # A value json refuses but botocore writes: a set (as a list).
        ("PutItem", {"TableName": "t", "Item": {"k": {"SS": {"one"}}}}),
        # Values orjson would write otherwise than json: a str subclass, an integer past 64 bits.
        ("PutItem", {"TableName": "t", "Item": {"k": {"S": StrEnumValue.ONE}}}),
        (
            "UpdateItem",
            {
                "TableName": "t",
                "Key": {"k": {"N": "1"}},
                "ReturnValues": "NONE",
                "ExpressionAttributeValues": {":n": {"N": str(2**70)}},
                "UpdateExpression": "SET a = :n",
            },
        ),
        ("Query", {"TableName": "t", "Limit": 2**70}),
        # Characters outside ASCII (json escapes them, orjson writes UTF-8: the same document).
        ("PutItem", {"TableName": "t", "Item": {"k": {"S": "Grüße, 東京 🚀"}}}),
        # An operation with a timestamp in its input always takes botocore's path.
        (
            "RestoreTableToPointInTime",
            {
                "SourceTableName": "a",
                "TargetTableName": "b",
                "RestoreDateTime": datetime(2026, 1, 1, tzinfo=UTC),
            },
        ),
        # A string value that looks like a blob member's key: the longer path, the same body.
        ("PutItem", {"TableName": "t", "Item": {"k": {"S": '"B": "x"'}}}),
    ],
)
def test_what_json_would_write_otherwise_takes_botocores_path(
    operation: str, parameters: dict[str, Any]
) -> None:
    direct, botocore = both(operation, parameters)

    assert direct == botocore


def test_a_decimal_is_refused_by_both() -> None:
    # Given a value neither writes (numbers are strings in DynamoDB's JSON)
    parameters = {"TableName": "t", "Item": {"k": {"N": Decimal("1.5")}}}

    # Then both refuse it the same way: json cannot write it
    with pytest.raises(TypeError):
        both("PutItem", parameters)[1]
    with pytest.raises(TypeError):
        both("PutItem", parameters)[0]


def test_the_layers_dynamodb_client_uses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    aws.reset_clients()
    try:
        assert type(aws.dynamodb()._serializer) is DirectJSONSerializer  # type: ignore[attr-defined]
    finally:
        aws.reset_clients()


def test_a_client_that_validates_its_parameters_is_refused() -> None:
    # Its serializer is botocore's validating wrapper: replacing it would drop the validation.
    client = boto3.client("dynamodb", region_name="us-east-1")

    with pytest.raises(TypeError, match="JSONSerializer"):
        install(client)
