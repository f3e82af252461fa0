"""From an AWS API request to what IAM authorises: the actions and resource ARNs of each call, as
the Service Authorization Reference maps them."""

import json
from typing import Any
from urllib.parse import urlencode

import pytest

from local_stack.iam.calls import Access, UnmappedService, denial_answer, denial_message, parse_call

REGION, ACCOUNT = "us-east-1", "123456789012"
TABLE = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table"
QUEUE_URL = f"http://127.0.0.1:3001/{ACCOUNT}/local-BulkQueue"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:local-BulkQueue"


def json_call(service: str, target: str, body: dict[str, Any]) -> list[Access]:
    call = parse_call(
        service, {"x-amz-target": target}, json.dumps(body).encode(), region=REGION, account=ACCOUNT
    )
    return list(call.accesses)


def query_call(service: str, params: dict[str, str]) -> list[Access]:
    call = parse_call(service, {}, urlencode(params).encode(), region=REGION, account=ACCOUNT)
    return list(call.accesses)


def test_a_dynamodb_item_operation_is_its_action_on_the_table() -> None:
    accesses = json_call("dynamodb", "DynamoDB_20120810.PutItem", {"TableName": "links", "Item": {}})
    assert accesses == [Access("dynamodb:PutItem", f"{TABLE}/links")]


def test_batch_write_needs_its_action_on_every_table_it_names() -> None:
    body = {
        "RequestItems": {"links": [{"PutRequest": {"Item": {}}}], "jobs": [{"DeleteRequest": {"Key": {}}}]}
    }
    accesses = json_call("dynamodb", "DynamoDB_20120810.BatchWriteItem", body)
    assert accesses == [
        Access("dynamodb:BatchWriteItem", f"{TABLE}/links"),
        Access("dynamodb:BatchWriteItem", f"{TABLE}/jobs"),
    ]


def test_batch_get_needs_its_action_on_every_table_it_names() -> None:
    body = {"RequestItems": {"links": {"Keys": []}, "jobs": {"Keys": []}}}
    accesses = json_call("dynamodb", "DynamoDB_20120810.BatchGetItem", body)
    assert {access.resource for access in accesses} == {f"{TABLE}/links", f"{TABLE}/jobs"}
    assert {access.action for access in accesses} == {"dynamodb:BatchGetItem"}


def test_a_transaction_authorises_each_item_as_its_own_operation_on_its_table() -> None:
    body = {
        "TransactItems": [
            {"Put": {"TableName": "links", "Item": {}}},
            {"Update": {"TableName": "links", "Key": {}}},
            {"ConditionCheck": {"TableName": "links", "Key": {}}},
            {"Delete": {"TableName": "jobs", "Key": {}}},
        ]
    }
    accesses = json_call("dynamodb", "DynamoDB_20120810.TransactWriteItems", body)
    assert [(access.action, access.resource) for access in accesses] == [
        ("dynamodb:PutItem", f"{TABLE}/links"),
        ("dynamodb:UpdateItem", f"{TABLE}/links"),
        ("dynamodb:ConditionCheckItem", f"{TABLE}/links"),
        ("dynamodb:DeleteItem", f"{TABLE}/jobs"),
    ]
    # with the transaction as the enclosing operation, for policies that test it
    assert {access.context for access in accesses} == {
        (("dynamodb:EnclosingOperation", "TransactWriteItems"),)
    }


def test_a_query_on_an_index_is_on_the_index_arn() -> None:
    accesses = json_call(
        "dynamodb", "DynamoDB_20120810.Query", {"TableName": "jobs", "IndexName": "by-owner"}
    )
    assert accesses == [Access("dynamodb:Query", f"{TABLE}/jobs/index/by-owner")]


def test_sqs_batch_operations_authorise_as_the_single_ones() -> None:
    for operation, action in [
        ("SendMessageBatch", "sqs:SendMessage"),
        ("DeleteMessageBatch", "sqs:DeleteMessage"),
        ("ChangeMessageVisibilityBatch", "sqs:ChangeMessageVisibility"),
    ]:
        accesses = json_call("sqs", f"AmazonSQS.{operation}", {"QueueUrl": QUEUE_URL, "Entries": []})
        assert accesses == [Access(action, QUEUE_ARN)]


def test_get_queue_url_is_on_the_queue_arn_of_its_owner() -> None:
    body = {"QueueName": "local-BulkQueue", "QueueOwnerAWSAccountId": "999999999999"}
    accesses = json_call("sqs", "AmazonSQS.GetQueueUrl", body)
    assert accesses == [Access("sqs:GetQueueUrl", f"arn:aws:sqs:{REGION}:999999999999:local-BulkQueue")]


def test_the_sqs_query_protocol_is_read_too() -> None:
    accesses = query_call("sqs", {"Action": "ReceiveMessage", "QueueUrl": QUEUE_URL})
    assert accesses == [Access("sqs:ReceiveMessage", QUEUE_ARN)]


def test_sns_publish_batch_authorises_as_publish_on_the_topic() -> None:
    topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:scaling"
    accesses = query_call("sns", {"Action": "PublishBatch", "TopicArn": topic})
    assert accesses == [Access("sns:Publish", topic)]


def test_cloudwatch_alarm_operations_are_on_each_alarm() -> None:
    body = {"Action": "DeleteAlarms", "AlarmNames.member.1": "low", "AlarmNames.member.2": "high"}
    accesses = query_call("monitoring", body)
    alarm = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm"
    assert accesses == [
        Access("cloudwatch:DeleteAlarms", f"{alarm}:low"),
        Access("cloudwatch:DeleteAlarms", f"{alarm}:high"),
    ]


def test_put_metric_data_has_no_resource() -> None:
    accesses = json_call("monitoring", "GraniteServiceVersion20100801.PutMetricData", {"Namespace": "x"})
    assert accesses == [Access("cloudwatch:PutMetricData", "*")]


def test_put_events_is_on_each_event_bus() -> None:
    body = {"Entries": [{"Source": "a"}, {"Source": "b", "EventBusName": "orders"}]}
    accesses = json_call("events", "AWSEvents.PutEvents", body)
    bus = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus"
    assert accesses == [
        Access("events:PutEvents", f"{bus}/default"),
        Access("events:PutEvents", f"{bus}/orders"),
    ]


def test_the_refusal_message_is_awss() -> None:
    role = f"arn:aws:sts::{ACCOUNT}:assumed-role/local-ApiFunctionRole/local-ApiFunction"
    assert denial_message(role, "dynamodb", Access("dynamodb:PutItem", f"{TABLE}/links"), explicit=False) == (
        f"User: {role} is not authorized to perform: dynamodb:PutItem on resource: {TABLE}/links "
        "because no identity-based policy allows the dynamodb:PutItem action"
    )
    # SQS writes the action in lower case, SNS with its upper-case prefix; no resource, no "on"
    assert "sqs:sendmessage on resource" in denial_message(
        role, "sqs", Access("sqs:SendMessage", QUEUE_ARN), False
    )
    assert "perform: SNS:Publish on" in denial_message(role, "sns", Access("sns:Publish", "arn:t"), False)
    assert denial_message(
        role, "monitoring", Access("cloudwatch:PutMetricData", "*"), explicit=True
    ).endswith("perform: cloudwatch:PutMetricData with an explicit deny in an identity-based policy")


def s3_call(method: str, path: str, query: str = "", headers: dict[str, str] | None = None) -> Any:
    return parse_call(
        "s3", headers or {}, b"", query=query, path=path, method=method, region=REGION, account=ACCOUNT
    )


def test_s3_object_operations_are_their_actions_on_the_object() -> None:
    bucket = "arn:aws:s3:::bulk"
    cases = {
        ("GET", "/bulk/uploads/a.csv", ""): ("GetObject", "s3:GetObject"),
        ("HEAD", "/bulk/uploads/a.csv", ""): ("HeadObject", "s3:GetObject"),
        ("PUT", "/bulk/results/a.csv", ""): ("PutObject", "s3:PutObject"),
        ("POST", "/bulk/results/a.csv", "uploads="): ("CreateMultipartUpload", "s3:PutObject"),
        ("PUT", "/bulk/results/a.csv", "partNumber=1&uploadId=u"): ("UploadPart", "s3:PutObject"),
        ("POST", "/bulk/results/a.csv", "uploadId=u"): ("CompleteMultipartUpload", "s3:PutObject"),
        ("DELETE", "/bulk/results/a.csv", "uploadId=u"): ("AbortMultipartUpload", "s3:AbortMultipartUpload"),
        ("DELETE", "/bulk/results/a.csv", ""): ("DeleteObject", "s3:DeleteObject"),
    }
    for (method, path, query), (operation, action) in cases.items():
        call = s3_call(method, path, query)
        assert (call.operation, list(call.accesses)) == (
            operation,
            [Access(action, bucket + path.removeprefix("/bulk"))],
        ), (method, path, query)


def test_an_s3_copy_also_reads_its_source_and_bucket_calls_are_on_the_bucket() -> None:
    copy = s3_call("PUT", "/bulk/results/b.csv", headers={"x-amz-copy-source": "/bulk/uploads/a.csv"})
    assert list(copy.accesses) == [
        Access("s3:PutObject", "arn:aws:s3:::bulk/results/b.csv"),
        Access("s3:GetObject", "arn:aws:s3:::bulk/uploads/a.csv"),
    ]
    assert list(s3_call("GET", "/bulk", "list-type=2").accesses) == [
        Access("s3:ListBucket", "arn:aws:s3:::bulk")
    ]
    assert list(s3_call("PUT", "/bulk", "notification=").accesses) == [
        Access("s3:PutBucketNotification", "arn:aws:s3:::bulk")
    ]


def test_an_s3_listing_carries_its_prefix_for_conditions() -> None:
    # A policy may grant ListBucket only under a prefix (s3:prefix): the listing says which it asks
    assert list(s3_call("GET", "/bulk", "list-type=2&prefix=events%2F").accesses) == [
        Access("s3:ListBucket", "arn:aws:s3:::bulk", (("s3:prefix", "events/"),))
    ]
    # and one without a prefix carries no key, so such a grant does not hold for it
    assert [access.context for access in s3_call("GET", "/bulk", "list-type=2").accesses] == [()]


def test_an_s3_refusal_is_s3s_error_document() -> None:
    call = s3_call("GET", "/bulk/uploads/a.csv")
    answer = denial_answer(call, "User: x is not authorized to perform: s3:GetObject")
    assert answer.status == 403
    assert b"<Code>AccessDenied</Code>" in answer.body
    assert dict(answer.headers)["Content-Type"] == "application/xml"


def test_cloudfront_invalidations_are_on_the_distribution_and_its_listing_on_everything() -> None:
    def call(method: str, path: str) -> Any:
        return parse_call("cloudfront", {}, b"", path=path, method=method, region=REGION, account=ACCOUNT)

    listing = call("GET", "/2020-05-31/distribution?MaxItems=100")
    assert [(a.action, a.resource) for a in listing.accesses] == [("cloudfront:ListDistributions", "*")]
    created = call("POST", "/2020-05-31/distribution/E1ABC/invalidation")
    arn = f"arn:aws:cloudfront::{ACCOUNT}:distribution/E1ABC"
    assert [(a.action, a.resource) for a in created.accesses] == [("cloudfront:CreateInvalidation", arn)]
    assert call("GET", "/2020-05-31/distribution/E1ABC/invalidation/I1").operation == "GetInvalidation"
    with pytest.raises(UnmappedService):
        call("POST", "/2020-05-31/distribution")
