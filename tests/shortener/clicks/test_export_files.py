"""A click export's file from Athena's answer: the plain CSV header the contract names, values
quoted only where they must be, JSON lines with typed values, Parquet with the same columns; and
the export's record, whose file is asked of the worker once and pointed to only for its build."""

import csv
import io
import json
from pathlib import Path

import boto3
import duckdb
import pytest

from shortener.clicks.event_queries import EXPORT_COLUMNS
from shortener.clicks.export_files import ExportFileRequest, ExportFileWriter, write_export_file
from shortener.clicks.store_exports import ExportRecords

HEADER = "time,code,job_id,row,destination,status,country,device,browser,os,referrer,bot,visitor"
# As Athena answers the export's query: every name and value quoted, a null left empty.
ANSWER = (
    '"time","code","job_id","row","destination","status","country","device","browser","os",'
    '"referrer","bot","visitor"\n'
    '"2026-11-27 10:00:00.123","abc",,,"default","301","DE","mobile","Mobile Safari","iOS",,'
    '"false","9f86d081884c7d65"\n'
    '"2026-11-27 10:00:01.000","x-y","4f1c2d3e4b5a69788796a5b4c3d2e1f0","3","say ""hi"", twice","302",'
    '"unknown","bot","Other","Other","t.co","true","0a1b2c3d4e5f6a7b"\n'
)


@pytest.fixture
def answer(tmp_path: Path) -> Path:
    path = tmp_path / "answer.csv"
    path.write_text(ANSWER)
    return path


def test_the_csv_has_the_plain_header_and_quotes_only_where_a_value_needs_it(
    answer: Path, tmp_path: Path
) -> None:
    target = tmp_path / "export.csv"
    assert write_export_file(answer, target, "csv") == 2
    lines = target.read_text().splitlines()
    assert lines[0] == HEADER == ",".join(EXPORT_COLUMNS)
    assert lines[1] == (
        "2026-11-27T10:00:00.123Z,abc,,,default,301,DE,mobile,Mobile Safari,iOS,,false,9f86d081884c7d65"
    )
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert rows[1]["destination"] == 'say "hi", twice' and rows[1]["row"] == "3"


def test_json_lines_carry_types_and_nulls(answer: Path, tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"
    assert write_export_file(answer, target, "jsonl") == 2
    first, second = (json.loads(line) for line in target.read_text().splitlines())
    assert list(first) == list(EXPORT_COLUMNS)
    assert first["job_id"] is None and first["row"] is None and first["bot"] is False
    assert (second["row"], second["status"], second["bot"]) == (3, 302, True)
    assert second["time"] == "2026-11-27T10:00:01.000Z"


def test_parquet_has_the_columns_with_a_timestamp(answer: Path, tmp_path: Path) -> None:
    target = tmp_path / "export.parquet"
    assert write_export_file(answer, target, "parquet") == 2
    described = duckdb.sql(f"DESCRIBE SELECT * FROM '{target}'").fetchall()
    assert [row[0] for row in described] == list(EXPORT_COLUMNS)
    assert dict((row[0], row[1]) for row in described)["time"] == "TIMESTAMP"
    codes = duckdb.sql(f"SELECT code FROM '{target}'").fetchall()
    assert codes == [("abc",), ("x-y",)]


@pytest.mark.integration
def test_a_file_is_asked_once_and_pointed_to_only_for_its_own_build(
    tables: dict[str, str], answer: Path
) -> None:
    records = ExportRecords(tables["CLICKS_TABLE"])
    records.put("alice", "e" * 32, "query-1", expires_at=2_000_000_000)
    # When two requests find the answer ready, only the first asks the worker for the file
    assert records.ask_file("alice", "e" * 32, "query-1", now=1000, stale_after=960)
    assert not records.ask_file("alice", "e" * 32, "query-1", now=1500, stale_after=960)
    # and one that finds it asked long ago (the worker died) asks again
    assert records.ask_file("alice", "e" * 32, "query-1", now=2000, stale_after=960)
    # When the worker writes the file from the answer
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="click-events-test")
    s3.put_object(Bucket="click-events-test", Key="query-results/query-1.csv", Body=answer.read_bytes())
    writer = ExportFileWriter(s3, records)
    rows = writer.write(
        ExportFileRequest(
            owner="alice",
            export="e" * 32,
            execution_id="query-1",
            answer="s3://click-events-test/query-results/query-1.csv",
            bucket="click-events-test",
            key="query-results/exports/query-1.csv",
            file_format="csv",
        )
    )
    # Then the record points to it, and the file is the export
    assert rows == 2
    found = records.get("alice", "e" * 32)
    assert found is not None and found.file == "s3://click-events-test/query-results/exports/query-1.csv"
    body = s3.get_object(Bucket="click-events-test", Key="query-results/exports/query-1.csv")
    assert body["Body"].read().decode().splitlines()[0] == HEADER
    assert body["ContentType"].startswith("text/csv")
    # And a file of an older build, written after a new build replaced it, is never pointed to
    records.put("alice", "e" * 32, "query-2", expires_at=2_000_000_000)
    records.written("alice", "e" * 32, "query-1", "s3://click-events-test/query-results/exports/query-1.csv")
    again = records.get("alice", "e" * 32)
    assert again is not None and (again.execution_id, again.file) == ("query-2", None)
