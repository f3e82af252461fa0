"""The local stack's S3: presigned URLs refused where S3 refuses them, bucket settings from their
CloudFormation shape, and notification events in the shape AWS sends."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config

from local_stack.s3.buckets import (
    lambda_event,
    lifecycle_rule,
    notification_configuration,
    presigned_url_problem,
)

SECRETS = {"local": "local"}
S3_PUT = json.loads((Path(__file__).parents[2] / "support" / "s3_put.json").read_text())


def presign(operation: str, params: dict[str, Any], expires: int = 600) -> str:
    client = boto3.client(
        "s3",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:3001",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(signature_version="s3v4"),
    )
    return client.generate_presigned_url(operation, Params=params, ExpiresIn=expires)


def arriving(url: str, method: str, **headers: str) -> dict[str, Any]:
    """The WSGI environ of ``url`` as the embedded AWS receives it."""
    parts = urlsplit(url)
    environ = {
        "REQUEST_METHOD": method,
        "HTTP_HOST": parts.netloc,
        "PATH_INFO": parts.path,
        "QUERY_STRING": parts.query,
        "RAW_URI": f"{parts.path}?{parts.query}",
    }
    environ.update(headers)
    return environ


def test_a_presigned_put_of_the_signed_length_passes_and_any_other_length_is_refused() -> None:
    url = presign("put_object", {"Bucket": "b", "Key": "uploads/x.csv", "ContentLength": 10})
    assert presigned_url_problem(arriving(url, "PUT", CONTENT_LENGTH="10"), SECRETS) is None
    code, _ = presigned_url_problem(arriving(url, "PUT", CONTENT_LENGTH="11"), SECRETS) or ("", "")
    assert code == "SignatureDoesNotMatch"


def test_a_browsers_preflight_of_a_presigned_put_is_answered_by_cors_not_the_signature() -> None:
    # Given a presigned PUT, and the OPTIONS request a browser sends before it (no body, no length)
    url = presign("put_object", {"Bucket": "b", "Key": "uploads/x.csv", "ContentLength": 10})
    preflight = arriving(
        url, "OPTIONS", HTTP_ORIGIN="http://127.0.0.1:3000", HTTP_ACCESS_CONTROL_REQUEST_METHOD="PUT"
    )
    # Then S3 does not check the signature against it (the bucket's CORS rules answer it)
    assert presigned_url_problem(preflight, SECRETS) is None


def test_a_presigned_download_with_response_headers_passes() -> None:
    url = presign(
        "get_object",
        {"Bucket": "b", "Key": "results/x.csv", "ResponseContentDisposition": 'attachment; filename="x.csv"'},
    )
    assert presigned_url_problem(arriving(url, "GET"), SECRETS) is None
    tampered = url.replace("results/x.csv", "results/y.csv")
    assert presigned_url_problem(arriving(tampered, "GET"), SECRETS) is not None


def test_an_expired_presigned_url_is_refused() -> None:
    url = presign("get_object", {"Bucket": "b", "Key": "k"}, expires=60)
    later = datetime.now(UTC) + timedelta(minutes=5)
    assert presigned_url_problem(arriving(url, "GET"), SECRETS, now=later) == (
        "AccessDenied",
        "Request has expired",
    )


def test_requests_that_are_not_presigned_are_not_checked() -> None:
    assert presigned_url_problem(arriving("http://127.0.0.1:3001/b/k", "GET"), SECRETS) is None


def test_cloudformation_bucket_settings_become_their_api_shapes() -> None:
    rule = {"Id": "r", "Status": "Enabled", "Prefix": "results/", "ExpirationInDays": "30"}
    assert lifecycle_rule(rule) == {
        "ID": "r",
        "Status": "Enabled",
        "Filter": {"Prefix": "results/"},
        "Expiration": {"Days": 30},
    }
    configuration = {
        "LambdaConfigurations": [
            {
                "Event": "s3:ObjectCreated:*",
                "Function": "arn:aws:lambda:us-east-1:123456789012:function:f",
                "Filter": {"S3Key": {"Rules": [{"Name": "prefix", "Value": "uploads/"}]}},
            }
        ]
    }
    assert notification_configuration(configuration) == {
        "LambdaFunctionConfigurations": [
            {
                "LambdaFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:f",
                "Events": ["s3:ObjectCreated:*"],
                "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "uploads/"}]}},
            }
        ]
    }


def test_a_notification_has_every_field_of_the_event_aws_sends() -> None:
    moto_body = {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": "us-east-1",
                "eventTime": "2026-01-01T00:00:00.000Z",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": "c",
                    "bucket": {"name": "b", "arn": "arn:aws:s3:::b"},
                    "object": {"key": "uploads/x.csv", "size": 3, "eTag": "e"},
                },
            }
        ]
    }
    record = lambda_event(moto_body)["Records"][0]
    expected = S3_PUT["Records"][0]

    def shape(value: Any) -> Any:
        return {key: shape(inner) for key, inner in value.items()} if isinstance(value, dict) else None

    assert shape(record) == shape(expected)
