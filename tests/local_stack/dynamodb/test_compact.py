"""moto's items hold what they repeat once, and answer exactly what they answered before."""

import copy
import gc
import tracemalloc
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core.model_instances import reset_model_data
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import Item

from local_stack.dynamodb import compact as dynamodb_compact

OWNER = "key-0123456789abcdef"
JOB = "5f0c1e9e-4a57-4a0e-9d4b-2b0d3f6c1a77"


def _client() -> Any:
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.create_table(
        TableName="T",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return client


def _item(number: int) -> dict[str, Any]:
    return {
        "pk": {"S": f"code{number}"},
        "sk": {"N": str(number % 3)},
        "url": {"S": f"https://shop.example.com/{number}"},
        "owner": {"S": OWNER},
        "job_id": {"S": JOB},
        "rows": {"N": "250"},
        "tags": {"SS": ["spring", "sale"]},
        "meta": {"M": {"by": {"S": OWNER}, "rows": {"L": [{"N": "1"}, {"S": JOB}]}}},
    }


@mock_aws
def test_items_share_names_values_and_key_objects() -> None:
    client = _client()
    for number in range(2):
        client.put_item(TableName="T", Item=_item(number))
    table = dynamodb_backends["123456789012"]["us-east-1"].get_table("T")
    first, second = (item for by_range in table.items.values() for item in by_range.values())
    assert first.attrs["pk"] is first.hash_key and first.attrs["sk"] is first.range_key
    assert first.attrs["owner"] is second.attrs["owner"]
    assert first.attrs["rows"] is second.attrs["rows"]
    assert first.attrs["job_id"].value is second.attrs["job_id"].value
    assert first.attrs["meta"].value["rows"].value[1].value is second.attrs["job_id"].value
    assert first.attrs["tags"].value[0] is second.attrs["tags"].value[0]
    assert next(a for a in first.attrs if a == "owner") is next(a for a in second.attrs if a == "owner")
    # a copy (moto's transactions and updates make them) keeps the key object shared
    copied = copy.deepcopy(first)
    assert copied.attrs["pk"] is copied.hash_key and copied.attrs == first.attrs


@mock_aws
def test_items_answer_as_written_and_updates_stay_their_own() -> None:
    client = _client()
    for number in range(3):
        client.put_item(TableName="T", Item=_item(number))
    client.update_item(
        TableName="T",
        Key={"pk": {"S": "code1"}, "sk": {"N": "1"}},
        UpdateExpression="SET #o = :o ADD tags :t, #r :one",
        ExpressionAttributeNames={"#o": "owner", "#r": "rows"},
        ExpressionAttributeValues={":o": {"S": "someone-else"}, ":t": {"SS": ["new"]}, ":one": {"N": "1"}},
    )
    client.update_item(
        TableName="T",
        Key={"pk": {"S": "code2"}, "sk": {"N": "2"}},
        AttributeUpdates={"rows": {"Action": "ADD", "Value": {"N": "5"}}},
    )
    for number in range(3):
        got = client.get_item(TableName="T", Key={"pk": {"S": f"code{number}"}, "sk": {"N": str(number)}})
        expected = _item(number)
        if number == 1:
            expected["owner"], expected["rows"] = {"S": "someone-else"}, {"N": "251"}
            assert sorted(got["Item"].pop("tags")["SS"]) == ["new", "sale", "spring"]
            expected.pop("tags")
        if number == 2:
            expected["rows"] = {"N": "255"}
        assert got["Item"] == expected
    query = client.query(
        TableName="T",
        KeyConditionExpression="pk = :p",
        FilterExpression="#o = :o",
        ExpressionAttributeNames={"#o": "owner"},
        ExpressionAttributeValues={":p": {"S": "code2"}, ":o": {"S": OWNER}},
    )
    assert query["Items"] == [{**_item(2), "rows": {"N": "255"}}]


def test_the_table_of_shared_strings_is_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(dynamodb_compact, "SHARED_STRINGS", 100)
    monkeypatch.setattr(dynamodb_compact, "_strings", {})
    for number in range(1000):
        dynamodb_compact.shared(f"value-{number}")
    assert len(dynamodb_compact._strings) <= 100
    long = "x" * (dynamodb_compact.SHARED_LENGTH + 1)
    assert dynamodb_compact.shared(long) is long and long not in dynamodb_compact._strings


@mock_aws
def test_an_item_held_costs_less_than_moto_alone() -> None:
    client = _client()
    count = 2000

    def held(compacting: bool) -> float:
        client.delete_table(TableName="T")
        reset_model_data()
        _client()
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        install = Item.__init__
        if not compacting:
            Item.__init__ = install.__wrapped__  # type: ignore[attr-defined]
        try:
            for start in range(0, count, 25):
                client.batch_write_item(
                    RequestItems={"T": [{"PutRequest": {"Item": _item(n)}} for n in range(start, start + 25)]}
                )
        finally:
            Item.__init__ = install  # type: ignore[method-assign]
        reset_model_data()
        gc.collect()
        size = (tracemalloc.get_traced_memory()[0] - before) / count
        tracemalloc.stop()
        return size

    moto_alone, compacted = held(False), held(True)
    # about 600 bytes less per item (each value shared is a 48-byte slotted object not held)
    assert compacted < moto_alone - 500, (moto_alone, compacted)


@mock_aws
def test_items_restored_from_the_durable_state_share_values_too() -> None:
    from local_stack.dynamodb import state as durable

    client = _client()
    table = dynamodb_backends["123456789012"]["us-east-1"].get_table("T")
    for number in range(2):
        durable._insert(table, _item(number))
    first, second = (item for by_range in table.items.values() for item in by_range.values())
    assert first.attrs["owner"] is second.attrs["owner"] and first.attrs["pk"] is first.hash_key
    for number in range(2):
        key = {"pk": {"S": f"code{number}"}, "sk": {"N": str(number)}}
        assert client.get_item(TableName="T", Key=key)["Item"] == _item(number)


def test_dynamodb_values_hold_no_dict_and_every_module_uses_one_class() -> None:
    import sys

    from moto.dynamodb.models import dynamo_type

    dynamodb_compact.install_slotted_values()  # installed already (tests/conftest.py): idempotent
    slotted = dynamo_type.DynamoType
    assert slotted.__slots__ == ("type", "value") and not hasattr(slotted({"S": "x"}), "__dict__")
    users = [m for name, m in sys.modules.items() if name.startswith(("moto.dynamodb.", "local_stack."))]
    classes = {vars(m)["DynamoType"] for m in users if "DynamoType" in vars(m)}
    assert classes == {slotted}  # so moto's `type(x) is DynamoType` checks hold
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    held = [slotted({"S": "x"}) for _ in range(1000)]
    each = (tracemalloc.get_traced_memory()[0] - before) / len(held)
    tracemalloc.stop()
    assert each < 64  # 48 and its list slot; 88 with a dict
    nested = slotted({"M": {"a": {"L": [{"N": "1"}, {"SS": ["s"]}]}}})
    assert copy.deepcopy(nested) == nested and slotted(nested).to_json() == nested.to_json()
    assert nested.size() == slotted({"M": {"a": {"L": [{"N": "1"}, {"SS": ["s"]}]}}}).size()
    # An item's attribute dict: no dict of its own either, and its size check (super()) still runs
    from moto.dynamodb.exceptions import ItemSizeTooLarge

    attributes = dynamo_type.LimitedSizeDict(name=slotted({"S": "x"}))
    assert not hasattr(attributes, "__dict__") and attributes["name"] == slotted({"S": "x"})
    with pytest.raises(ItemSizeTooLarge):
        attributes["big"] = slotted({"S": "x" * 410_000})
    assert list(attributes) == ["name"]
    assert {vars(m).get("LimitedSizeDict") for m in users} - {None} == {dynamo_type.LimitedSizeDict}


@mock_aws
def test_items_are_built_slotted_recorded_and_copied_as_moto_builds_them() -> None:
    import sys

    from moto.core.model_instances import model_data
    from moto.dynamodb.models import dynamo_type

    from local_stack.dynamodb import state as durable

    dynamodb_compact.install_slotted_items()  # installed already (tests/conftest.py): idempotent
    slotted = dynamo_type.Item
    assert slotted.__slots__ == ("attrs", "hash_key", "range_key")  # type: ignore[attr-defined]
    users = [m for name, m in sys.modules.items() if name.startswith(("moto.dynamodb.", "local_stack."))]
    assert {vars(m).get("Item") for m in users} - {None} == {slotted}
    client = _client()
    client.put_item(TableName="T", Item=_item(0))
    table = dynamodb_backends["123456789012"]["us-east-1"].get_table("T")
    (item,) = (i for by_range in table.items.values() for i in by_range.values())
    assert type(item) is slotted and not hasattr(item, "__dict__")
    recorded = model_data["dynamodb"]["Item"].instances_tracked  # type: ignore[attr-defined]
    assert any(i is item for i in recorded)  # moto's record of its items, as before
    copied = copy.deepcopy(item)
    assert type(copied) is slotted and copied == item and copied is not item
    durable._insert(table, item.to_json()["Attributes"])  # as a restart restores it
    restored = table.get_item(item.hash_key, item.range_key)
    assert type(restored) is slotted and restored is not item and restored == item
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    held = [slotted(item.hash_key, item.range_key, {}) for _ in range(1000)]
    each = (tracemalloc.get_traced_memory()[0] - before) / len(held)
    tracemalloc.stop()
    reset_model_data()
    # 56 the slotted item (96 with a dict), 64 its empty attribute dict, a slot here and in moto's
    # record of its items: about 138 (about 200 with moto's own classes)
    assert each < 160
