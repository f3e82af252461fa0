"""BulkWriteThroughput pre-warms the links table and its indexes (WarmThroughput), and the local
DynamoDB's capacity model starts from it."""

from local_stack.dynamodb.capacity import CapacitySettings, ResourceCapacity, ThroughputSpec
from tests.tooling.test_template_operations import resolved


def links_table(**given: str) -> dict:
    resources = resolved(**given)
    return resources.properties("LinksTable")


def test_by_default_the_links_table_is_not_pre_warmed() -> None:
    table = links_table()
    assert "WarmThroughput" not in table
    assert all("WarmThroughput" not in index for index in table["GlobalSecondaryIndexes"])


def test_bulk_write_throughput_pre_warms_the_table_and_its_index() -> None:
    table = links_table(BulkWriteThroughput="20000")
    warm = {"WriteUnitsPerSecond": 20000, "ReadUnitsPerSecond": 12000}
    assert {key: int(value) for key, value in table["WarmThroughput"].items()} == warm
    indexes = table["GlobalSecondaryIndexes"]
    assert [index["IndexName"] for index in indexes] == ["ByOwner", "ByExpiry"]
    for index in indexes:
        assert {key: int(value) for key, value in index["WarmThroughput"].items()} == warm
    (index, _) = indexes
    # And the local DynamoDB serves it at once (divided by its scale)
    capacity = ResourceCapacity.of(
        "Table", "arn", ThroughputSpec.from_properties(table), CapacitySettings(scale=10)
    )
    assert capacity.write.rate(0.0) == 2000.0
    assert ThroughputSpec.from_properties(index).warm_write == 20000.0
