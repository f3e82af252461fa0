"""Fault injection: parsing --fault options, and the hooks behaving as real throttles and crashes."""

import random
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from botocore.stub import Stubber

from local_stack.faults import injection as faults
from local_stack.faults.injection import (
    DUPLICATE_MAX_DELAY_SECONDS,
    AsyncDuplicator,
    FaultError,
    InjectedFault,
    parse_faults,
)


def test_options_parse_into_faults() -> None:
    parsed = parse_faults(
        ["dynamodb-throttle=0.05", "raise-in=PollerFunction:0.1", "crash-in=shortener-poller:1"]
    )
    assert parsed.throttles == {"dynamodb": 0.05}
    assert parsed.for_function("PollerFunction", "x")["raise"] == 0.1
    assert parsed.for_function("y", "shortener-poller")["crash"] == 1.0
    assert parsed.for_function("ApiFunction", "api") == {
        "throttles": {"dynamodb": 0.05},
        "raise": 0.0,
        "crash": 0.0,
    }


def test_duplicate_async_parses_into_a_probability() -> None:
    parsed = parse_faults(["duplicate-async=0.25"])
    assert parsed.duplicate_async == 0.25
    assert parsed and not parse_faults([])


def test_duplicate_logs_parses_into_a_probability_of_its_own() -> None:
    parsed = parse_faults(["duplicate-logs=0.5"])
    assert (parsed.duplicate_logs, parsed.duplicate_async) == (0.5, 0.0)
    assert parsed


@pytest.mark.parametrize(
    "option",
    [
        "s3-throttle=0.1",
        "dynamodb-throttle=2",
        "raise-in=0.1",
        "raise-in=Fn:x",
        "duplicate-async=x",
        "duplicate-logs=2",
    ],
)
def test_bad_options_are_refused(option: str) -> None:
    with pytest.raises(FaultError):
        parse_faults([option])


@pytest.fixture
def fresh_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    for name, value in {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # never reached: the hook answers first


def client(attempts: int) -> Any:
    return boto3.client("dynamodb", config=Config(retries={"mode": "standard", "max_attempts": attempts}))


def test_a_throttle_is_the_services_own_error_after_retries(fresh_session: None) -> None:
    faults.install({"throttles": {"dynamodb": 1.0}}, random.Random(1))
    with pytest.raises(ClientError) as raised:
        client(attempts=2).get_item(TableName="t", Key={"k": {"S": "1"}})
    error = raised.value.response
    assert error["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert error["ResponseMetadata"]["RetryAttempts"] >= 1  # botocore retried it, as it would on AWS


def test_raise_in_raises_inside_the_functions_aws_calls(fresh_session: None) -> None:
    faults.install({"raise": 1.0}, random.Random(1))
    with pytest.raises(InjectedFault):
        client(attempts=1).get_item(TableName="t", Key={"k": {"S": "1"}})


def test_zero_probabilities_let_calls_through(fresh_session: None) -> None:
    faults.install({"throttles": {"dynamodb": 0.0}, "raise": 0.0, "crash": 0.0})
    dynamodb = client(attempts=1)
    with Stubber(dynamodb) as stub:
        stub.add_response("get_item", {"Item": {"k": {"S": "1"}}})
        assert dynamodb.get_item(TableName="t", Key={"k": {"S": "1"}})["Item"] == {"k": {"S": "1"}}


def test_no_duplicates_without_the_fault() -> None:
    duplicator = AsyncDuplicator(0.0, rng=random.Random(1))
    assert all(duplicator.second_delivery() is None for _ in range(1000))


def test_duplicates_come_at_the_given_rate_some_at_once_some_later() -> None:
    # Given the fault at 30 % on a stack running ten times faster
    duplicator = AsyncDuplicator(0.3, time_scale=10, rng=random.Random(7))
    # When 2,000 asynchronous invocations are delivered
    deliveries = [duplicator.second_delivery() for _ in range(2000)]
    duplicates = [delay for delay in deliveries if delay is not None]
    # Then about 30 % get a second delivery
    assert 0.25 < len(duplicates) / len(deliveries) < 0.35
    # And about half of those run at once, in parallel with the first
    at_once = [delay for delay in duplicates if delay == 0]
    assert 0.4 < len(at_once) / len(duplicates) < 0.6
    # And the others later, within the scaled maximum delay
    later = [delay for delay in duplicates if delay]
    assert all(0 < delay <= DUPLICATE_MAX_DELAY_SECONDS / 10 for delay in later)


def test_every_invocation_is_duplicated_at_probability_one() -> None:
    duplicator = AsyncDuplicator(1.0, rng=random.Random(3))
    assert all(duplicator.second_delivery() is not None for _ in range(100))


def test_operation_faults_parse_for_their_function_only() -> None:
    parsed = parse_faults(
        [
            "raise-in=PollerFunction.BatchWriteItem:1",
            "delay-in=PollerFunction.BatchWriteItem:2.5",
            "delay-in=Api:1",
        ]
    )
    assert parsed.for_function("PollerFunction", "x") == {
        "throttles": {},
        "raise": 0.0,
        "crash": 0.0,
        "raise_operations": {"BatchWriteItem": 1.0},
        "delay": {"BatchWriteItem": 2.5},
    }
    assert parsed.for_function("Api", "y")["delay"] == {"*": 1.0}
    assert "delay" not in parsed.for_function("ScalerFunction", "z")


@pytest.mark.parametrize("option", ["delay-in=Fn:-1", "delay-in=Fn:soon", "crash-in=Fn.GetItem:1"])
def test_bad_operation_faults_are_refused(option: str) -> None:
    with pytest.raises(FaultError):
        parse_faults([option])


def test_raise_in_one_operation_lets_the_others_through(fresh_session: None) -> None:
    # Given a fault on GetItem only
    faults.install({"raise": 0.0, "raise_operations": {"GetItem": 1.0}}, random.Random(1))
    dynamodb = client(attempts=1)
    # When both operations are called, Then only GetItem fails
    with Stubber(dynamodb) as stub:
        stub.add_response("describe_table", {"Table": {"TableName": "tab"}})
        assert dynamodb.describe_table(TableName="tab")["Table"]["TableName"] == "tab"
    with pytest.raises(InjectedFault):
        dynamodb.get_item(TableName="t", Key={"k": {"S": "1"}})


def test_delay_in_waits_before_the_call(fresh_session: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a delay on GetItem (the pause recorded, not slept)
    waited: list[float] = []
    monkeypatch.setattr(faults.time, "sleep", waited.append)
    faults.install({"delay": {"GetItem": 2.5}})
    dynamodb = client(attempts=1)
    # When it is called (nothing listens at the endpoint), Then it waited before trying
    with pytest.raises(BotoCoreError):
        dynamodb.get_item(TableName="t", Key={"k": {"S": "1"}})
    assert waited[0] == 2.5
