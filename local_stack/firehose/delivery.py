"""Delivery to S3 as Firehose does it, where moto's differs (moto writes each call's records
as they came, under ``<prefix>YYYY/MM/DD/HH/``):

- **Prefixes.** ``!{timestamp:<pattern>}`` in ``Prefix`` and ``ErrorOutputPrefix`` is the arrival
  time in the pattern's terms (yyyy, MM, dd, HH), and ``!{firehose:error-output-type}`` the kind of
  failure; a prefix with an expression gets no time folders of its own ("Custom prefixes for
  Amazon S3 objects", Firehose developer guide).
- **Record format conversion.** Where ``DataFormatConversionConfiguration`` is enabled, the JSON
  records become one Parquet file (Snappy) with the Glue table's columns, in their order: keys are
  matched to columns in lower case, keys with no column are dropped, a missing key is null, and a
  ``timestamp`` column is read as epoch milliseconds where the deserializer's TimestampFormats say
  ``millis`` ("Converting input record format", Firehose developer guide). A record may hold several
  JSON objects one after another; a record that is anything else (not JSON, an array) goes, as
  Firehose's error record, under the error prefix with the error output type
  ``format-conversion-failed``; the others are still delivered.
- **Limits.** PutRecordBatch takes at most 500 records and 4 MiB ("Amazon Data Firehose Quota");
  more is refused with ``InvalidArgumentException``, as botocore sends it unchecked.

Each call is delivered at once (AWS buffers up to the stream's interval): the local stack answers
a click's queries within a second rather than a minute. The Parquet file is written by DuckDB (the
engine the local Athena answers with), then put in the embedded S3 within the request, so it is
journaled as every other object is."""

import base64
import json
import re
import tempfile
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MAX_RECORDS = 500
MAX_BYTES = 4 * 1024 * 1024
_TIMESTAMP = re.compile(r"!\{timestamp:([^}]*)\}")
_COLUMN = re.compile(r"[a-z_][a-z0-9_]*")
_JAVA_PATTERN = (("yyyy", "%Y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"), ("ss", "%S"))
# Hive types of the Glue table -> DuckDB's.
_TYPES = {
    "string": "VARCHAR",
    "int": "INTEGER",
    "integer": "INTEGER",
    "bigint": "BIGINT",
    "smallint": "SMALLINT",
    "boolean": "BOOLEAN",
    "double": "DOUBLE",
    "float": "FLOAT",
    "timestamp": "TIMESTAMP",
    "date": "DATE",
}
_installed = threading.Lock()


def expand_prefix(prefix: str, now: datetime, error_type: str = "") -> str:
    """A Firehose prefix with its namespaces evaluated at ``now`` (UTC)."""

    def timestamp(match: re.Match[str]) -> str:
        pattern = match.group(1)
        for java, python in _JAVA_PATTERN:
            pattern = pattern.replace(java, python)
        return now.strftime(pattern)

    return _TIMESTAMP.sub(timestamp, prefix).replace("!{firehose:error-output-type}", error_type)


def object_key(prefix: str, stream: str, version: str, now: datetime, *, error_type: str = "") -> str:
    """Where one delivery goes: the expanded prefix (or moto's time folders when it has no
    expression), then ``<stream>-<version>-<time>-<random id>``."""
    expanded = expand_prefix(prefix, now, error_type)
    if expanded == prefix:
        expanded = f"{prefix}{'' if not prefix or prefix.endswith('/') else '/'}{now:%Y/%m/%d/%H}/"
    return f"{expanded}{stream}-{version}-{now:%Y-%m-%d-%H-%M-%S}-{uuid.uuid4()}"


def parquet_of(
    records: list[bytes], columns: list[dict[str, str]], *, millis: bool
) -> tuple[bytes, list[bytes]]:
    """The records as one Parquet file with ``columns`` (Glue's Name/Type), and the records that
    are not JSON objects."""
    import duckdb

    rows, failed = [], []
    names = [str(column["Name"]).lower() for column in columns]
    # Names go into the statement: only those Glue and Athena take (letters, digits, underscore).
    if not all(_COLUMN.fullmatch(name) for name in names):
        raise ValueError(f"The table's column names must be letters, digits and underscores: {names}")
    for record in records:
        documents = _documents(record)
        if documents is None:
            failed.append(record)
            continue
        for document in documents:
            lowered = {str(key).lower(): value for key, value in document.items()}
            rows.append({name: lowered.get(name) for name in names})
    types = {
        name: _TYPES.get(str(column["Type"]).lower(), "VARCHAR")
        for name, column in zip(names, columns, strict=True)
    }
    # Timestamps arrive as epoch milliseconds: read as integers, then made timestamps.
    read_types = {
        name: ("BIGINT" if millis and kind == "TIMESTAMP" else kind) for name, kind in types.items()
    }
    selected = ", ".join(
        f'epoch_ms("{name}") AS "{name}"' if read_types[name] != types[name] else f'"{name}"'
        for name in names
    )
    with tempfile.TemporaryDirectory(prefix="firehose-") as folder:
        source, target = Path(folder, "records.json"), Path(folder, "records.parquet")
        source.write_text("".join(json.dumps(row) + "\n" for row in rows))
        connection = duckdb.connect()
        try:
            structure = "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in read_types.items()) + "}"
            statement = (
                f"COPY (SELECT {selected} FROM read_json(?, format = 'newline_delimited', "  # noqa: S608
                f"columns = {structure})) TO '{target}' (FORMAT parquet, COMPRESSION snappy)"
            )
            connection.execute(statement, [str(source)])
        finally:
            connection.close()
        return target.read_bytes(), failed


def _documents(record: bytes) -> list[dict[str, Any]] | None:
    """The JSON objects of a record (one, or several one after another, whitespace between), or
    None when it is anything else (an array is not valid input either)."""
    decoder = json.JSONDecoder()
    try:
        text = record.decode("utf-8")
    except UnicodeDecodeError:
        return None
    documents: list[dict[str, Any]] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return documents or None
        try:
            document, position = decoder.raw_decode(text, position)
        except ValueError:
            return None
        if not isinstance(document, dict):
            return None
        documents.append(document)


def install() -> None:
    """Firehose's S3 delivery with expanded prefixes, record format conversion and its limits, in
    moto's Firehose (idempotent)."""
    from moto.firehose.exceptions import InvalidArgumentException
    from moto.firehose.models import FirehoseBackend

    with _installed:
        if getattr(FirehoseBackend, "_local_delivery", False):
            return
        put_record_batch = FirehoseBackend.put_record_batch

        def limited_put_record_batch(
            self: Any, delivery_stream_name: str, records: list[dict[str, Any]]
        ) -> Any:
            size = sum(len(record.get("Data") or b"") for record in records)
            if len(records) > MAX_RECORDS or size > MAX_BYTES:
                raise InvalidArgumentException(
                    f"A PutRecordBatch request takes at most {MAX_RECORDS} records and {MAX_BYTES} bytes; "
                    f"this one has {len(records)} records and {size} bytes."
                )
            return put_record_batch(self, delivery_stream_name, records)

        def put_s3_records(
            self: Any,
            delivery_stream_name: str,
            version_id: str,
            s3_destination: dict[str, Any],
            records: list[dict[str, Any]],
        ) -> list[dict[str, str]]:
            from moto.glue.models import glue_backends
            from moto.s3.models import s3_backends

            s3 = s3_backends[self.account_id][self.partition]
            bucket = str(s3_destination["BucketARN"]).split(":")[-1]
            now = datetime.now(UTC)
            prefix = str(s3_destination.get("Prefix", ""))
            data = [_bytes(record["Data"]) for record in records]
            conversion = s3_destination.get("DataFormatConversionConfiguration") or {}
            if str(conversion.get("Enabled", False)).lower() == "true":
                schema = conversion["SchemaConfiguration"]
                region = schema.get("Region") or self.region_name
                table = glue_backends[self.account_id][region].get_table(
                    str(schema["DatabaseName"]).lower(), str(schema["TableName"]).lower()
                )
                columns = table.as_dict()["StorageDescriptor"]["Columns"]
                deserializer = conversion.get("InputFormatConfiguration", {}).get("Deserializer", {})
                formats = (deserializer.get("HiveJsonSerDe") or {}).get("TimestampFormats") or []
                body, failed = parquet_of(data, columns, millis="millis" in formats)
                key = object_key(prefix, delivery_stream_name, version_id, now) + ".parquet"
                s3.put_object(bucket, key, body)
                if failed:
                    error_key = object_key(
                        str(s3_destination.get("ErrorOutputPrefix", "")),
                        delivery_stream_name,
                        version_id,
                        now,
                        error_type="format-conversion-failed",
                    )
                    s3.put_object(bucket, error_key, b"".join(_error_record(raw, now) for raw in failed))
            else:
                s3.put_object(
                    bucket, object_key(prefix, delivery_stream_name, version_id, now), b"".join(data)
                )
            return [{"RecordId": str(uuid.uuid4())} for _ in records]

        FirehoseBackend.put_record_batch = limited_put_record_batch  # type: ignore[method-assign]
        FirehoseBackend.put_s3_records = put_s3_records  # type: ignore[method-assign]
        FirehoseBackend._local_delivery = True  # type: ignore[attr-defined]


def _bytes(data: Any) -> bytes:
    return data if isinstance(data, bytes) else base64.b64decode(data)


def _error_record(raw: bytes, now: datetime) -> bytes:
    """Firehose's record for one that failed conversion (its raw data base64-encoded)."""
    return (
        json.dumps(
            {
                "attemptsMade": 1,
                "arrivalTimestamp": int(now.timestamp() * 1000),
                "errorCode": "DataFormatConversion.MalformedData",
                "errorMessage": "The record is not a JSON object.",
                "rawData": base64.b64encode(raw).decode(),
            }
        ).encode()
        + b"\n"
    )
