"""An export's file, written by the jobs worker from Athena's answer to the export's query
(docs/clicks.md, "Exports"). Athena's answer is CSV with every value and every name quoted, and no
other format Athena writes comes as one file (UNLOAD writes several in parallel), so the answer is
rewritten as the asked format with DuckDB: CSV with the plain header ``EXPORT_COLUMNS`` and values
quoted only where they must be, JSON lines, or Parquet. Read and written on the function's disk
(its ephemeral storage is what bounds an export's size), uploaded in parts."""

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from shortener.clicks.event_queries import EXPORT_COLUMNS

ExportFormat = Literal["csv", "jsonl", "parquet"]
FORMATS: tuple[ExportFormat, ...] = ("csv", "jsonl", "parquet")
CONTENT_TYPES: dict[str, str] = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
}
# The answer's columns as DuckDB reads them (Athena writes a timestamp as 2026-11-27 10:00:00.123).
ANSWER_TYPES = {
    "time": "TIMESTAMP",
    "code": "VARCHAR",
    "job_id": "VARCHAR",
    "row": "BIGINT",
    "destination": "VARCHAR",
    "status": "INTEGER",
    "country": "VARCHAR",
    "device": "VARCHAR",
    "browser": "VARCHAR",
    "os": "VARCHAR",
    "referrer": "VARCHAR",
    "bot": "BOOLEAN",
    "visitor": "VARCHAR",
}
# Text formats spell a time as ISO 8601 in UTC; Parquet keeps it a timestamp (UTC).
_ISO_TIME = "strftime(time, '%Y-%m-%dT%H:%M:%S.%gZ') AS time"
_COPY_OPTIONS = {
    "csv": "FORMAT csv, HEADER true",
    "jsonl": "FORMAT json",
    "parquet": "FORMAT parquet, COMPRESSION snappy",
}


def write_export_file(answer: Path, target: Path, file_format: ExportFormat) -> int:
    """Athena's CSV answer at ``answer`` rewritten at ``target`` in ``file_format``, rows in the
    answer's order: the rows written."""
    import duckdb

    assert tuple(ANSWER_TYPES) == EXPORT_COLUMNS
    columns = ", ".join(
        _ISO_TIME if name == "time" and file_format != "parquet" else f'"{name}"' for name in EXPORT_COLUMNS
    )
    types = "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in ANSWER_TYPES.items()) + "}"
    connection = duckdb.connect()
    try:
        # A worker's memory is small; what does not fit spills to its disk. Order is kept.
        connection.execute(f"SET temp_directory = '{sql_path(target.parent)}'")
        connection.execute("SET preserve_insertion_order = true")
        read = (
            f"read_csv('{sql_path(answer)}', header = true, columns = {types}, quote = '\"', "
            "escape = '\"', auto_detect = false)"
        )
        # The columns and options are fixed; the paths are this invocation's own, quoted.
        into = f"'{sql_path(target)}' ({_COPY_OPTIONS[file_format]})"
        copy = f"COPY (SELECT {columns} FROM {read}) TO {into}"  # noqa: S608
        counted = connection.execute(copy).fetchone()
    finally:
        connection.close()
    return int(counted[0]) if counted else 0


def sql_path(path: Path) -> str:
    """A path of this invocation's own, as the text of a DuckDB string literal."""
    return str(path).replace("'", "''")


@dataclass(frozen=True)
class ExportFileRequest:
    """An export's file to write: from its query's answer (``s3://...``) to ``bucket``/``key`` in
    ``file_format``, then recorded on the owner's export ``export`` for the build ``execution_id``."""

    owner: str
    export: str
    execution_id: str
    answer: str
    bucket: str
    key: str
    file_format: ExportFormat


class ExportFileRecords(Protocol):
    """``shortener.clicks.store_exports.ExportRecords``."""

    def written(self, owner: str, key: str, execution_id: str, file: str) -> None: ...


class ExportFileWriter:
    """Writes an export's file from its query's answer, then records it on the export."""

    def __init__(
        self,
        s3: Any,
        records: ExportFileRecords,
        *,
        folder: Callable[[], Any] = tempfile.TemporaryDirectory,
    ) -> None:
        self._s3 = s3
        self._records = records
        self._folder = folder

    def write(self, request: ExportFileRequest) -> int:
        """The answer rewritten as the file: the rows written. Written again if asked again (the
        same file)."""
        answer_bucket, _, answer_key = request.answer.removeprefix("s3://").partition("/")
        file_format = request.file_format
        with self._folder() as folder:
            source, target = Path(folder) / "answer.csv", Path(folder) / f"export.{file_format}"
            self._s3.download_file(answer_bucket, answer_key, str(source))
            rows = write_export_file(source, target, file_format)
            source.unlink()
            self._s3.upload_file(
                str(target),
                request.bucket,
                request.key,
                ExtraArgs={"ContentType": CONTENT_TYPES[file_format]},
            )
        written = f"s3://{request.bucket}/{request.key}"
        self._records.written(request.owner, request.export, request.execution_id, written)
        return rows
