"""IAM on the embedded AWS and the Lambda endpoint, over real HTTP: a function's calls are
authorised against its policies and refused with the error botocore raises on AWS; other keys are
unrestricted."""

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from local_stack.awslambda.endpoint import LambdaEndpoint
from local_stack.awslambda.runtime import LambdaRuntime, RuntimeSettings
from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.embedded.server import EmbeddedAws
from local_stack.iam import AccessControl, Principal
from local_stack.iam.policy import Policy

pytestmark = pytest.mark.integration

REGION = "us-east-1"
TABLE, OTHER_TABLE, QUEUE, TOPIC, BUCKET = "iam-links", "iam-jobs", "iam-queue", "iam-topic", "iam-bulk"
TABLE_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT_ID}:table/{TABLE}"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{QUEUE}"
POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": ["dynamodb:PutItem", "dynamodb:GetItem"], "Resource": TABLE_ARN},
        {"Effect": "Allow", "Action": ["sqs:ReceiveMessage", "sqs:GetQueueUrl"], "Resource": QUEUE_ARN},
        {"Effect": "Allow", "Action": "s3:PutObject", "Resource": f"arn:aws:s3:::{BUCKET}/uploads/*"},
        {
            "Effect": "Allow",
            "Action": "lambda:InvokeFunction",
            "Resource": f"arn:aws:lambda:*:*:function:{QUEUE}",
        },
    ],
}
FUNCTION = Principal(
    function_name="iam-fn",
    role_name="iam-fn-role",
    role_arn=f"arn:aws:iam::{ACCOUNT_ID}:role/iam-fn-role",
    policies=(Policy.parse(POLICY, "iam-fn-policy"),),
)
ROLE_SESSION = f"arn:aws:sts::{ACCOUNT_ID}:assumed-role/iam-fn-role/iam-fn"


@pytest.fixture(scope="module")
def access() -> AccessControl:
    control = AccessControl()
    control.load({FUNCTION.access_key: FUNCTION})
    return control


@pytest.fixture(scope="module")
def aws(access: AccessControl) -> Iterator[EmbeddedAws]:
    server = EmbeddedAws(0, front=access.middleware)
    server.start()
    admin = client(server.url, "dynamodb", "local")
    for name in (TABLE, OTHER_TABLE):
        admin.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    client(server.url, "sqs", "local").create_queue(QueueName=QUEUE)
    client(server.url, "sns", "local").create_topic(Name=TOPIC)
    client(server.url, "s3", "local").create_bucket(Bucket=BUCKET)
    server.signing_secrets[FUNCTION.access_key] = "local"
    yield server
    server.stop()


@pytest.fixture(scope="module")
def lambda_endpoint(access: AccessControl) -> Iterator[LambdaEndpoint]:
    endpoint = LambdaEndpoint(REGION, 0, access)
    endpoint.runtime = LambdaRuntime({}, RuntimeSettings("http://127.0.0.1:1", "http://127.0.0.1:1", REGION))
    thread = threading.Thread(target=endpoint.serve_forever, daemon=True)
    thread.start()
    yield endpoint
    endpoint.shutdown()
    endpoint.server_close()


def client(endpoint: str, service: str, access_key: str) -> Any:
    return boto3.session.Session(
        aws_access_key_id=access_key, aws_secret_access_key="local", region_name=REGION
    ).client(service, endpoint_url=endpoint, config=Config(retries={"max_attempts": 1}))  # type: ignore[call-overload]


def as_function(aws: EmbeddedAws, service: str) -> Any:
    return client(aws.url, service, FUNCTION.access_key)


def error_of(raised: pytest.ExceptionInfo[ClientError]) -> tuple[str, str, int]:
    response = raised.value.response
    return (
        response["Error"]["Code"],
        response["Error"]["Message"],
        response["ResponseMetadata"]["HTTPStatusCode"],
    )


def test_a_call_the_functions_policy_allows_goes_through(aws: EmbeddedAws) -> None:
    dynamodb = as_function(aws, "dynamodb")
    dynamodb.put_item(TableName=TABLE, Item={"k": {"S": "allowed"}})
    assert dynamodb.get_item(TableName=TABLE, Key={"k": {"S": "allowed"}})["Item"]


def test_dynamodb_refuses_with_access_denied_exception_and_changes_nothing(aws: EmbeddedAws) -> None:
    # Given an item the function may write but not delete
    as_function(aws, "dynamodb").put_item(TableName=TABLE, Item={"k": {"S": "kept"}})
    # When the function deletes it
    with pytest.raises(ClientError) as raised:
        as_function(aws, "dynamodb").delete_item(TableName=TABLE, Key={"k": {"S": "kept"}})
    # Then botocore raises DynamoDB's AccessDeniedException with AWS's message, and the item stays
    assert error_of(raised) == (
        "AccessDeniedException",
        f"User: {ROLE_SESSION} is not authorized to perform: dynamodb:DeleteItem on resource: {TABLE_ARN} "
        "because no identity-based policy allows the dynamodb:DeleteItem action",
        400,
    )
    admin = client(aws.url, "dynamodb", "local")
    assert admin.get_item(TableName=TABLE, Key={"k": {"S": "kept"}})["Item"]


def test_a_batch_write_is_refused_on_a_table_the_policy_does_not_name(aws: EmbeddedAws) -> None:
    with pytest.raises(ClientError) as raised:
        as_function(aws, "dynamodb").batch_write_item(
            RequestItems={TABLE: [{"PutRequest": {"Item": {"k": {"S": "b"}}}}]}
        )
    assert error_of(raised)[0] == "AccessDeniedException"
    assert "dynamodb:BatchWriteItem" in error_of(raised)[1]


def test_sqs_refuses_as_its_query_compatible_json_protocol_does(aws: EmbeddedAws) -> None:
    sqs = as_function(aws, "sqs")
    url = sqs.get_queue_url(QueueName=QUEUE)["QueueUrl"]  # allowed
    with pytest.raises(ClientError) as raised:
        sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "1", "MessageBody": "x"}])
    code, message, status = error_of(raised)
    assert (code, status) == ("AccessDenied", 403)
    assert message == (
        f"User: {ROLE_SESSION} is not authorized to perform: sqs:sendmessage on resource: {QUEUE_ARN} "
        "because no identity-based policy allows the sqs:sendmessage action"
    )
    assert (
        client(aws.url, "sqs", "local").get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]
        == "0"
    )


def test_sns_refuses_with_authorization_error(aws: EmbeddedAws) -> None:
    topic = f"arn:aws:sns:{REGION}:{ACCOUNT_ID}:{TOPIC}"
    with pytest.raises(ClientError) as raised:
        as_function(aws, "sns").publish(TopicArn=topic, Message="hello")
    code, message, status = error_of(raised)
    assert (code, status) == ("AuthorizationError", 403)
    assert f"perform: SNS:Publish on resource: {topic} because" in message


def test_a_service_the_stack_cannot_authorise_is_refused_not_waved_through(aws: EmbeddedAws) -> None:
    with pytest.raises(ClientError) as raised:
        as_function(aws, "sts").get_caller_identity()
    code, message, status = error_of(raised)
    assert (code, status) == ("AccessDenied", 403)
    assert "does not map sts requests to IAM actions" in message


def test_s3_refuses_with_its_error_document_and_stores_nothing(aws: EmbeddedAws) -> None:
    s3 = as_function(aws, "s3")
    s3.put_object(Bucket=BUCKET, Key="uploads/a.csv", Body=b"url\n")  # allowed
    with pytest.raises(ClientError) as raised:
        s3.put_object(Bucket=BUCKET, Key="results/a.csv", Body=b"row\n")
    code, message, status = error_of(raised)
    assert (code, status) == ("AccessDenied", 403)
    assert message == (
        f"User: {ROLE_SESSION} is not authorized to perform: s3:PutObject on resource: "
        f"arn:aws:s3:::{BUCKET}/results/a.csv because no identity-based policy allows the s3:PutObject action"
    )
    listed = client(aws.url, "s3", "local").list_objects_v2(Bucket=BUCKET)["Contents"]
    assert [item["Key"] for item in listed] == ["uploads/a.csv"]


def test_a_presigned_url_acts_with_its_signers_permissions(aws: EmbeddedAws) -> None:
    # (SigV4 query signatures, as the functions' S3 client makes them)
    s3 = boto3.session.Session(
        aws_access_key_id=FUNCTION.access_key, aws_secret_access_key="local", region_name=REGION
    ).client("s3", endpoint_url=aws.url, config=Config(signature_version="s3v4"))  # type: ignore[call-overload]
    allowed = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "uploads/b.csv"})
    refused = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "uploads/b.csv"})
    put = urllib.request.Request(allowed, data=b"url\n", method="PUT")
    with urllib.request.urlopen(put, timeout=10) as answer:
        assert answer.status == 200
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(refused, timeout=10)
    assert raised.value.code == 403
    assert b"<Code>AccessDenied</Code>" in raised.value.read()


def test_other_keys_are_unrestricted(aws: EmbeddedAws) -> None:
    admin = client(aws.url, "dynamodb", "local")
    admin.put_item(TableName=OTHER_TABLE, Item={"k": {"S": "admin"}})
    admin.delete_item(TableName=OTHER_TABLE, Key={"k": {"S": "admin"}})


def test_lambda_refuses_an_invoke_the_policy_does_not_allow(lambda_endpoint: LambdaEndpoint) -> None:
    with pytest.raises(ClientError) as raised:
        client(lambda_endpoint.url, "lambda", FUNCTION.access_key).invoke(FunctionName="not-mine")
    code, message, status = error_of(raised)
    assert (code, status) == ("AccessDeniedException", 403)
    assert message == (
        f"User: {ROLE_SESSION} is not authorized to perform: lambda:InvokeFunction on resource: "
        f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:not-mine "
        "because no identity-based policy allows the lambda:InvokeFunction action"
    )


def test_lambda_authorises_before_looking_the_function_up(lambda_endpoint: LambdaEndpoint) -> None:
    # The policy allows invoking a function of this name; none runs, so Lambda says so.
    with pytest.raises(ClientError) as raised:
        client(lambda_endpoint.url, "lambda", FUNCTION.access_key).invoke(FunctionName=QUEUE)
    assert error_of(raised)[0] == "ResourceNotFoundException"
