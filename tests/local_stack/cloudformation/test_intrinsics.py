"""Intrinsic functions resolved against local names, and parameters from defaults or overrides."""

import pytest

from local_stack.cloudformation.intrinsics import NO_VALUE, IntrinsicError, Resolver, parameter_values


@pytest.fixture
def resolver() -> Resolver:
    return Resolver(
        parameters={"Stage": "dev", "Schemes": ["http", "https"], "Limit": "10"},
        region="us-east-1",
        stack_name="local",
        conditions={"IsProd": {"Fn::Equals": [{"Ref": "Stage"}, "prod"]}},
        refs={"Queue": "http://aws/123456789012/local-Queue", "Poller": "local-poller"},
        attributes={
            "Queue": {"QueueName": "local-Queue", "Arn": "arn:aws:sqs:us-east-1:123456789012:local-Queue"}
        },
    )


def test_ref_gives_parameters_resources_and_pseudo_parameters(resolver: Resolver) -> None:
    assert resolver.resolve({"Ref": "Stage"}) == "dev"
    assert resolver.resolve({"Ref": "Queue"}) == "http://aws/123456789012/local-Queue"
    assert resolver.resolve({"Ref": "AWS::Region"}) == "us-east-1"


def test_sub_with_attributes_and_refs_builds_json(resolver: Resolver) -> None:
    # The scaler's LOOP_FUNCTIONS: !Sub '{"${BulkQueue.QueueName}": "${PollerFunction}"}'
    text = resolver.resolve({"Fn::Sub": '{"${Queue.QueueName}": "${Poller}"}'})
    assert text == '{"local-Queue": "local-poller"}'


def test_sub_keeps_escaped_literals_and_uses_its_own_variables(resolver: Resolver) -> None:
    assert resolver.resolve({"Fn::Sub": ["${!Literal}-${x}", {"x": {"Ref": "Stage"}}]}) == "${Literal}-dev"


def test_join_if_and_no_value(resolver: Resolver) -> None:
    assert resolver.resolve({"Fn::Join": [",", {"Ref": "Schemes"}]}) == "http,https"
    assert resolver.resolve({"Fn::If": ["IsProd", True, False]}) is False
    properties = {"Size": {"Fn::If": ["IsProd", "0.5", {"Ref": "AWS::NoValue"}]}, "Keep": 1}
    assert resolver.resolve(properties) == {"Keep": 1}
    assert resolver.resolve({"Ref": "AWS::NoValue"}) is NO_VALUE


def test_get_att_in_both_spellings(resolver: Resolver) -> None:
    arn = "arn:aws:sqs:us-east-1:123456789012:local-Queue"
    assert resolver.resolve({"Fn::GetAtt": ["Queue", "Arn"]}) == arn
    assert resolver.resolve({"Fn::GetAtt": "Queue.Arn"}) == arn


def test_unknown_references_are_errors(resolver: Resolver) -> None:
    with pytest.raises(IntrinsicError):
        resolver.resolve({"Ref": "Nothing"})
    with pytest.raises(IntrinsicError):
        resolver.resolve({"Fn::GetAtt": ["Queue", "Nothing"]})


def test_parameters_take_defaults_and_overrides() -> None:
    declared = {
        "Stage": {"Type": "String", "Default": "dev", "AllowedValues": ["dev", "prod"]},
        "MinLoops": {"Type": "Number", "Default": 1},
        "Schemes": {"Type": "CommaDelimitedList", "Default": "http,https"},
    }
    values = parameter_values(declared, {"MinLoops": "3"})
    assert values == {"Stage": "dev", "MinLoops": "3", "Schemes": ["http", "https"]}


@pytest.mark.parametrize("overrides", [{"Nope": "1"}, {"Stage": "staging"}], ids=["unknown", "not-allowed"])
def test_bad_overrides_are_refused(overrides: dict[str, str]) -> None:
    declared = {"Stage": {"Type": "String", "Default": "dev", "AllowedValues": ["dev", "prod"]}}
    with pytest.raises(IntrinsicError):
        parameter_values(declared, overrides)
