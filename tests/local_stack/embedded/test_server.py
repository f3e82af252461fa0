"""The embedded AWS (moto's server with the local stack's fixes), over real HTTP on loopback."""

import http.client
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import boto3
import moto.backends as moto_backends
import moto.sqs.models as sqs_models
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models.table import Table

from local_stack.embedded.server import EmbeddedAws

pytestmark = pytest.mark.integration


def client(aws: EmbeddedAws, service: str) -> Any:
    """A boto3 client of the embedded AWS."""
    return boto3.client(
        service,
        endpoint_url=aws.url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


@pytest.fixture
def dynamodb(aws: EmbeddedAws) -> Any:
    return client(aws, "dynamodb")


@pytest.fixture
def table(dynamodb: Any, request: pytest.FixtureRequest) -> str:
    name = f"t-{request.node.name}"[:200]
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def put(table: str, key: str, value: str, condition: str | None = None) -> dict[str, Any]:
    operation: dict[str, Any] = {"TableName": table, "Item": {"k": {"S": key}, "v": {"S": value}}}
    if condition:
        operation["ConditionExpression"] = condition
    return {"Put": operation}


def value_of(dynamodb: Any, table: str, key: str) -> str | None:
    item = dynamodb.get_item(TableName=table, Key={"k": {"S": key}}, ConsistentRead=True).get("Item")
    return item["v"]["S"] if item else None


def test_a_transaction_commits_all_its_writes(dynamodb: Any, table: str) -> None:
    dynamodb.transact_write_items(TransactItems=[put(table, "a", "1"), put(table, "b", "2")])
    assert (value_of(dynamodb, table, "a"), value_of(dynamodb, table, "b")) == ("1", "2")


def test_a_failed_transaction_leaves_every_item_as_it_was(dynamodb: Any, table: str) -> None:
    # Given an existing item
    dynamodb.put_item(TableName=table, Item={"k": {"S": "old"}, "v": {"S": "before"}})
    # When a transaction overwrites it, adds a new one, then fails a condition
    with pytest.raises(ClientError) as raised:
        dynamodb.transact_write_items(
            TransactItems=[
                put(table, "old", "after"),
                put(table, "new", "x"),
                put(table, "old2", "y", condition="attribute_exists(k)"),
            ]
        )
    # Then it is cancelled and nothing it wrote remains
    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert value_of(dynamodb, table, "old") == "before"
    assert value_of(dynamodb, table, "new") is None
    assert value_of(dynamodb, table, "old2") is None


def test_concurrent_transactions_do_not_break_the_server(dynamodb: Any, table: str) -> None:
    # moto's DynamoDB is not thread-safe; the embedded server serialises its requests.
    def write(number: int) -> None:
        for index in range(10):
            dynamodb.transact_write_items(TransactItems=[put(table, f"{number}-{index}", "v")])

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(write, range(8)))
    count = dynamodb.scan(TableName=table, Select="COUNT", ConsistentRead=True)["Count"]
    assert count == 80


def test_model_records_do_not_accumulate(dynamodb: Any, table: str) -> None:
    # moto records every instance it creates (copies included) unless the server drops them.
    for index in range(5):
        dynamodb.transact_write_items(TransactItems=[put(table, f"r{index}", "v")])
    assert len(Table.instances_tracked) == 0  # type: ignore[attr-defined]


def raw_request(
    aws: EmbeddedAws, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> http.client.HTTPResponse:
    host, port = aws.get_host_and_port()
    connection = http.client.HTTPConnection(host, port, timeout=30)
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


# What boto3 sends for DynamoDB ListTables (moto does not check the signature).
LIST_TABLES = {
    "Content-Type": "application/x-amz-json-1.0",
    "X-Amz-Target": "DynamoDB_20120810.ListTables",
    "Authorization": "AWS4-HMAC-SHA256 Credential=local/20250101/us-east-1/dynamodb/aws4_request, "
    "SignedHeaders=host, Signature=0",
}


def cors_headers(response: http.client.HTTPResponse) -> list[str]:
    return [key for key in response.headers if key.lower().startswith("access-control-")]


def test_a_browser_preflight_is_refused_without_cors_headers(aws: EmbeddedAws) -> None:
    # When a web page's script asks the browser to call the embedded AWS (a CORS preflight)
    preflight = raw_request(
        aws,
        "OPTIONS",
        "/",
        {
            "Origin": "https://some-site.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,x-amz-target",
        },
    )
    # Then it is refused, and nothing tells the browser it may go on
    assert preflight.status == 403
    assert cors_headers(preflight) == []


def test_a_cross_origin_request_is_refused(aws: EmbeddedAws, dynamodb: Any, table: str) -> None:
    # A form post or no-cors fetch needs no preflight, but the browser still sends its Origin
    answer = raw_request(aws, "POST", "/", {**LIST_TABLES, "Origin": "https://some-site.example"}, b"{}")
    assert answer.status == 403
    assert cors_headers(answer) == []


def test_a_tools_request_is_answered_without_cors_headers(aws: EmbeddedAws, table: str) -> None:
    answer = raw_request(aws, "POST", "/", {**LIST_TABLES}, b"{}")
    assert answer.status == 200
    assert cors_headers(answer) == []


def test_a_host_that_is_not_loopback_is_refused(aws: EmbeddedAws) -> None:
    # A page whose domain was made to resolve to 127.0.0.1 (DNS rebinding) sends its own Host
    answer = raw_request(aws, "POST", "/", {**LIST_TABLES, "Host": "rebound.example:3001"}, b"{}")
    assert answer.status == 403


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/moto-api/"), ("GET", "/moto-api/data.json"), ("POST", "/moto-api/recorder/start-recording")],
)
def test_motos_admin_paths_are_refused(aws: EmbeddedAws, method: str, path: str) -> None:
    assert raw_request(aws, method, path, {}).status == 403


def test_a_reset_through_motos_admin_path_is_refused_and_resets_nothing(
    aws: EmbeddedAws, dynamodb: Any, table: str
) -> None:
    # Given a table with an item
    dynamodb.put_item(TableName=table, Item={"k": {"S": "kept"}, "v": {"S": "1"}})
    # When something posts to moto's reset endpoint
    answer = raw_request(aws, "POST", "/moto-api/reset", {})
    # Then it is refused, and the item is still there
    assert answer.status == 403
    assert value_of(dynamodb, table, "kept") == "1"


def test_the_admin_api_answers_when_asked_for() -> None:
    server = EmbeddedAws(0, admin_api=True)
    server.start()
    try:
        assert raw_request(server, "GET", "/moto-api/data.json", {}).status == 200
    finally:
        server.stop()


def test_the_request_recorder_keeps_each_request_on_a_line_of_its_own_under_concurrency(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.moto_api import recorder as moto_recorder

    from local_stack.embedded import request_log

    # Given the embedded AWS with moto's recorder on (as `--moto-api` and the bulk benchmark use it)
    recording = tmp_path / "recording.jsonl"
    monkeypatch.setattr(moto_recorder, "_location", str(recording))
    server = EmbeddedAws(0, admin_api=True)
    server.start()
    try:
        sqs = boto3.client(
            "sqs",
            endpoint_url=server.url,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
        queue_url = sqs.create_queue(QueueName="recorded")["QueueUrl"]
        request_log.recorder(server.url, "start-recording")
        # When requests larger than a file buffer are served at the same time
        body = "x" * 30_000
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda _: sqs.send_message(QueueUrl=queue_url, MessageBody=body), range(64)))
        request_log.recorder(server.url, "stop-recording")
        # Then the recording parses, one whole request a line
        recorded = request_log.read_recording(recording)
    finally:
        server.stop()
    assert sum(request.operation == "SendMessage" for request in recorded) == 64


@pytest.fixture
def sqs(aws: EmbeddedAws) -> Any:
    return client(aws, "sqs")


def test_sqs_requests_cost_the_same_whatever_the_backlog(
    sqs: Any, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a queue of 600 messages: 10 received (in flight), 20 delayed, the rest waiting
    url = sqs.create_queue(QueueName=f"q-{request.node.name}"[:80])["QueueUrl"]
    for start in range(0, 600, 10):
        delay = 600 if start < 20 else 0
        entries = [{"Id": str(n), "MessageBody": f"m{start + n}", "DelaySeconds": delay} for n in range(10)]
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
    assert len(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]) == 10
    clock_reads = 0
    read_clock = sqs_models.unix_time_millis

    def counted() -> float:
        nonlocal clock_reads
        clock_reads += 1
        return read_clock()

    monkeypatch.setattr(sqs_models, "unix_time_millis", counted)
    # When a loop receives 10 more, sends 10 and asks for the depth
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(n), "MessageBody": "x"} for n in range(10)])
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    depth = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    # Then SQS answers as before: 10 messages, the counts of each kind
    assert len(received) == 10
    assert depth == {
        "ApproximateNumberOfMessages": str(600 + 10 - 20 - 20),
        "ApproximateNumberOfMessagesNotVisible": "20",
        "ApproximateNumberOfMessagesDelayed": "20",
    }
    # And the clock was read a few times per message handled, not for every message queued
    # (moto's own scans read it twice per queued message, several times per request)
    assert clock_reads < 200, clock_reads


def test_a_depth_read_counts_a_message_once_as_its_visibility_ends(
    sqs: Any, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a queue holding one message, received, whose visibility ends at a moment T
    name = f"q-{request.node.name}"[:80]
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="m")
    assert len(sqs.receive_message(QueueUrl=url, VisibilityTimeout=30)["Messages"]) == 1
    (message,) = sqs_models.sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].queues[name]._messages
    # When the depth is read as T passes, at whichever of the request's clock readings it passes
    # (the first k readings before T, every later one after)
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    depths = []
    for k in range(40):
        clock = partial(next, iter([message.visible_at - 1] * k), message.visible_at + 1)
        monkeypatch.setattr(sqs_models, "unix_time_millis", clock)
        depths.append(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"])
    # Then the message is in exactly one count every time (moto alone reads the clock per count, so
    # for some k it was in none: a queue with a message in it looked empty)
    assert [sum(int(count) for count in depth.values()) for depth in depths] == [1] * 40, depths


# ---- the presigned job-file requests a browser may send ----------------------------------------

FUNCTION_KEY, FUNCTION_SECRET = "AKIAFUNCTIONEXAMPLE1", "function-secret"


@pytest.fixture
def job_bucket(aws: EmbeddedAws) -> str:
    """A stack's bucket with an upload, and the exemption as the stack sets it (its functions' keys)."""
    client(aws, "s3").create_bucket(Bucket="job-files-exemption")
    client(aws, "s3").put_object(Bucket="job-files-exemption", Key="uploads/a.csv", Body=b"url\n")
    aws.presigned_exemption.signers[FUNCTION_KEY] = FUNCTION_SECRET
    aws.presigned_exemption.buckets.add("job-files-exemption")
    aws.signing_secrets[FUNCTION_KEY] = FUNCTION_SECRET
    return "job-files-exemption"


def presigned_path(
    aws: EmbeddedAws, method: str, bucket: str, key: str, secret: str = FUNCTION_SECRET
) -> str:
    s3 = boto3.client(
        "s3",
        endpoint_url=aws.url,
        region_name="us-east-1",
        aws_access_key_id=FUNCTION_KEY,
        aws_secret_access_key=secret,
        config=Config(signature_version="s3v4"),
    )
    url = s3.generate_presigned_url(
        {"GET": "get_object", "PUT": "put_object", "DELETE": "delete_object"}[method],
        Params={"Bucket": bucket, "Key": key},
        ExpiresIn=300,
    )
    return url.split(aws.url, 1)[1]


PAGE = {"Origin": "http://127.0.0.1:3000"}


def test_a_page_may_send_a_function_signed_request_for_a_job_file(aws: EmbeddedAws, job_bucket: str) -> None:
    answer = raw_request(aws, "GET", presigned_path(aws, "GET", job_bucket, "uploads/a.csv"), PAGE)
    assert answer.status == 200


@pytest.mark.parametrize(
    ("method", "key", "secret"),
    [
        ("GET", "uploads/a.csv", "forged"),  # a signature that is not the function's
        ("DELETE", "uploads/a.csv", FUNCTION_SECRET),  # not GET, PUT or HEAD
        ("GET", "other/a.csv", FUNCTION_SECRET),  # not an upload or a results file
    ],
)
def test_a_page_may_not_send_other_presigned_requests(
    aws: EmbeddedAws, job_bucket: str, method: str, key: str, secret: str
) -> None:
    answer = raw_request(aws, method, presigned_path(aws, method, job_bucket, key, secret), PAGE)
    assert answer.status == 403
    assert cors_headers(answer) == []


def test_a_query_that_merely_names_a_signature_opens_nothing(aws: EmbeddedAws, job_bucket: str) -> None:
    # Given what a hostile page can make up: signature parameters, and moto's reset path
    forged = (
        "X-Amz-Credential=AKIAFUNCTIONEXAMPLE1%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=00"
    )
    for method, path in (
        ("POST", f"/moto-api/reset?{forged}"),
        ("GET", f"/{job_bucket}/uploads/a.csv?{forged}"),
        ("DELETE", f"/{job_bucket}/uploads/a.csv?{forged}"),
    ):
        # Then each is refused, with no CORS headers
        answer = raw_request(aws, method, path, {"Origin": "https://some-site.example"})
        assert answer.status == 403, (method, path)
        assert cors_headers(answer) == []
    # And the file is still there
    assert client(aws, "s3").get_object(Bucket=job_bucket, Key="uploads/a.csv")["Body"].read() == b"url\n"


def test_a_request_finds_its_service_without_listing_motos_package(
    aws: EmbeddedAws, dynamodb: Any, table: str, sqs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the embedded AWS has served each service once
    url = sqs.create_queue(QueueName="q-service-lookup")["QueueUrl"]
    listings = 0
    list_modules = moto_backends.list_of_moto_modules

    def counted() -> Any:
        nonlocal listings
        listings += 1
        return list_modules()

    monkeypatch.setattr(moto_backends, "list_of_moto_modules", counted)
    # When 20 more requests come to each
    for n in range(20):
        dynamodb.put_item(TableName=table, Item={"k": {"S": f"k{n}"}, "v": {"S": "x"}})
        sqs.send_message(QueueUrl=url, MessageBody=f"m{n}")
    # Then each reached its service, and moto's package folder was not listed again
    assert value_of(dynamodb, table, "k19") == "x"
    assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])[
        "Attributes"
    ] == {"ApproximateNumberOfMessages": "20"}
    assert listings == 0
