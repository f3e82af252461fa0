"""The local DynamoDB's capacity model: AWS's documented on-demand figures, as a pure model."""

import pytest

from local_stack.dynamodb.capacity import (
    CapacityOptionError,
    CapacitySettings,
    Charge,
    ResourceCapacity,
    ThroughputSpec,
    admit,
    read_units,
    write_units,
)

TABLE_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/t"


def table(
    spec: ThroughputSpec | None = None, scale: float = 100.0, settle: float = 1800.0
) -> ResourceCapacity:
    return ResourceCapacity.of(
        "Table", TABLE_ARN, spec or ThroughputSpec(), CapacitySettings(scale=scale), settle_seconds=settle
    )


def writes(resource: ResourceCapacity, units: float, key: str | None = None) -> list[Charge]:
    return [Charge(resource, "Write", units, key)]


def test_the_option_parses_off_on_and_a_scale() -> None:
    assert CapacitySettings.parse("off").enabled is False
    assert CapacitySettings.parse("on") == CapacitySettings(scale=1.0)
    assert CapacitySettings.parse("scale=40").scale == 40.0
    for bad in ("scale=0.5", "scale=x", "fast"):
        with pytest.raises(CapacityOptionError):
            CapacitySettings.parse(bad)


def test_a_new_on_demand_table_starts_at_4000_writes_and_12000_reads_divided_by_the_scale() -> None:
    resource = table(scale=100)
    assert resource.write.rate(0.0) == 40.0
    assert resource.read.rate(0.0) == 120.0


def test_a_second_of_the_table_rate_is_granted_and_the_next_unit_is_throttled() -> None:
    resource = table(scale=100)  # 40 write units a second
    assert admit(writes(resource, 40), now=0.0) is None
    throttle = admit(writes(resource, 1), now=0.0)
    assert throttle is not None
    assert throttle.reason == "TableWriteKeyRangeThroughputExceeded"
    assert throttle.exception == "ProvisionedThroughputExceededException"
    # A quarter of a second later a quarter of the rate is back.
    assert admit(writes(resource, 10), now=0.25) is None
    assert admit(writes(resource, 1), now=0.25) is not None


def test_one_partition_key_gets_1000_write_units_a_second_however_big_the_table() -> None:
    resource = table(ThroughputSpec(warm_write=40_000), scale=100)  # table 400/s, a key 10/s
    assert admit(writes(resource, 10, key="S:#id-counter"), now=0.0) is None
    throttle = admit(writes(resource, 1, key="S:#id-counter"), now=0.0)
    assert throttle is not None and throttle.reason == "TableWriteKeyRangeThroughputExceeded"
    assert admit(writes(resource, 10, key="S:other"), now=0.0) is None


def test_twice_the_previous_peak_is_served_only_30_minutes_after_that_peak() -> None:
    resource = table(scale=100, settle=1800)
    for second in range(5):  # a sustained peak of 40 units a second
        assert admit(writes(resource, 40), now=float(second)) is None
    assert resource.write.rate(5.0) == 40.0
    # The peak was first reached in the second that ended at 1.0.
    assert resource.write.rate(1800.5) == 40.0
    assert resource.write.rate(1801.0) == 80.0


def test_warm_throughput_is_served_at_once_and_the_on_demand_maximum_caps_it() -> None:
    warm = ThroughputSpec.from_properties({"WarmThroughput": {"WriteUnitsPerSecond": 20_000}})
    assert table(warm, scale=100).write.rate(0.0) == 200.0
    capped = ThroughputSpec.from_properties(
        {
            "WarmThroughput": {"WriteUnitsPerSecond": 20_000},
            "OnDemandThroughput": {"MaxWriteRequestUnits": 5_000},
        }
    )
    resource = table(capped, scale=100)
    assert resource.write.rate(0.0) == 50.0
    assert admit(writes(resource, 50), now=0.0) is None
    throttle = admit(writes(resource, 1), now=0.0)
    assert throttle is not None
    assert throttle.reason == "TableWriteMaxOnDemandThroughputExceeded"
    assert throttle.exception == "ThrottlingException"


def test_no_maximum_is_minus_one_and_the_table_quota_still_caps() -> None:
    spec = ThroughputSpec.from_properties(
        {
            "WarmThroughput": {"WriteUnitsPerSecond": 100_000},
            "OnDemandThroughput": {"MaxWriteRequestUnits": -1},
        }
    )
    assert spec.max_write is None
    assert table(spec, scale=1).write.rate(0.0) == 40_000.0


def test_an_index_that_cannot_take_a_write_throttles_the_table_write_and_takes_nothing() -> None:
    base = table(ThroughputSpec(warm_write=40_000), scale=100)
    index = ResourceCapacity.of(
        "Index",
        TABLE_ARN + "/index/ByOwner",
        ThroughputSpec(max_write=1_000),
        CapacitySettings(scale=100),
    )
    assert admit([Charge(base, "Write", 8, "S:a"), Charge(index, "Write", 8, "S:owner#0")], now=0.0) is None
    throttle = admit([Charge(base, "Write", 8, "S:b"), Charge(index, "Write", 8, "S:owner#1")], now=0.0)
    assert throttle is not None
    assert (throttle.reason, throttle.resource) == (
        "IndexWriteMaxOnDemandThroughputExceeded",
        TABLE_ARN + "/index/ByOwner",
    )
    assert base.write.consumed == 8  # the refused write took nothing from the table


def test_units_follow_item_size() -> None:
    assert [write_units(size) for size in (0, 1024, 1025, 4000)] == [1, 1, 2, 4]
    assert read_units(4096, consistent=True) == 1
    assert read_units(4097, consistent=True) == 2
    assert read_units(100, consistent=False) == 0.5
