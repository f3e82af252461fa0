"""Athena's queries on the local stack (local_stack/athena/queries.py): run by DuckDB over a Glue
table's Parquet objects, with Athena's parameters, states, paging, bytes scanned and cutoff."""

import json
import time
from typing import Any

import boto3
import pytest
from moto.athena.models import athena_backends

from local_stack.athena.queries import install
from local_stack.firehose.delivery import install as install_delivery

pytestmark = pytest.mark.integration

BUCKET = "click-events-test"
COLUMNS = [
    {"Name": "time", "Type": "timestamp"},
    {"Name": "code", "Type": "string"},
    {"Name": "visitor", "Type": "string"},
    {"Name": "bot", "Type": "boolean"},
]


@pytest.fixture
def events(moto: None) -> None:
    """A Glue table over s3://bucket/events/day=.../, two days of Parquet objects in it."""
    install()
    install_delivery()
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    glue = boto3.client("glue")
    glue.create_database(DatabaseInput={"Name": "clicks"})
    glue.create_table(
        DatabaseName="clicks",
        TableInput={
            "Name": "click_events",
            "PartitionKeys": [{"Name": "day", "Type": "string"}],
            "StorageDescriptor": {"Columns": COLUMNS, "Location": f"s3://{BUCKET}/events/"},
        },
    )
    boto3.client("athena").create_work_group(
        Name="clicks",
        Configuration={
            "ResultConfiguration": {"OutputLocation": f"s3://{BUCKET}/query-results/"},
            "EnforceWorkGroupConfiguration": True,
        },
    )
    for day, prefix in (("2026-11-28", "a"), ("2026-11-29", "b")):
        stream = f"events-{day}"
        boto3.client("firehose").create_delivery_stream(
            DeliveryStreamName=stream,
            ExtendedS3DestinationConfiguration={
                "BucketARN": f"arn:aws:s3:::{BUCKET}",
                "RoleARN": "arn:aws:iam::123456789012:role/firehose",
                "Prefix": f"events/day={day}/",
                "DataFormatConversionConfiguration": {
                    "Enabled": True,
                    "InputFormatConfiguration": {
                        "Deserializer": {"HiveJsonSerDe": {"TimestampFormats": ["millis"]}}
                    },
                    "SchemaConfiguration": {"DatabaseName": "clicks", "TableName": "click_events"},
                },
            },
        )
        records = [
            {"time": 1_795_885_501_000 + n, "code": f"{prefix}{n % 3}", "visitor": f"v{n % 2}", "bot": n == 0}
            for n in range(6)
        ]
        boto3.client("firehose").put_record_batch(
            DeliveryStreamName=stream, Records=[{"Data": json.dumps(r).encode()} for r in records]
        )


def run(query: str, parameters: list[str] | None = None, work_group: str = "clicks") -> dict[str, Any]:
    athena = boto3.client("athena")
    extra = {"ExecutionParameters": parameters} if parameters else {}
    execution_id = athena.start_query_execution(
        QueryString=query, QueryExecutionContext={"Database": "clicks"}, WorkGroup=work_group, **extra
    )["QueryExecutionId"]
    deadline = time.monotonic() + 30
    while True:
        execution = athena.get_query_execution(QueryExecutionId=execution_id)["QueryExecution"]
        if execution["Status"]["State"] not in ("QUEUED", "RUNNING") or time.monotonic() > deadline:
            return execution
        time.sleep(0.05)


def rows(execution_id: str, **paging: Any) -> list[list[str | None]]:
    answer = boto3.client("athena").get_query_results(QueryExecutionId=execution_id, **paging)
    return [[cell.get("VarCharValue") for cell in row["Data"]] for row in answer["ResultSet"]["Rows"]]


def test_a_query_with_parameters_runs_over_the_partitions_it_names(events: None) -> None:
    execution = run(
        "SELECT code, count(*) AS clicks, count(DISTINCT visitor) AS visitors FROM click_events "
        "WHERE day = ? AND NOT bot GROUP BY code ORDER BY code",
        ["'2026-11-29'"],
    )
    assert execution["Status"]["State"] == "SUCCEEDED", execution["Status"]
    assert rows(execution["QueryExecutionId"]) == [
        ["code", "clicks", "visitors"],
        ["b0", "1", "1"],
        ["b1", "2", "2"],
        ["b2", "2", "2"],
    ]
    # Then the answer is also the CSV Athena writes at the output location
    location = execution["ResultConfiguration"]["OutputLocation"]
    key = location.removeprefix(f"s3://{BUCKET}/")
    body = boto3.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()
    assert body.splitlines()[:2] == ['"code","clicks","visitors"', '"b0","1","1"']


def test_the_bytes_scanned_are_those_of_the_days_and_columns_the_query_reads(events: None) -> None:
    one_day = run("SELECT count(DISTINCT visitor) FROM click_events WHERE day = '2026-11-29'")
    both_days = run(
        "SELECT count(DISTINCT visitor) FROM click_events WHERE day BETWEEN '2026-11-28' AND '2026-11-29'"
    )
    more_columns = run("SELECT count(DISTINCT visitor), max(code) FROM click_events WHERE day = '2026-11-29'")
    counted = run("SELECT count(*) FROM click_events")
    scanned = [e["Statistics"]["DataScannedInBytes"] for e in (one_day, both_days, more_columns, counted)]
    assert 0 < scanned[0] < scanned[2] and scanned[1] == 2 * scanned[0], scanned
    # count(*) reads the files' row counts only
    assert scanned[3] == 0 and rows(counted["QueryExecutionId"])[1] == ["12"]


def test_results_are_paged_with_a_header_first(events: None) -> None:
    execution = run("SELECT code FROM click_events ORDER BY code")
    first = boto3.client("athena").get_query_results(
        QueryExecutionId=execution["QueryExecutionId"], MaxResults=5
    )
    assert [r["Data"][0]["VarCharValue"] for r in first["ResultSet"]["Rows"]] == [
        "code",
        "a0",
        "a0",
        "a1",
        "a1",
    ]
    rest = rows(execution["QueryExecutionId"], NextToken=first["NextToken"])
    assert len(rest) == 8


def test_a_query_over_the_workgroups_cutoff_is_cancelled_and_a_wrong_one_fails(events: None) -> None:
    # (botocore refuses a limit under 10 MB; this table is a few KB, so its limit is put in directly)
    athena_backends["123456789012"]["us-east-1"].create_work_group(
        "tight", {"BytesScannedCutoffPerQuery": 10, "EnforceWorkGroupConfiguration": True}, "", []
    )
    cancelled = run("SELECT count(DISTINCT visitor) FROM click_events", work_group="tight")
    assert cancelled["Status"]["State"] == "CANCELLED"
    assert "bytes scanned limit" in cancelled["Status"]["StateChangeReason"]
    failed = run("SELECT no_such_column FROM click_events")
    assert failed["Status"]["State"] == "FAILED" and "no_such_column" in failed["Status"]["StateChangeReason"]


def test_parameters_take_the_placeholders_in_the_order_they_are_written(events: None) -> None:
    execution = run(
        "SELECT count(*) AS clicks FROM click_events WHERE day BETWEEN ? AND ? "
        "AND time >= CAST(? AS timestamp) AND code IN (?, ?) AND visitor = ?",
        ["'2026-11-28'", "'2026-11-29'", "'2026-11-28 00:00:00.000'", "'a1'", "'b1'", "'v1'"],
    )
    assert execution["Status"]["State"] == "SUCCEEDED", execution["Status"]
    assert rows(execution["QueryExecutionId"]) == [["clicks"], ["2"]]  # a1 and b1 of visitor v1: n = 1


def test_row_groups_whose_statistics_rule_out_the_asked_values_are_not_scanned(
    events: None, tmp_path: Any
) -> None:
    import duckdb

    # A compacted day: sorted by code, a row group per 2,048 rows (DuckDB's least), one per code
    path = tmp_path / "day.parquet"
    duckdb.connect().execute(
        "COPY (SELECT TIMESTAMP '2026-11-30 10:00:00' + to_seconds(i) AS time, 'k' || (i // 2048) AS code, "
        "'v' || (i % 97) AS visitor, i % 5 = 0 AS bot FROM range(6144) t(i) ORDER BY code) "
        f"TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 2048)"
    )
    boto3.client("s3").put_object(
        Bucket=BUCKET, Key="events/day=2026-11-30/c.parquet", Body=path.read_bytes()
    )
    counted = "SELECT count(DISTINCT visitor) FROM click_events WHERE day = '2026-11-30'"
    asked = {
        "all": counted + " AND code IS NOT NULL",
        "one": counted + " AND code = ?",
        "two": counted + " AND code IN (?, ?)",
        "or": counted + " AND (code = ? OR bot)",
    }
    parameters = {"one": ["'k1'"], "two": ["'k0'", "'k2'"], "or": ["'k1'"]}
    scanned = {}
    for name, query in asked.items():
        execution = run(query, parameters.get(name))
        assert execution["Status"]["State"] == "SUCCEEDED", execution["Status"]
        scanned[name] = execution["Statistics"]["DataScannedInBytes"]
    assert rows(run(asked["one"], ["'k1'"])["QueryExecutionId"])[1] == ["97"]
    # code and visitor chunks of one row group of three, of two, and (OR: no pruning) of all three
    assert scanned["one"] < scanned["two"] < scanned["all"] < scanned["or"], scanned
    assert abs(scanned["one"] * 3 - scanned["all"]) < scanned["all"] * 0.1, scanned
