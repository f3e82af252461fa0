"""The operable template: Rules refuse impossible parameter sets (evaluated as CloudFormation does),
and the operations pieces resolve as intended (dashboard, alarms, log groups, concurrency, stages)."""

import json
import re
from typing import Any

import pytest

from local_stack.cloudformation.deploy import (
    RuleViolationError,
    check_parameters,
    check_rules,
    parameter_values,
)
from local_stack.cloudformation.intrinsics import Resolver
from local_stack.cloudformation.intrinsics import parameter_values as local_parameter_values
from local_stack.cloudformation.resources import Resources, name_resources
from local_stack.cloudformation.template import expand_sam, load_template

# Every function of the template: each must have its log group, alarms and dashboard rows.
FUNCTIONS = tuple(
    logical_id
    for logical_id, resource in load_template()["Resources"].items()
    if resource["Type"] == "AWS::Serverless::Function"
)


def refused(**given: Any) -> str | None:
    """The refusal of the template's Rules for these parameters (defaults for the rest), or None."""
    template = load_template()
    try:
        check_rules(template, parameter_values(template, {key: str(value) for key, value in given.items()}))
    except RuleViolationError as exc:
        return str(exc)
    return None


def refused_value(**given: Any) -> str | None:
    """The refusal of the parameters' own constraints (MinValue, AllowedValues, ...), or None."""
    try:
        check_parameters(load_template(), {key: str(value) for key, value in given.items()})
    except RuleViolationError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"StaleHeartbeatSeconds": 45},
            "Parameter 'StaleHeartbeatSeconds' must be a number not less than 60",
        ),
        ({"MaxLoops": 51}, "Parameter 'MaxLoops' must be a number not greater than 50"),
        ({"MinLoops": "two"}, "Parameter 'MinLoops' must be a number"),
        ({"Access": "public"}, "Parameter 'Access' must be one of AllowedValues: keys, open"),
    ],
)
def test_a_value_its_declaration_refuses_is_refused_as_cloudformation_does(
    given: dict[str, Any], message: str
) -> None:
    # When a parameter is given a value outside its declared constraints
    # Then it is refused before anything is created, naming the parameter and the constraint
    assert refused_value(**given) == message


def test_values_within_their_constraints_pass() -> None:
    assert refused_value(StaleHeartbeatSeconds=60, MaxLoops=50, MinLoops=1, Access="open") is None


def resolved(**given: str) -> Resources:
    """The SAM-expanded template with the local stack's names, parameters resolved (no AWS)."""
    expanded = expand_sam(load_template(), "ops", "us-east-1")
    resolver = Resolver(
        parameters=local_parameter_values(expanded["Parameters"], given),
        region="us-east-1",
        stack_name="ops",
        conditions=expanded.get("Conditions", {}),
    )
    return name_resources(expanded, resolver, "http://127.0.0.1:9", "us-east-1")


def test_the_defaults_and_the_deploy_environments_pass_the_rules() -> None:
    assert refused() is None
    assert refused(Stage="prod", RedirectCacheTtlSeconds=300) is None


def test_more_minimum_loops_than_maximum_is_refused_for_every_pair() -> None:
    # Every pair the parameters' ranges allow: refused exactly when min > max (or min > 10)
    for min_loops in range(12):
        for max_loops in range(1, 51):
            reason = refused(MinLoops=min_loops, MaxLoops=max_loops)
            if min_loops > 10:
                assert reason and "at most 10" in reason
            elif min_loops > max_loops:
                assert reason == "MinLoops must not exceed MaxLoops.", (min_loops, max_loops)
            else:
                assert reason is None, (min_loops, max_loops, reason)


@pytest.mark.parametrize(
    ("low", "medium", "high"),
    [(10, 10, 500), (10, 100, 100), (500, 100, 500)],
    ids=["low=medium", "medium=high", "low=high"],
)
def test_equal_scaling_thresholds_are_refused(low: int, medium: int, high: int) -> None:
    reason = refused(ScaleThresholdLow=low, ScaleThresholdMedium=medium, ScaleThresholdHigh=high)
    assert reason and "must differ" in reason


def test_a_stale_threshold_a_healthy_loop_would_cross_is_refused() -> None:
    assert refused(StaleHeartbeatSeconds=30) and "more than 30" in str(refused(StaleHeartbeatSeconds=30))
    assert refused(StaleHeartbeatSeconds=31) is None


@pytest.mark.parametrize("max_loops", ["1", "10", "50"])
def test_the_pollers_reserved_concurrency_is_twice_max_loops(max_loops: str) -> None:
    properties = resolved(MaxLoops=max_loops).properties("PollerFunction")
    assert int(properties["ReservedConcurrentExecutions"]) == 2 * int(max_loops)


def test_the_files_function_recurses_within_a_reservation_and_reports_failed_events() -> None:
    properties = resolved().properties("FilesFunction")
    assert properties["RecursiveLoop"] == "Allow"
    assert int(properties["ReservedConcurrentExecutions"]) == 10
    template = load_template()["Resources"]["FilesFunction"]["Properties"]
    assert template["EventInvokeConfig"]["MaximumRetryAttempts"] == 2
    assert template["EventInvokeConfig"]["DestinationConfig"]["OnFailure"] == {
        "Type": "SNS",
        "Destination": {"Ref": "OperationsTopic"},
    }


def test_the_api_is_unreserved_by_default_and_capped_when_asked() -> None:
    assert "ReservedConcurrentExecutions" not in resolved().properties("ApiFunction")
    assert (
        resolved(ApiReservedConcurrency="50").properties("ApiFunction")["ReservedConcurrentExecutions"]
        == "50"
    )


def test_one_stage_only_throttled_with_an_encrypted_redirect_cache_without_the_edge() -> None:
    resources = resolved(Stage="prod", Edge="off")
    kinds = {logical_id: resource["Type"] for logical_id, resource in resources.template["Resources"].items()}
    stages = list(resources.of_type("AWS::ApiGateway::Stage"))
    deployments = [logical_id for logical_id, kind in kinds.items() if kind == "AWS::ApiGateway::Deployment"]
    # A Deployment with a StageName would publish a second stage ("Stage")
    assert len(stages) == 1
    assert all("StageName" not in resources.properties(logical_id) for logical_id in deployments)
    settings = resources.properties(stages[0])["MethodSettings"]
    assert all(setting["ThrottlingRateLimit"] and setting["ThrottlingBurstLimit"] for setting in settings)
    [redirect] = [setting for setting in settings if setting["ResourcePath"] == "/~1{code}"]
    assert redirect["CachingEnabled"] is True and redirect["CacheDataEncrypted"] is True


def test_every_function_has_a_log_group_that_expires() -> None:
    resources = resolved(LogRetentionDays="14")
    groups = {
        properties["LogGroupName"]: properties["RetentionInDays"]
        for properties in resources.of_type("AWS::Logs::LogGroup").values()
    }
    # The API's access log keeps its own retention (it holds client addresses; docs/clicks.md)
    assert groups.pop("/aws/apigateway/ops-access") == "90"
    # and so does the edge's (tests/tooling/test_template_edge.py)
    assert groups.pop("/aws/vendedlogs/cloudfront/ops-edge") == "90"
    assert groups == {f"/aws/lambda/{resources.physical_id(function)}": "14" for function in FUNCTIONS}


def test_every_operations_alarm_says_what_to_do_and_tells_of_recovery() -> None:
    resources = resolved()
    topic = resources.physical_id("OperationsTopic")
    alarms = [p for p in resources.of_type("AWS::CloudWatch::Alarm").values() if topic in p["AlarmActions"]]
    assert len(alarms) == 8
    for alarm in alarms:
        assert len(alarm["AlarmDescription"]) > 80  # what it means and what to do, not a label
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm["OKActions"] == [topic]


@pytest.mark.parametrize("alarm", ["FunctionErrorsAlarm", "FunctionThrottlesAlarm"])
def test_the_function_alarms_sum_every_function(alarm: str) -> None:
    resources = resolved()
    metrics = resources.properties(alarm)["Metrics"]
    [total] = [metric for metric in metrics if metric.get("ReturnData")]
    named = {
        metric["Id"]: metric["MetricStat"]["Metric"]["Dimensions"][0]["Value"]
        for metric in metrics
        if "MetricStat" in metric
    }
    # Each function's metric is in the sum, and every function has one
    assert set(named) == set(re.findall(r"\w+", total["Expression"].removeprefix("SUM"))), total
    assert sorted(named.values()) == sorted(resources.physical_id(function) for function in FUNCTIONS)


def test_the_alarm_email_is_subscribed_only_when_given() -> None:
    assert "OperationsEmailSubscription" not in resolved().of_type("AWS::SNS::Subscription")
    subscribed = resolved(AlarmEmail="ops@example.com").of_type("AWS::SNS::Subscription")
    assert subscribed["OperationsEmailSubscription"]["Endpoint"] == "ops@example.com"


def test_the_dashboard_is_json_naming_this_stacks_resources_and_alarms() -> None:
    resources = resolved()
    [dashboard] = resources.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.loads(dashboard["DashboardBody"])
    text = json.dumps(body)
    for logical_id in (*FUNCTIONS, "BulkQueue", "BulkDeadLetterQueue"):
        name = resources.physical_id(logical_id).rsplit("/", 1)[-1]
        assert f'"{name}"' in text, logical_id
    # and its alarm widget shows every alarm that notifies the operations topic, each once
    [alarms] = [widget for widget in body["widgets"] if widget["type"] == "alarm"]
    topic = resources.physical_id("OperationsTopic")
    arns = [
        resources.resolver.get_att(logical_id, "Arn")
        for logical_id, properties in resources.of_type("AWS::CloudWatch::Alarm").items()
        if topic in properties["AlarmActions"]
    ]
    assert sorted(alarms["properties"]["alarms"]) == sorted(arns)


def test_the_links_table_outlives_the_stack_and_the_queue_expires_before_its_dead_letters() -> None:
    template = load_template()["Resources"]
    for table in ("LinksTable", "KeysTable"):
        policies = (template[table]["DeletionPolicy"], template[table]["UpdateReplacePolicy"])
        assert policies == ("Retain", "Retain")
    queue = template["BulkQueue"]["Properties"]["MessageRetentionPeriod"]
    dead_letters = template["BulkDeadLetterQueue"]["Properties"]["MessageRetentionPeriod"]
    assert queue < dead_letters
