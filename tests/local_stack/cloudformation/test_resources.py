"""The template's resources created on the embedded AWS."""

import json
from typing import Any

import pytest

from local_stack.cloudformation.intrinsics import Resolver, parameter_values
from local_stack.cloudformation.resources import Resources, create_resources, name_resources
from local_stack.cloudformation.template import expand_sam, load_template
from local_stack.embedded.client import aws_client
from local_stack.embedded.server import EmbeddedAws
from local_stack.registry import PROVIDERS_BY_TYPE
from local_stack.stack import invoked_by_name

pytestmark = pytest.mark.integration

SNS_ENDPOINT = "http://127.0.0.1:9/sns/"


def build(aws: EmbeddedAws, params: dict[str, str] | None = None, create: bool = True) -> Resources:
    """The template's resources on a freshly reset embedded AWS."""
    aws.reset()
    expanded = expand_sam(load_template(), "test", "us-east-1")
    resolver = Resolver(
        parameters=parameter_values(expanded["Parameters"], params or {}),
        region="us-east-1",
        stack_name="test",
        conditions=expanded.get("Conditions", {}),
    )
    resources = name_resources(expanded, resolver, aws.url, "us-east-1")
    if create:
        create_resources(resources, lambda name: SNS_ENDPOINT + name, PROVIDERS_BY_TYPE)
    return resources


def client(resources: Resources, service: str) -> Any:
    return aws_client(service, resources.aws_endpoint, resources.region)


def test_tables_have_the_templates_keys(aws: EmbeddedAws) -> None:
    resources = build(aws)
    table = client(resources, "dynamodb").describe_table(TableName=resources.physical_id("TokensTable"))[
        "Table"
    ]
    assert table["KeySchema"] == [
        {"AttributeName": "queue_url", "KeyType": "HASH"},
        {"AttributeName": "token", "KeyType": "RANGE"},
    ]


def test_the_bulk_queue_redrives_to_its_dead_letter_queue(aws: EmbeddedAws) -> None:
    resources = build(aws)
    attributes = client(resources, "sqs").get_queue_attributes(
        QueueUrl=resources.physical_id("BulkQueue"), AttributeNames=["All"]
    )["Attributes"]
    policy = json.loads(attributes["RedrivePolicy"])
    assert policy["deadLetterTargetArn"].endswith(":test-BulkDeadLetterQueue")
    assert int(policy["maxReceiveCount"]) == 5
    assert attributes["VisibilityTimeout"] == "120"


def test_alarms_take_parameter_overrides(aws: EmbeddedAws) -> None:
    resources = build(aws, {"ScaleThresholdLow": "3"})
    alarms = client(resources, "cloudwatch").describe_alarms(AlarmNames=["test-QueueDepthLowAlarm"])
    (alarm,) = alarms["MetricAlarms"]
    assert alarm["Threshold"] == 3.0
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": "test-BulkQueue"}]


def test_function_subscriptions_deliver_to_the_local_lambda_endpoint(aws: EmbeddedAws) -> None:
    resources = build(aws)
    subscriptions = client(resources, "sns").list_subscriptions_by_topic(
        TopicArn=resources.physical_id("ScalingTopic")
    )["Subscriptions"]
    assert [(s["Protocol"], s["Endpoint"]) for s in subscriptions] == [
        ("http", SNS_ENDPOINT + "test-ScalerFunction")
    ]


def test_the_schedule_rule_exists(aws: EmbeddedAws) -> None:
    resources = build(aws)
    rule = client(resources, "events").describe_rule(Name="test-RestarterFunctionRevive")
    assert rule["ScheduleExpression"] == "rate(1 minute)"


def test_function_environments_resolve_to_local_names(aws: EmbeddedAws) -> None:
    resources = build(aws, {"MinLoops": "2"}, create=False)
    scaler = resources.functions["ScalerFunction"]
    assert json.loads(scaler.environment["LOOP_FUNCTIONS"]) == {"test-BulkQueue": "test-poller"}
    assert scaler.environment["MIN_LOOPS"] == "2"
    assert scaler.environment["TOKENS_TABLE"] == "test-TokensTable"
    assert (
        resources.functions["ApiFunction"].environment["BULK_QUEUE_URL"]
        == f"{aws.url}/123456789012/test-BulkQueue"
    )
    assert resources.functions["PollerFunction"].timeout_seconds == 300
    assert resources.functions["ApiFunction"].layer_dirs[0].name == "shared"


def test_the_functions_started_ahead_of_the_first_job_are_those_invoked_by_name(aws: EmbeddedAws) -> None:
    # The local stack warms them up in the background (local_stack/stack.py): the loops' poller
    # and the jobs worker, which other functions invoke by the name in their environment
    resources = build(aws, create=False)
    specs = resources.functions.values()
    invoked = invoked_by_name(specs)
    assert {spec.logical_id for spec in specs if spec.name in invoked} == {"PollerFunction", "FilesFunction"}
