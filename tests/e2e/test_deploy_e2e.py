"""`make deploy` and `make delete`, run for real against an embedded AWS (moto, in this process, with
the CloudFormation that local_stack/cloudformation/deploy.py completes: the SAM transform, Rules, the resource
types moto lacks). sam builds the code, uploads it to S3, creates and executes the change set; the
stack's resources, outputs, alarms, dashboard and log groups are checked in moto's services; the
delete keeps the links table. local_stack/README.md says where a real deployment differs."""

import json
import os
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from local_stack.cloudformation import deploy as cloudformation
from local_stack.embedded.server import EmbeddedAws
from local_stack.registry import RESOURCE_PROVIDERS
from tests.e2e.conftest import PROJECT_ROOT

# A test of this machine's deploy path, not of a deployment: `make acceptance` leaves it out.
pytestmark = pytest.mark.skipif(
    bool(os.environ.get("ACCEPTANCE_STACK")), reason="deploys into an embedded AWS"
)

REGION = "us-east-1"
BUCKET = "deploy-artifacts"
STACK = "bulk-shortener-deploy-test"
ALARM_EMAIL = "ops@example.com"
# moto's CloudFormation does not report a physical id for these (their resources exist all the same).
NO_PHYSICAL_ID_IN_MOTO = {
    "AWS::Lambda::Permission",
    "AWS::ApiGateway::Deployment",
    "AWS::Lambda::LayerVersion",
}


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[str, str]]:
    """An embedded AWS with a completed CloudFormation, and the environment that points tools at it.
    "localhost", not 127.0.0.1: moto's CloudFormation reads a TemplateURL's host to find its S3."""
    cloudformation.install(RESOURCE_PROVIDERS)
    server = EmbeddedAws(0)
    server.start()
    _, port = server.get_host_and_port()
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "MAKE", "MFLAGS")) and key != "MAKELEVEL"
    }
    environment |= {
        "AWS_ENDPOINT_URL": f"http://localhost:{port}",
        "AWS_ACCESS_KEY_ID": "deploy-test",
        "AWS_SECRET_ACCESS_KEY": "deploy-test",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "SAM_CLI_TELEMETRY": "0",
    }
    client("s3", environment).create_bucket(Bucket=BUCKET)
    yield environment
    server.stop()


def client(service: str, environment: dict[str, str]) -> Any:
    return boto3.session.Session(
        aws_access_key_id="deploy-test", aws_secret_access_key="deploy-test", region_name=REGION
    ).client(service, endpoint_url=environment["AWS_ENDPOINT_URL"])


def samconfig_for_the_test(directory: Path) -> Path:
    """The project's dev environment (samconfig.toml [default]), with the two settings that need a
    person or an account changed: an artifact bucket of our own instead of SAM's managed one, no
    confirmation prompt. Plus an alarm email, so the optional subscription is created too."""
    config = tomllib.loads((PROJECT_ROOT / "samconfig.toml").read_text())["default"]
    deploy = dict(config["deploy"]["parameters"])
    deploy.pop("resolve_s3")
    deploy |= {
        "s3_bucket": BUCKET,
        "confirm_changeset": False,
        "parameter_overrides": f"{deploy['parameter_overrides']} AlarmEmail={ALARM_EMAIL}",
    }
    sections = {
        "default.global.parameters": {**config["global"]["parameters"], "stack_name": STACK},
        "default.build.parameters": config["build"]["parameters"],
        "default.deploy.parameters": deploy,
    }
    lines = ["version = 0.1"]
    for section, values in sections.items():
        lines += ["", f"[{section}]"] + [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    path = directory / "samconfig.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def processed_template(environment: dict[str, str], stack_name: str = STACK) -> dict[str, Any]:
    """The template CloudFormation works from (botocore parses a JSON body into a dict)."""
    body = client("cloudformation", environment).get_template(StackName=stack_name)["TemplateBody"]
    return dict(body) if isinstance(body, dict) else json.loads(body)


def make(target: str, environment: dict[str, str], *variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", target, *variables],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=480,
        check=False,
    )


@pytest.fixture(scope="module")
def deployed(aws: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`make deploy` of the dev environment into the embedded AWS; the stack as CloudFormation
    describes it, and the samconfig used."""
    samconfig = samconfig_for_the_test(tmp_path_factory.mktemp("deploy"))
    result = make("deploy", aws, f"SAMCONFIG={samconfig}")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    [stack] = client("cloudformation", aws).describe_stacks(StackName=STACK)["Stacks"]
    return {"stack": stack, "samconfig": samconfig, "output": result.stdout}


@pytest.mark.e2e_timeout(600)
def test_make_deploy_creates_every_resource_with_a_physical_id(
    aws: dict[str, str], deployed: dict[str, Any]
) -> None:
    # Given the stack deployed by `make deploy` (sam build, sam deploy with the dev settings)
    stack = deployed["stack"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    # Then every resource of the processed template was created, each with a physical id
    cfn = client("cloudformation", aws)
    processed = processed_template(aws)
    resources = cfn.describe_stack_resources(StackName=STACK)["StackResources"]
    listed = {resource["LogicalResourceId"]: resource for resource in resources}
    given = {parameter["ParameterKey"]: parameter["ParameterValue"] for parameter in stack["Parameters"]}
    conditions = cloudformation.condition_values(processed, cloudformation.parameter_values(processed, given))
    assert set(listed) == {
        logical_id
        for logical_id, resource in processed["Resources"].items()
        if conditions.get(resource.get("Condition", ""), True)
    }
    for logical_id, resource in listed.items():
        assert resource["ResourceStatus"] == "CREATE_COMPLETE", resource
        if resource["ResourceType"] not in NO_PHYSICAL_ID_IN_MOTO:
            assert resource.get("PhysicalResourceId"), logical_id
    # And the SAM transform ran (no AWS::Serverless resource is left) with the API's stage, and the
    # edge's origin is an HTTP API of its own (docs/edge.md)
    assert not [kind for kind in (r["ResourceType"] for r in resources) if kind.startswith("AWS::Serverless")]
    apigateway = client("apigateway", aws)
    api_id = listed["ShortenerApi"]["PhysicalResourceId"]
    assert [stage["stageName"] for stage in apigateway.get_stages(restApiId=api_id)["item"]] == ["dev"]
    origin_id = listed["EdgeOriginApi"]["PhysicalResourceId"]
    http_apis = client("apigatewayv2", aws).get_apis()["Items"]
    assert [(api["ApiId"], api["ProtocolType"]) for api in http_apis] == [(origin_id, "HTTP")]
    # And the functions exist in Lambda, from the code sam uploaded to S3
    functions = client("lambda", aws)
    for logical_id in ("ApiFunction", "PollerFunction", "ScalerFunction", "RestarterFunction"):
        name = listed[logical_id]["PhysicalResourceId"]
        assert functions.get_function(FunctionName=name)["Configuration"]["Runtime"] == "python3.13"


@pytest.mark.e2e_timeout(600)
def test_the_outputs_resolve_and_the_operations_pieces_exist(
    aws: dict[str, str], deployed: dict[str, Any]
) -> None:
    # Given the deployed stack's outputs
    outputs = {output["OutputKey"]: output["OutputValue"] for output in deployed["stack"]["Outputs"]}
    # Then every output of the template whose condition holds (ApiDomainTarget needs DomainName)
    # has a value with nothing left unresolved
    processed = processed_template(aws)
    given = {
        parameter["ParameterKey"]: parameter["ParameterValue"]
        for parameter in deployed["stack"]["Parameters"]
    }
    conditions = cloudformation.condition_values(processed, cloudformation.parameter_values(processed, given))
    assert set(outputs) == {
        key
        for key, output in processed["Outputs"].items()
        if conditions.get(output.get("Condition", ""), True)
    }
    for key, value in outputs.items():
        assert value and "${" not in value and "None" not in value, (key, value)
    assert outputs["ApiUrl"].endswith(".execute-api.us-east-1.amazonaws.com/dev/")
    # And the alarms exist, each telling the operations topic (the optional email subscribed to it,
    # and the restarter, which revives a loop from its failure record at once)
    alarms = client("cloudwatch", aws).describe_alarms(AlarmNamePrefix=STACK)["MetricAlarms"]
    operations = [alarm for alarm in alarms if outputs["OperationsTopicArn"] in alarm["AlarmActions"]]
    assert len(operations) == sum(
        1
        for resource in processed["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        and {"Ref": "OperationsTopic"} in resource["Properties"]["AlarmActions"]
    )
    assert all(
        alarm["AlarmDescription"] and alarm["TreatMissingData"] == "notBreaching" for alarm in operations
    )
    subscriptions = client("sns", aws).list_subscriptions_by_topic(TopicArn=outputs["OperationsTopicArn"])
    subscribed = sorted((s["Protocol"], s["Endpoint"]) for s in subscriptions["Subscriptions"])
    assert [protocol for protocol, _ in subscribed] == ["email", "lambda"]
    assert subscribed[0][1] == ALARM_EMAIL and "-RestarterFunction-" in subscribed[1][1]
    # And the dashboard's body is JSON naming this stack's functions and queue
    dashboard_name = outputs["DashboardUrl"].rsplit("name=", 1)[1]
    body = json.loads(client("cloudwatch", aws).get_dashboard(DashboardName=dashboard_name)["DashboardBody"])
    text = json.dumps(body)
    assert outputs["PollerFunctionName"] in text and outputs["BulkQueueUrl"].rsplit("/", 1)[1] in text
    # And every function's log group expires after LogRetentionDays
    groups = client("logs", aws).describe_log_groups(logGroupNamePrefix="/aws/lambda/")["logGroups"]
    ours = [group for group in groups if STACK in group["logGroupName"]]
    functions = [
        r for r in processed_template(aws)["Resources"].values() if r["Type"] == "AWS::Lambda::Function"
    ]
    assert len(ours) == len(functions) and all(group["retentionInDays"] == 30 for group in ours)


@pytest.mark.e2e_timeout(600)
def test_an_impossible_parameter_set_is_refused_before_anything_is_created(
    aws: dict[str, str], deployed: dict[str, Any]
) -> None:
    # When a stack with more minimum loops than maximum is deployed
    result = make(
        "deploy",
        aws,
        f"SAMCONFIG={deployed['samconfig']}",
        "ARGS=--stack-name refused-stack --parameter-overrides Stage=dev MinLoops=3 MaxLoops=2",
    )
    # Then CloudFormation's Rules refuse it, saying why, and no stack exists
    assert result.returncode != 0
    assert "MinLoops must not exceed MaxLoops" in result.stdout + result.stderr
    names = [stack["StackName"] for stack in client("cloudformation", aws).describe_stacks()["Stacks"]]
    assert "refused-stack" not in names


@pytest.mark.e2e_timeout(600)
def test_a_deploy_whose_reserved_concurrency_exceeds_the_quota_stops_with_the_quota_to_ask_for(
    aws: dict[str, str], deployed: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an account whose Lambda quota is 130 (a new account's may be lower than 1,000)
    monkeypatch.setenv("MOTO_LAMBDA_CONCURRENCY_QUOTA", "130")
    # When a stack reserving 2 x 20 loops (and 10 for the files function) is deployed
    result = make(
        "deploy",
        aws,
        f"SAMCONFIG={deployed['samconfig']}",
        "ARGS=--stack-name quota-stack --parameter-overrides Stage=dev MaxLoops=20",
    )
    # Then `make deploy` stops before sam deploy, naming the quota to ask for, and no stack exists
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "reserves 50 concurrent executions" in output and "at least" in output
    assert "sam deploy" not in result.stdout.split("check-quota", 1)[-1]
    names = [stack["StackName"] for stack in client("cloudformation", aws).describe_stacks()["Stacks"]]
    assert "quota-stack" not in names


@pytest.mark.e2e_timeout(600)
def test_make_delete_empties_the_job_bucket_removes_the_stack_and_keeps_links_and_keys(
    aws: dict[str, str], deployed: dict[str, Any]
) -> None:
    # Given the deployed stack, its tables, and the files a bulk job left in its bucket
    outputs = {output["OutputKey"]: output["OutputValue"] for output in deployed["stack"]["Outputs"]}
    bucket = outputs["BulkBucketName"]
    s3 = client("s3", aws)
    for key in ("uploads/0123.csv", "results/0123.csv"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"url\nhttps://example.com/\n")
    # When it is deleted with `make delete`
    result = make("delete", aws, f"SAMCONFIG={deployed['samconfig']}", "ARGS=--no-prompts")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    # Then the first deletion failed on the bucket, as on AWS (S3 refuses to delete a bucket that
    # holds objects), the job files were deleted, saying so, and the second deletion completed
    assert f"Emptied bucket {bucket}: 2 job files" in result.stdout
    assert bucket not in [entry["Name"] for entry in s3.list_buckets()["Buckets"]]
    # And it says what it kept, and how to remove it
    assert f"LinksTable     AWS::DynamoDB::Table     {outputs['LinksTableName']}" in result.stdout
    assert f"aws dynamodb delete-table --table-name {outputs['LinksTableName']}" in result.stdout
    assert f"KeysTable      AWS::DynamoDB::Table     {outputs['KeysTableName']}" in result.stdout
    # And the links and keys tables are still there, while the jobs table and the functions are gone
    tables = client("dynamodb", aws).list_tables()["TableNames"]
    assert outputs["LinksTableName"] in tables and outputs["KeysTableName"] in tables
    assert outputs["JobsTableName"] not in tables
    functions = [function["FunctionName"] for function in client("lambda", aws).list_functions()["Functions"]]
    assert outputs["PollerFunctionName"] not in functions
