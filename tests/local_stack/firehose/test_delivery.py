"""Firehose's delivery to S3 on the local stack (local_stack/firehose/delivery.py): prefixes with
their expressions, record format conversion to Parquet by the Glue table's schema, failed records
under the error prefix, and PutRecordBatch's limits."""

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import duckdb
import pytest
from botocore.exceptions import ClientError

from local_stack.firehose.delivery import expand_prefix, install

pytestmark = pytest.mark.integration

BUCKET = "click-events-test"
COLUMNS = [
    {"Name": "time", "Type": "timestamp"},
    {"Name": "code", "Type": "string"},
    {"Name": "row", "Type": "int"},
    {"Name": "bot", "Type": "boolean"},
]


@pytest.fixture
def stream(moto: None) -> str:
    install()
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    glue = boto3.client("glue")
    glue.create_database(DatabaseInput={"Name": "clicks"})
    glue.create_table(
        DatabaseName="clicks",
        TableInput={"Name": "click_events", "StorageDescriptor": {"Columns": COLUMNS}},
    )
    boto3.client("firehose").create_delivery_stream(
        DeliveryStreamName="events",
        ExtendedS3DestinationConfiguration={
            "BucketARN": f"arn:aws:s3:::{BUCKET}",
            "RoleARN": "arn:aws:iam::123456789012:role/firehose",
            "Prefix": "events/day=!{timestamp:yyyy-MM-dd}/",
            "ErrorOutputPrefix": "failed/!{firehose:error-output-type}/day=!{timestamp:yyyy-MM-dd}/",
            "DataFormatConversionConfiguration": {
                "Enabled": True,
                "InputFormatConfiguration": {
                    "Deserializer": {"HiveJsonSerDe": {"TimestampFormats": ["millis"]}}
                },
                "OutputFormatConfiguration": {"Serializer": {"ParquetSerDe": {"Compression": "SNAPPY"}}},
                "SchemaConfiguration": {
                    "DatabaseName": "clicks",
                    "TableName": "click_events",
                    "RoleARN": "arn:aws:iam::123456789012:role/firehose",
                },
            },
        },
    )
    return "events"


def objects() -> dict[str, bytes]:
    s3 = boto3.client("s3")
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    return {key: s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() for key in keys}


def rows_of(body: bytes) -> list[tuple[Any, ...]]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "file.parquet")
        path.write_bytes(body)
        return duckdb.connect().execute("SELECT * FROM read_parquet(?) ORDER BY code", [str(path)]).fetchall()


def utc_naive(*parts: int) -> datetime:
    """A UTC time as Parquet's timestamp column gives it back (without a zone)."""
    return datetime(*parts, tzinfo=UTC).replace(tzinfo=None)


def test_prefix_expressions_are_the_arrival_time_and_the_error_type() -> None:
    now = datetime(2026, 11, 29, 7, 5, tzinfo=UTC)
    assert expand_prefix("events/day=!{timestamp:yyyy-MM-dd}/", now) == "events/day=2026-11-29/"
    assert expand_prefix("x/!{timestamp:yyyy/MM/dd/HH}/", now) == "x/2026/11/29/07/"
    assert expand_prefix("f/!{firehose:error-output-type}/", now, "format-conversion-failed") == (
        "f/format-conversion-failed/"
    )


def test_json_records_become_one_parquet_file_with_the_tables_columns(stream: str) -> None:
    # Given records with an extra key, a missing one, and keys in another case
    records = [
        {"time": 1_795_885_501_250, "code": "b", "row": 7, "bot": False, "extra": "dropped"},
        {"TIME": 1_795_885_502_000, "Code": "a", "bot": True},
    ]
    firehose = boto3.client("firehose")
    firehose.put_record_batch(
        DeliveryStreamName=stream, Records=[{"Data": json.dumps(r).encode() + b"\n"} for r in records]
    )
    # Then one Parquet object under the day's prefix holds them with the table's columns
    [(key, body)] = objects().items()
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    assert key.startswith(f"events/day={day}/events-") and key.endswith(".parquet")
    assert body[:4] == b"PAR1"
    assert rows_of(body) == [
        (utc_naive(2026, 11, 28, 17, 5, 2), "a", None, True),
        (utc_naive(2026, 11, 28, 17, 5, 1, 250000), "b", 7, False),
    ]


def test_a_record_that_is_not_json_goes_under_the_error_prefix_and_the_rest_is_delivered(stream: str) -> None:
    boto3.client("firehose").put_record_batch(
        DeliveryStreamName=stream,
        Records=[{"Data": b"not json\n"}, {"Data": b'{"time": 1795885501250, "code": "a", "bot": false}\n'}],
    )
    stored = objects()
    [events] = [body for key, body in stored.items() if key.startswith("events/")]
    [failed] = [body for key, body in stored.items() if key.startswith("failed/format-conversion-failed/")]
    assert [row[1] for row in rows_of(events)] == ["a"]
    error = json.loads(failed)
    assert error["errorCode"] == "DataFormatConversion.MalformedData"


def test_more_than_500_records_in_one_call_are_refused(stream: str) -> None:
    with pytest.raises(ClientError) as refused:
        boto3.client("firehose").put_record_batch(
            DeliveryStreamName=stream, Records=[{"Data": b"{}\n"} for _ in range(501)]
        )
    assert refused.value.response["Error"]["Code"] == "InvalidArgumentException"
    assert objects() == {}


def test_a_record_of_several_json_objects_is_several_rows(stream: str) -> None:
    packed = b'{"time": 1795885501250, "code": "a", "bot": false}\n{"time": 1795885501251, "code": "b"}'
    packed += b'{"code": "c"}'
    boto3.client("firehose").put_record_batch(DeliveryStreamName=stream, Records=[{"Data": packed}])
    [body] = objects().values()
    assert [row[1] for row in rows_of(body)] == ["a", "b", "c"]
