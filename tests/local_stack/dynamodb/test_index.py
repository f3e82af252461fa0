"""The sorted index answers an index Query exactly as moto's walk does, reading only what it returns."""

from typing import Any

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moto import mock_aws
from moto.dynamodb.models.dynamo_type import DynamoType, Item

from local_stack.dynamodb import index as dynamodb_index

OWNERS = ["a", "b", "c"]


def _table(client: Any) -> None:
    client.create_table(
        TableName="T",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "owner", "AttributeType": "S"},
            {"AttributeName": "at", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "ByOwner",
                "KeySchema": [
                    {"AttributeName": "owner", "KeyType": "HASH"},
                    {"AttributeName": "at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def _all_pages(client: Any, arguments: dict[str, Any]) -> list[Any]:
    pages = []
    start = None
    for _ in range(200):
        page = client.query(**arguments, **({"ExclusiveStartKey": start} if start else {}))
        pages.append((page["Items"], page.get("LastEvaluatedKey"), page["ScannedCount"]))
        start = page.get("LastEvaluatedKey")
        if start is None:
            break
    return pages


def _walk(client: Any, arguments: dict[str, Any]) -> list[Any]:
    """moto's own answer: the fast path declines every query."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(dynamodb_index, "_fast_query", lambda *a, **k: None)
        return _all_pages(client, arguments)


items_strategy = st.lists(
    st.tuples(
        st.sampled_from(["p1", "p2", "p3"]),
        st.sampled_from(["s1", "s2", "s3", "s4"]),
        st.sampled_from([*OWNERS, None]),
        st.sampled_from(["2026-01", "2026-02", "2026-02b", "2026-03", "2027", "x"]),
        st.integers(0, 3),
    ),
    max_size=40,
)
CONDITIONS = [
    ("", {}),
    (" AND #a = :x", {":x": {"S": "2026-02"}}),
    (" AND #a < :x", {":x": {"S": "2026-02b"}}),
    (" AND #a <= :x", {":x": {"S": "2026-02b"}}),
    (" AND #a > :x", {":x": {"S": "2026-02"}}),
    (" AND #a >= :x", {":x": {"S": "2026-02"}}),
    (" AND #a BETWEEN :x AND :y", {":x": {"S": "2026-02"}, ":y": {"S": "2026-03"}}),
    (" AND begins_with(#a, :x)", {":x": {"S": "2026-02"}}),
    (" AND begins_with(#a, :x)", {":x": {"S": "2026"}}),
]
conditions = st.sampled_from(CONDITIONS)


@settings(max_examples=60)
@given(
    items=items_strategy,
    condition=conditions,
    owner=st.sampled_from(OWNERS),
    limit=st.sampled_from([None, 1, 2, 5]),
    forward=st.booleans(),
    filtered=st.booleans(),
    deletes=st.integers(0, 5),
)
def test_same_answer_as_moto_walk(
    items: list[tuple[str, str, str | None, str, int]],
    condition: tuple[str, dict[str, Any]],
    owner: str,
    limit: int | None,
    forward: bool,
    filtered: bool,
    deletes: int,
) -> None:
    dynamodb_index.install()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        _table(client)
        client.query(  # build the index before the writes, so they maintain it
            TableName="T",
            IndexName="ByOwner",
            KeyConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": {"S": "a"}},
        )
        for pk, sk, item_owner, at, n in items:
            item = {"pk": {"S": pk}, "sk": {"S": sk}, "at": {"S": at}, "n": {"N": str(n)}}
            if item_owner is not None:
                item["owner"] = {"S": item_owner}
            client.put_item(TableName="T", Item=item)
        for pk, sk, _, _, n in items[:deletes]:
            if n % 2:
                client.delete_item(TableName="T", Key={"pk": {"S": pk}, "sk": {"S": sk}})
            else:  # moves the item to another partition or place
                client.update_item(
                    TableName="T",
                    Key={"pk": {"S": pk}, "sk": {"S": sk}},
                    UpdateExpression="SET #o = :o, #a = :a",
                    ExpressionAttributeNames={"#o": "owner", "#a": "at"},
                    ExpressionAttributeValues={":o": {"S": "b"}, ":a": {"S": "2026-02"}},
                )
        expression, values = condition
        arguments: dict[str, Any] = {
            "TableName": "T",
            "IndexName": "ByOwner",
            "KeyConditionExpression": "#o = :o" + expression,
            "ExpressionAttributeNames": {"#o": "owner", **({"#a": "at"} if expression else {})},
            "ExpressionAttributeValues": {":o": {"S": owner}, **values},
            "ScanIndexForward": forward,
        }
        if limit is not None:
            arguments["Limit"] = limit
        if filtered:
            arguments["FilterExpression"] = "n > :n"
            arguments["ExpressionAttributeValues"][":n"] = {"N": "1"}
        before = dynamodb_index.stats.examined
        indexed = _all_pages(client, arguments)
        if indexed[0][2]:  # the index answered, not moto's walk
            assert dynamodb_index.stats.examined > before
        assert indexed == _walk(client, arguments)


def test_work_is_in_proportion_to_the_result_not_the_table() -> None:
    dynamodb_index.install()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        _table(client)
        for i in range(2000):
            client.put_item(
                TableName="T",
                Item={
                    "pk": {"S": f"p{i}"},
                    "sk": {"S": "s"},
                    "owner": {"S": "a" if i % 2 else "b"},
                    "at": {"S": f"{i:06d}"},
                },
            )
        before = dynamodb_index.stats.examined
        page = client.query(
            TableName="T",
            IndexName="ByOwner",
            KeyConditionExpression="#o = :o AND #a > :a",
            ExpressionAttributeNames={"#o": "owner", "#a": "at"},
            ExpressionAttributeValues={":o": {"S": "a"}, ":a": {"S": "001000"}},
            Limit=10,
            ScanIndexForward=True,
        )
        assert [item["at"]["S"] for item in page["Items"]] == [f"{i:06d}" for i in range(1001, 1021, 2)]
        # The 10 returned items and the one that shows there is more.
        assert dynamodb_index.stats.examined - before == 11
        before = dynamodb_index.stats.examined
        client.query(
            TableName="T",
            IndexName="ByOwner",
            KeyConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": {"S": "b"}},
            Limit=10,
            ScanIndexForward=False,
            ExclusiveStartKey=page["LastEvaluatedKey"] | {"owner": {"S": "b"}, "at": {"S": "001500"}},
        )
        assert dynamodb_index.stats.examined - before == 11


def test_every_key_condition_and_direction_against_moto_walk() -> None:
    """Table-driven: each key condition, both directions, with and without a Limit, on items
    whose sort values are around every bound (equal sort values too)."""
    dynamodb_index.install()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        _table(client)
        ats = ["2026-01", "2026-02", "2026-02", "2026-02b", "2026-03", "2027", "x"]
        for i, at in enumerate(ats):
            for owner in ("a", "b"):
                client.put_item(
                    TableName="T",
                    Item={"pk": {"S": f"p{i}"}, "sk": {"S": owner}, "owner": {"S": owner}, "at": {"S": at}},
                )
        for expression, values in CONDITIONS:
            for forward in (True, False):
                for limit in (None, 1, 2, 3):
                    arguments: dict[str, Any] = {
                        "TableName": "T",
                        "IndexName": "ByOwner",
                        "KeyConditionExpression": "#o = :o" + expression,
                        "ExpressionAttributeNames": {"#o": "owner", **({"#a": "at"} if expression else {})},
                        "ExpressionAttributeValues": {":o": {"S": "a"}, **values},
                        "ScanIndexForward": forward,
                        **({"Limit": limit} if limit else {}),
                    }
                    before = dynamodb_index.stats.examined
                    indexed = _all_pages(client, arguments)
                    assert dynamodb_index.stats.examined > before or not indexed[0][0]
                    assert indexed == _walk(client, arguments), (expression, forward, limit)


def test_a_table_without_indexes_is_written_as_before() -> None:
    dynamodb_index.install()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="Plain",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.put_item(TableName="Plain", Item={"pk": {"S": "a"}})
        client.update_item(
            TableName="Plain",
            Key={"pk": {"S": "a"}},
            UpdateExpression="SET n = :n",
            ExpressionAttributeValues={":n": {"N": "1"}},
        )
        client.delete_item(TableName="Plain", Key={"pk": {"S": "b"}})
        assert client.get_item(TableName="Plain", Key={"pk": {"S": "a"}})["Item"]["n"] == {"N": "1"}


@settings(max_examples=30)
@given(items=items_strategy)
def test_an_index_built_over_stored_items_is_the_one_writes_keep(
    items: list[tuple[str, str, str | None, str, int]],
) -> None:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    dynamodb_index.install()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        _table(client)
        client.query(  # build the index before the writes, so they maintain it
            TableName="T",
            IndexName="ByOwner",
            KeyConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": {"S": "a"}},
        )
        for pk, sk, item_owner, at, n in items:
            item = {"pk": {"S": pk}, "sk": {"S": sk}, "at": {"S": at}, "n": {"N": str(n)}}
            if item_owner is not None:
                item["owner"] = {"S": item_owner}
            client.put_item(TableName="T", Item=item)
        table = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables["T"]
        kept = dynamodb_index._index_of(table, "ByOwner")
        assert kept is not None
        # When the items are written behind moto's writers (a restore) and the index is rebuilt
        dynamodb_index.forget(table)
        rebuilt = dynamodb_index._index_of(table, "ByOwner")
        # Then it holds the same entries in the same order
        assert rebuilt is not None and rebuilt is not kept
        assert {p: list(e) for p, e in rebuilt.partitions.items()} == {
            p: list(e) for p, e in kept.partitions.items()
        }


def test_the_index_holds_one_entry_per_item_and_nothing_beside() -> None:
    """An item's place in the index follows from its attributes, read before each write: no map
    from item to entry is kept (it cost 93 bytes per item)."""
    import gc
    import tracemalloc

    dynamodb_index.install()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        _table(client)
        client.put_item(
            TableName="T", Item={"pk": {"S": "p"}, "sk": {"S": "s"}, "owner": {"S": "a"}, "at": {"S": "0"}}
        )
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for i in range(2000):
            item = {"pk": {"S": f"p{i}"}, "sk": {"S": "s"}, "owner": {"S": "b"}, "at": {"S": f"{i:06d}"}}
            client.put_item(TableName="T", Item=item)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        held = sum(
            stat.size_diff
            for stat in after.compare_to(before, "filename")
            if any(mark in stat.traceback[0].filename for mark in ("dynamodb_index.py", "sortedcontainers"))
        )
        # A 2-tuple entry (56 bytes) and its slot in the sorted list; a map from item to entry
        # (its slot and a (partition, entry) tuple) made it about 150.
        assert held / 2000 < 80


def test_writes_moto_refuses_leave_the_table_and_index_as_they_were() -> None:
    from botocore.exceptions import ClientError
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    dynamodb_index.install()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        _table(client)
        item = {"pk": {"S": "p"}, "sk": {"S": "s"}, "owner": {"S": "a"}, "at": {"S": "1"}}
        client.put_item(TableName="T", Item=item)
        with pytest.raises(ClientError) as refused:  # no range key: moto's own error, as before
            client.put_item(TableName="T", Item={"pk": {"S": "q"}, "owner": {"S": "a"}, "at": {"S": "2"}})
        assert refused.value.response["Error"]["Code"] == "ValidationException"
        with pytest.raises(ClientError) as failed:
            client.update_item(
                TableName="T",
                Key={"pk": {"S": "p"}, "sk": {"S": "s"}},
                UpdateExpression="SET #o = :o",
                ConditionExpression="attribute_not_exists(pk)",
                ExpressionAttributeNames={"#o": "owner"},
                ExpressionAttributeValues={":o": {"S": "b"}},
            )
        assert failed.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
        client.delete_item(TableName="T", Key={"pk": {"S": "gone"}, "sk": {"S": "s"}})
        table = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables["T"]
        assert dynamodb_index.DynamoType({"S": "q"}) not in table.items  # no empty entry filed
        arguments = {
            "TableName": "T",
            "IndexName": "ByOwner",
            "KeyConditionExpression": "#o = :o",
            "ExpressionAttributeNames": {"#o": "owner"},
        }
        for owner in ("a", "b"):
            asked = arguments | {"ExpressionAttributeValues": {":o": {"S": owner}}}
            assert _all_pages(client, asked) == _walk(client, asked)
        index = dynamodb_index._index_of(table, "ByOwner")
        assert index is not None and [len(e) for e in index.partitions.values()] == [1]


scalar_values = st.one_of(
    st.text().map(lambda text: {"S": text}),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(lambda number: {"N": str(number)}),
    st.binary(max_size=20).map(lambda data: {"B": data}),
    st.booleans().map(lambda flag: {"BOOL": flag}),
    st.just({"NULL": True}),
    st.lists(st.text(), min_size=1, max_size=4, unique=True).map(lambda texts: {"SS": texts}),
)
attribute_values = st.recursive(
    scalar_values,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda values: {"L": values}),
        st.dictionaries(st.text(max_size=5), inner, max_size=4).map(lambda values: {"M": values}),
    ),
    max_leaves=8,
)


@settings(max_examples=300)
@given(st.dictionaries(st.text(min_size=1, max_size=8), attribute_values, min_size=1, max_size=8))
def test_an_items_size_is_the_one_moto_measures(attributes: dict[str, Any]) -> None:
    item = Item(DynamoType({"S": "k"}), None, {"pk": {"S": "k"}, **attributes})
    assert dynamodb_index._size_of(item) == item.size()
