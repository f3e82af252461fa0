"""What AWS refuses on delete, refused by the local stack's embedded AWS too: a stack whose bucket
holds objects ends DELETE_FAILED (the bucket and its files stay, the stack is listed with why), and
deleting it again once the bucket is empty completes."""

import json

import boto3
import pytest

pytestmark = pytest.mark.integration

TEMPLATE = {
    "AWSTemplateFormatVersion": "2010-09-09",
    "Resources": {
        "Files": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "job-files-refusal-test"}},
        "Jobs": {
            "Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": "jobs-refusal-test"},
        },
    },
}


@pytest.mark.usefixtures("moto")
def test_a_stack_whose_bucket_holds_files_fails_to_delete_until_the_bucket_is_emptied() -> None:
    # Given a stack with a bucket that holds a job's file
    cloudformation, s3 = boto3.client("cloudformation"), boto3.client("s3")
    cloudformation.create_stack(StackName="refusals", TemplateBody=json.dumps(TEMPLATE))
    s3.put_object(Bucket="job-files-refusal-test", Key="uploads/job.csv", Body=b"url\n")
    # When the stack is deleted
    cloudformation.delete_stack(StackName="refusals")
    # Then it is DELETE_FAILED, says why, and the bucket and its file are still there
    [stack] = cloudformation.describe_stacks(StackName="refusals")["Stacks"]
    assert stack["StackStatus"] == "DELETE_FAILED"
    events = cloudformation.describe_stack_events(StackName="refusals")["StackEvents"]
    assert any(
        "The bucket you tried to delete is not empty" in event.get("ResourceStatusReason", "")
        for event in events
    )
    assert s3.list_objects_v2(Bucket="job-files-refusal-test")["KeyCount"] == 1
    # And the other resources were deleted, as CloudFormation does
    assert "jobs-refusal-test" not in " ".join(boto3.client("sqs").list_queues().get("QueueUrls", []))
    # When the bucket is emptied and the stack deleted again, it completes
    s3.delete_object(Bucket="job-files-refusal-test", Key="uploads/job.csv")
    cloudformation.delete_stack(StackName="refusals")
    names = [stack["StackName"] for stack in cloudformation.describe_stacks()["Stacks"]]
    assert "refusals" not in names
    assert "job-files-refusal-test" not in [bucket["Name"] for bucket in s3.list_buckets()["Buckets"]]


@pytest.mark.usefixtures("moto")
def test_the_s3_api_refuses_to_delete_a_bucket_that_holds_objects() -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="plain-refusal-test")
    s3.put_object(Bucket="plain-refusal-test", Key="results/job.csv", Body=b"row\n")
    with pytest.raises(s3.exceptions.ClientError, match="BucketNotEmpty"):
        s3.delete_bucket(Bucket="plain-refusal-test")


def _policy(bucket: str, condition: dict[str, object] | None) -> str:
    statement: dict[str, object] = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:PutObject",
        "Resource": f"arn:aws:s3:::{bucket}/*",
    }
    if condition:
        statement["Condition"] = condition
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


@pytest.mark.usefixtures("moto")
def test_an_https_only_bucket_policy_lets_requests_through_and_a_plain_deny_does_not() -> None:
    # Given the template's HttpsOnly statement on one bucket, an unconditional Deny on another
    s3 = boto3.client("s3")
    for bucket, condition in (
        ("https-only-test", {"Bool": {"aws:SecureTransport": "false"}}),
        ("denied-test", None),
    ):
        s3.create_bucket(Bucket=bucket)
        s3.put_bucket_policy(Bucket=bucket, Policy=_policy(bucket, condition))
    # Then a request (standing for AWS's HTTPS requests) may write to the first, not to the second
    s3.put_object(Bucket="https-only-test", Key="uploads/a.csv", Body=b"url\n")
    with pytest.raises(s3.exceptions.ClientError, match="403"):
        s3.put_object(Bucket="denied-test", Key="uploads/a.csv", Body=b"url\n")


@pytest.mark.usefixtures("moto")
def test_the_embedded_lambda_answers_its_account_settings_and_refuses_a_reservation_over_the_quota(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given an account whose quota is 150 concurrent executions, and a function reserving 30
    monkeypatch.setenv("MOTO_LAMBDA_CONCURRENCY_QUOTA", "150")
    iam, lambda_client = boto3.client("iam"), boto3.client("lambda")
    role = iam.create_role(RoleName="quota-test", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    lambda_client.create_function(
        FunctionName="first", Runtime="python3.13", Role=role, Handler="app.handler", Code={"ZipFile": b"x"}
    )
    lambda_client.put_function_concurrency(FunctionName="first", ReservedConcurrentExecutions=30)
    # Then the account settings say what is left
    limit = lambda_client.get_account_settings()["AccountLimit"]
    assert (limit["ConcurrentExecutions"], limit["UnreservedConcurrentExecutions"]) == (150, 120)
    # And a stack whose function would leave fewer than 100 unreserved fails, as AWS refuses it
    function = {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "FunctionName": "second",
            "Runtime": "python3.13",
            "Role": role,
            "Handler": "app.handler",
            "Code": {"ZipFile": "def handler(event, context): pass"},
            "ReservedConcurrentExecutions": 21,
        },
    }
    with pytest.raises(Exception, match=r"below its minimum value of \[100\]"):
        boto3.client("cloudformation").create_stack(
            StackName="too-many", TemplateBody=json.dumps({"Resources": {"Second": function}})
        )
