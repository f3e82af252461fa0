"""The embedded CloudFormation (local_stack/cloudformation/deploy.py) in-process under moto: a SAM template
is transformed, its Rules refuse a bad parameter set, and a change set's stack has its outputs."""

import io
import json
import zipfile
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local_stack.cloudformation import deploy as cloudformation
from local_stack.registry import RESOURCE_PROVIDERS

pytestmark = pytest.mark.integration

TEMPLATE = {
    "AWSTemplateFormatVersion": "2010-09-09",
    "Transform": "AWS::Serverless-2016-10-31",
    "Parameters": {"Low": {"Type": "Number", "Default": 1}, "High": {"Type": "Number", "Default": 2}},
    "Rules": {
        "Order": {
            "Assertions": [
                {
                    "Assert": {"Fn::Not": [{"Fn::Equals": [{"Ref": "Low"}, {"Ref": "High"}]}]},
                    "AssertDescription": "Low and High must differ.",
                }
            ]
        }
    },
    "Resources": {
        "Handler": {
            "Type": "AWS::Serverless::Function",
            "Properties": {
                "CodeUri": "s3://code/handler.zip",
                "Handler": "app.handler",
                "Runtime": "python3.13",
                "Events": {"Tick": {"Type": "Schedule", "Properties": {"Schedule": "rate(1 minute)"}}},
            },
        },
        "Alarm": {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {
                "Namespace": "AWS/Lambda",
                "MetricName": "Errors",
                "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": "Handler"}}],
                "Statistic": "Sum",
                "Period": 60,
                "EvaluationPeriods": 1,
                "Threshold": 1,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            },
        },
    },
    "Outputs": {
        "FunctionName": {"Value": {"Ref": "Handler"}},
        "AlarmArn": {"Value": {"Fn::GetAtt": ["Alarm", "Arn"]}},
    },
}


@pytest.fixture
def cfn(moto: None) -> Any:
    cloudformation.install(RESOURCE_PROVIDERS)
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="code")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as code:
        code.writestr("app.py", "def handler(event, context):\n    return None\n")
    s3.put_object(Bucket="code", Key="handler.zip", Body=archive.getvalue())
    return boto3.client("cloudformation")


def test_a_sam_template_deployed_by_change_set_has_its_resources_and_outputs(cfn: Any) -> None:
    # When a SAM template is deployed as sam deploy does it (a change set, then its execution)
    cfn.create_change_set(
        StackName="small", ChangeSetName="one", ChangeSetType="CREATE", TemplateBody=json.dumps(TEMPLATE)
    )
    cfn.execute_change_set(ChangeSetName="one", StackName="small")
    # Then the function exists in Lambda, with the role and schedule the transform adds
    resources = {
        r["LogicalResourceId"]: r for r in cfn.describe_stack_resources(StackName="small")["StackResources"]
    }
    assert {"Handler", "HandlerRole", "HandlerTick", "Alarm"} <= set(resources)
    name = resources["Handler"]["PhysicalResourceId"]
    assert boto3.client("lambda").get_function(FunctionName=name)["Configuration"]["Handler"] == "app.handler"
    # And the alarm exists in CloudWatch, and the outputs resolve to both
    [stack] = cfn.describe_stacks(StackName="small")["Stacks"]
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stack["Outputs"]}
    assert outputs["FunctionName"] == name
    [alarm] = boto3.client("cloudwatch").describe_alarms()["MetricAlarms"]
    assert outputs["AlarmArn"] == alarm["AlarmArn"]


def test_a_parameter_set_the_rules_refuse_creates_nothing(cfn: Any) -> None:
    # When the parameters break an assertion of the template's Rules
    with pytest.raises(ClientError) as refused:
        cfn.create_stack(
            StackName="refused",
            TemplateBody=json.dumps(TEMPLATE),
            Parameters=[{"ParameterKey": "High", "ParameterValue": "1"}],
        )
    # Then CloudFormation's ValidationError carries the assertion's description, and no stack exists
    assert refused.value.response["Error"]["Code"] == "ValidationError"
    assert "Low and High must differ." in refused.value.response["Error"]["Message"]
    assert not cfn.describe_stacks()["Stacks"]


def test_a_subscription_filter_whose_log_group_went_first_is_deleted_with_it(cfn: Any) -> None:
    # Given a stack with a log group and a function subscribed to it (SAM's CloudWatchLogs event
    # adds the AWS::Logs::SubscriptionFilter), as template.yaml's collector is
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Resources": {
            "AccessLogs": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/test/access"}},
            "Collector": {
                "Type": "AWS::Serverless::Function",
                "Properties": {
                    "CodeUri": "s3://code/handler.zip",
                    "Handler": "app.handler",
                    "Runtime": "python3.13",
                    "Events": {
                        "Access": {
                            "Type": "CloudWatchLogs",
                            "Properties": {"LogGroupName": {"Ref": "AccessLogs"}, "FilterPattern": ""},
                        }
                    },
                },
            },
        },
    }
    cfn.create_stack(StackName="logs", TemplateBody=json.dumps(template), Capabilities=["CAPABILITY_IAM"])
    logs = boto3.client("logs")
    [subscription] = logs.describe_subscription_filters(logGroupName="/test/access")["subscriptionFilters"]
    # And its log group deleted before the filter, as moto's delete loop may do (it tries the
    # resources in a set's order, not CloudFormation's dependency order); deleting a log group
    # deletes its subscription filters (CloudWatch Logs API Reference, DeleteLogGroup)
    logs.delete_log_group(logGroupName="/test/access")
    # When the stack is deleted
    cfn.delete_stack(StackName="logs")
    # Then it completes: the filter went with its log group, and the function is gone too
    assert "logs" not in [stack["StackName"] for stack in cfn.describe_stacks()["Stacks"]]
    assert subscription["filterName"]
    assert not boto3.client("lambda").list_functions()["Functions"]
