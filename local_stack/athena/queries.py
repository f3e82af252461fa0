"""Athena's queries on the local stack, answered by DuckDB over the same Parquet files.

moto's Athena records a query and answers it with no rows. Here ``StartQueryExecution`` runs it:
the query (Athena's dialect, Trino's) is parsed by sqlglot, its ``ExecutionParameters`` put in place
of its ``?`` in order (as Athena does: each parameter is the literal text it is given), each table
of the Glue catalog it names is made a DuckDB view over the objects under the table's location in
the embedded S3 (read from their files on disk: DuckDB's extension for S3 URLs downloads at run
time, which these machines cannot; a partition's values come from its ``key=value/`` folders),
and the query, transpiled to DuckDB's dialect, runs on a worker thread while the execution is
``RUNNING`` (never under the embedded AWS's request lock). Then, as Athena does:

- the answer is written as CSV to the workgroup's (or the request's) output location,
  ``<id>.csv``, and ``GetQueryResults`` pages it (a header row first, at most 1,000 rows a page,
  ``NextToken``; "GetQueryResults", Athena API reference);
- ``Statistics.DataScannedInBytes`` is what Athena would bill: the compressed bytes of the column
  chunks of the columns the query names, in the partitions its ``WHERE`` keeps ("Amazon Athena
  pricing": per byte scanned, with partitions and columnar formats reducing it);
- a query that would scan more than the workgroup's ``BytesScannedCutoffPerQuery`` is cancelled
  with that reason ("Workgroup data usage controls");
- a query that fails (an unknown column, a syntax error) ends ``FAILED`` with DuckDB's message as
  the state change reason."""

import atexit
import csv
import functools
import io
import json
import logging
import re
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

RESULTS_PAGE = 1000
_installed = threading.Lock()
# sqlglot's parser and generators, one query at a time: the first queries after a start, run at
# once (a link report asks four), once answered TIME_TO_UNIX for to_unixtime, which DuckDB lacks.
_transpiling = threading.Lock()
_runner = ThreadPoolExecutor(max_workers=2, thread_name_prefix="athena-query")
# Execution id -> what the local run made of it, the newest RUNS_KEPT (an answer is read within
# seconds of its query; its CSV stays at the output location).
RUNS_KEPT = 1000
_runs: "OrderedDict[str, _Run]" = OrderedDict()
_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_PARTITION = re.compile(r"([^/=]+)=([^/]*)/")
_DUCKDB_TYPES = {
    "VARCHAR": "varchar",
    "BIGINT": "bigint",
    "INTEGER": "integer",
    "HUGEINT": "bigint",
    "DOUBLE": "double",
    "FLOAT": "float",
    "BOOLEAN": "boolean",
    "TIMESTAMP": "timestamp",
    "DATE": "date",
}


@dataclass
class _Run:
    state: str = "RUNNING"
    reason: str = ""
    scanned: int = 0
    started: float = field(default_factory=time.time)
    ended: float | None = None
    columns: list[tuple[str, str]] = field(default_factory=list)
    rows: list[list[str | None]] = field(default_factory=list)
    output: str = ""


@dataclass(frozen=True)
class TableFiles:
    """A Glue table as the local run reads it: its columns, partition keys, and each object's
    file with its partition values."""

    columns: list[tuple[str, str]]
    partition_keys: list[str]
    files: list[tuple[Path, dict[str, str], int]]  # file, partition values, object size


def substitute(query: str, parameters: list[str]) -> Any:
    """The query parsed (Trino), its placeholders replaced in order by the parameters' literals."""
    import sqlglot
    from sqlglot import exp

    with _transpiling:
        tree = sqlglot.parse_one(query, read="trino")
        placeholders = list(tree.find_all(exp.Placeholder, bfs=False))  # depth first: the text's order
        if len(placeholders) != len(parameters):
            raise ValueError(
                f"The query has {len(placeholders)} parameters and {len(parameters)} values were given."
            )
        for placeholder, value in zip(placeholders, parameters, strict=True):
            literal = sqlglot.parse_one(f"SELECT {value}", read="trino")
            placeholder.replace(literal.expressions[0] if isinstance(literal, exp.Select) else literal)
    return tree


@dataclass(frozen=True)
class _Query:
    account: str
    region: str
    text: str
    parameters: list[str]
    database: str
    cutoff: int  # the workgroup's bytes scanned limit (0: none)


def install() -> None:
    """StartQueryExecution, GetQueryExecution and GetQueryResults answered by DuckDB, in moto's
    Athena (idempotent)."""
    from moto.athena.models import AthenaBackend
    from moto.athena.responses import AthenaResponse

    with _installed:
        if getattr(AthenaBackend, "_local_queries", False):
            return
        _moto["start"] = AthenaBackend.start_query_execution
        _moto["get_execution"] = AthenaResponse.get_query_execution
        _moto["get_results"] = AthenaResponse.get_query_results
        AthenaBackend.start_query_execution = _start_query_execution  # type: ignore[method-assign]
        AthenaResponse.get_query_execution = _get_query_execution  # type: ignore[method-assign]
        AthenaResponse.get_query_results = _get_query_results  # type: ignore[method-assign]
        AthenaBackend._local_queries = True  # type: ignore[attr-defined]


# moto's own methods, called by the local ones.
_moto: dict[str, Any] = {}


def _start_query_execution(  # noqa: PLR0917 - moto's own signature
    self: Any, query: str, context: Any, config: Any, workgroup: str, execution_parameters: Any
) -> str:
    execution_id: str = _moto["start"](self, query, context, config, workgroup, execution_parameters)
    group = self.work_groups.get(workgroup or "primary")
    settings = (group.configuration if group is not None else None) or {}
    output = "" if settings.get("EnforceWorkGroupConfiguration") else (config or {}).get("OutputLocation", "")
    output = output or (settings.get("ResultConfiguration") or {}).get("OutputLocation", "")
    run = _runs[execution_id] = _Run(output=f"{output.rstrip('/')}/{execution_id}.csv" if output else "")
    while len(_runs) > RUNS_KEPT:
        _runs.popitem(last=False)
    database = context.get("Database", "default") if isinstance(context, dict) else "default"
    query_of = _Query(
        self.account_id,
        self.region_name,
        query,
        list(execution_parameters or []),
        database,
        int(settings.get("BytesScannedCutoffPerQuery") or 0),
    )
    _runner.submit(_run, run, query_of)
    return execution_id


def _get_query_execution(self: Any) -> str:
    answer = json.loads(_moto["get_execution"](self))
    execution = answer["QueryExecution"]
    run = _runs.get(execution["QueryExecutionId"])
    if run is None:
        return json.dumps(answer)
    status: dict[str, Any] = {"State": run.state, "SubmissionDateTime": run.started}
    if run.ended is not None:
        status["CompletionDateTime"] = run.ended
    if run.reason:
        status["StateChangeReason"] = run.reason
    execution["Status"] = status
    took = int(((run.ended or time.time()) - run.started) * 1000)
    execution["Statistics"].update(
        DataScannedInBytes=run.scanned, EngineExecutionTimeInMillis=took, TotalExecutionTimeInMillis=took
    )
    if run.output:
        execution["ResultConfiguration"] = {"OutputLocation": run.output}
    return json.dumps(answer)


def _get_query_results(self: Any) -> str:
    run = _runs.get(self._get_param("QueryExecutionId"))
    if run is None:
        return str(_moto["get_results"](self))
    if run.state != "SUCCEEDED":
        from moto.athena.exceptions import QueryStillRunning

        raise QueryStillRunning(run.state)
    first = int(self._get_param("NextToken") or 0)
    most = min(int(self._get_param("MaxResults") or RESULTS_PAGE), RESULTS_PAGE)
    header: list[str | None] = [name for name, _ in run.columns]
    rows = [header, *run.rows][first : first + most]
    info = [
        {"CatalogName": "hive", "Name": name, "Label": name, "Type": kind, "Precision": 0, "Scale": 0}
        for name, kind in run.columns
    ]
    answer: dict[str, Any] = {
        "UpdateCount": 0,
        "ResultSet": {
            "Rows": [{"Data": [{} if v is None else {"VarCharValue": v} for v in row]} for row in rows],
            "ResultSetMetadata": {"ColumnInfo": info},
        },
    }
    if first + most < len(run.rows) + 1:
        answer["NextToken"] = str(first + most)
    return json.dumps(answer)


def work_group_of(account: str, region: str, execution_id: str) -> str | None:
    """The workgroup a query ran in (what IAM authorises its later calls on)."""
    from moto.athena.models import athena_backends

    execution = athena_backends[account][region].executions.get(execution_id)
    group = getattr(execution, "workgroup", None)
    return str(group.name) if group is not None else None


def _run(run: _Run, query: _Query) -> None:
    try:
        _answer(run, query)
    except Exception as exc:
        # Every failure is the query's FAILED state, with its reason, as on Athena.
        log.info("Athena query failed: %s", exc)
        run.state, run.reason = "FAILED", (str(exc).splitlines() or [type(exc).__name__])[0][:1000]
    run.ended = time.time()


def _answer(run: _Run, query: _Query) -> None:
    import duckdb
    from sqlglot import exp

    tree = substitute(query.text, query.parameters)
    connection = duckdb.connect()
    try:
        scanned = 0
        for table in tree.find_all(exp.Table):
            if table.name and not table.db:
                # Unqualified: in the execution's database, as Athena reads it.
                table.set("db", exp.to_identifier(query.database))
        for database, name in {(t.db, t.name) for t in tree.find_all(exp.Table) if t.name}:
            files = table_files(query.account, query.region, database, name)
            if files is None:
                continue
            _create_view(connection, database, name, files)
            scanned += _scanned_bytes(connection, files, tree, (database, name))
        run.scanned = scanned
        if query.cutoff and scanned > query.cutoff:
            run.state = "CANCELLED"
            run.reason = (
                f"Query exhausted the bytes scanned limit of its workgroup: it would scan {scanned} bytes, "
                f"the limit is {query.cutoff}."
            )
            return
        with _transpiling:
            statement = tree.sql(dialect="duckdb")
        found = connection.execute(statement)
        described = found.description or []
        run.columns = [
            (str(column[0]), _DUCKDB_TYPES.get(str(column[1]).split("(")[0].upper(), "varchar"))
            for column in described
        ]
        run.rows = [[_text(value) for value in row] for row in found.fetchall()]
    finally:
        connection.close()
    if run.output:
        _write_output(query.account, run)
    run.state = "SUCCEEDED"


def table_files(account: str, region: str, database: str, name: str) -> TableFiles | None:
    """The Glue table's objects in the embedded S3, each as a file on disk (None: no such table)."""
    from moto.glue.models import glue_backends
    from moto.s3.models import s3_backends

    try:
        table = glue_backends[account][region].get_table(database.lower(), name.lower()).as_dict()
    except Exception:
        return None  # not a Glue table: left to DuckDB, which names it if it is unknown
    descriptor = table.get("StorageDescriptor") or {}
    columns = [(str(c["Name"]).lower(), str(c["Type"]).lower()) for c in descriptor.get("Columns", [])]
    keys = [str(k["Name"]).lower() for k in table.get("PartitionKeys") or []]
    # Names go into the view's statement: only those Glue and Athena take.
    if not all(_NAME.fullmatch(column) for column in [name, database, *keys, *(c for c, _ in columns)]):
        raise ValueError(f"{database}.{name}: names must be letters, digits and underscores.")
    location = str(descriptor.get("Location") or "")
    bucket_name, _, prefix = location.removeprefix("s3://").partition("/")
    files = []
    bucket = s3_backends[account]["aws"].buckets.get(bucket_name)
    if bucket is not None:
        for key_name in list(bucket.keys.keys()):
            if not key_name.startswith(prefix) or key_name.endswith("/"):
                continue
            stored = bucket.keys.get(key_name)
            if stored is None:
                continue
            values = dict(_PARTITION.findall(key_name[len(prefix) :]))
            files.append((_file_of(stored), values, int(stored.size)))
    return TableFiles(columns, keys, files)


def _file_of(stored: Any) -> Path:
    """The object's body as a file: its durable body file where the stack keeps one, else a copy
    (kept for later queries while the object is unchanged: a stack run with --no-persist)."""
    from local_stack.s3.state import body_path

    path = body_path(stored)
    if path is not None and path.is_file():
        return path
    with _copies_lock:
        copy = _copies.get((id(stored), stored.etag))
        if copy is None or not copy.is_file():
            copy = Path(_copies_folder()) / f"{len(_copies)}.parquet"
            copy.write_bytes(stored.value)
            _copies[(id(stored), stored.etag)] = copy
    return copy


# Copies of objects that have no body file, by object and ETag, in a folder removed at exit.
_copies: dict[tuple[int, str], Path] = {}
_copies_lock = threading.Lock()


@functools.cache
def _copies_folder() -> str:
    folder = tempfile.mkdtemp(prefix="athena-objects-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _create_view(connection: Any, database: str, name: str, files: TableFiles) -> None:
    """``database.name`` as a DuckDB view: the union of each partition's files with its values as
    columns, or no rows with the table's columns when it has no file."""
    quoted = f'"{database}"."{name}"'
    connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{database}"')
    by_partition: dict[tuple[str, ...], list[str]] = {}
    for path, values, _ in files.files:
        by_partition.setdefault(tuple(values.get(key, "") for key in files.partition_keys), []).append(
            str(path)
        )
    names = [column for column, _ in files.columns]
    selected = ", ".join(f'"{column}"' for column in names)
    parts = []
    for partition, paths in by_partition.items():
        constants = "".join(
            f', {_literal(value)} AS "{key}"'
            for key, value in zip(files.partition_keys, partition, strict=True)
        )
        listed = "[" + ", ".join(_literal(path) for path in paths) + "]"
        # Names checked (table_files), values quoted (_literal).
        parts.append(f"SELECT {selected}{constants} FROM read_parquet({listed}, union_by_name = true)")  # noqa: S608
    if not parts:
        typed = ", ".join(
            f'CAST(NULL AS {_duckdb_type(kind)}) AS "{column}"' for column, kind in files.columns
        )
        constants = "".join(f', CAST(NULL AS VARCHAR) AS "{key}"' for key in files.partition_keys)
        parts.append(f"SELECT {typed}{constants} WHERE false")
    connection.execute(f"CREATE VIEW {quoted} AS " + " UNION ALL ".join(parts))


def _scanned_bytes(connection: Any, files: TableFiles, tree: Any, table: tuple[str, str]) -> int:
    """The compressed bytes of the named columns' chunks in the partitions the query keeps, less
    the row groups whose statistics rule out every value the query asks of a column (= or IN a
    literal): Athena skips those with Parquet's min/max statistics ("Top 10 performance tuning
    tips for Amazon Athena", AWS Big Data Blog: columnar formats, predicate pushdown)."""
    from sqlglot import exp

    named = {column.name.lower() for column in tree.find_all(exp.Column)}
    # SELECT * reads every column; count(*) only the files' row counts.
    if any(not isinstance(star.parent, exp.Count) for star in tree.find_all(exp.Star)):
        named |= {c for c, _ in files.columns}
    kept = [str(path) for path, values, _ in files.files if _partition_kept(tree, values)]
    if not kept:
        return 0
    asked = _asked_values(tree, table, {column for column, _ in files.columns})
    listed = "[" + ", ".join(_literal(path) for path in kept) + "]"
    # The paths are quoted (_literal).
    metadata = (
        "SELECT file_name, row_group_id, lower(path_in_schema), total_compressed_size, "  # noqa: S608
        f"stats_min_value, stats_max_value FROM parquet_metadata({listed})"
    )
    groups: dict[tuple[str, int], list[tuple[str, int, str | None, str | None]]] = {}
    for path, group, column, size, low, high in connection.execute(metadata).fetchall():
        groups.setdefault((path, group), []).append((column, int(size), low, high))
    total = 0
    for chunks in groups.values():
        ruled_out = any(
            column in asked
            and low is not None
            and high is not None
            and not any(low <= value <= high for value in asked[column])
            for column, _, low, high in chunks
        )
        if not ruled_out:
            total += sum(size for column, size, _, _ in chunks if column in named)
    return total


def _asked_values(tree: Any, table: tuple[str, str], columns: set[str]) -> dict[str, set[str]]:
    """column -> the values every read of ``table`` (database, name) limits it to: its SELECTs'
    WHERE conditions ``column = literal`` and ``column IN (literals)``, joined by AND only. A
    column some read of the table does not limit is not in the answer."""
    from sqlglot import exp

    reads = [
        select
        for select in tree.find_all(exp.Select)
        if isinstance(source := select.args.get("from_"), exp.From)
        and isinstance(source.this, exp.Table)
        and (source.this.db, source.this.name) == table
    ]
    asked: dict[str, set[str]] = {}
    for number, select in enumerate(reads):
        limits: dict[str, set[str]] = {}
        where = select.args.get("where")
        for condition in _conjuncts(where.this) if where is not None else []:
            column = condition.this if isinstance(condition, (exp.EQ, exp.In)) else None
            if not isinstance(column, exp.Column) or column.name.lower() not in columns:
                continue
            literals = [condition.expression] if isinstance(condition, exp.EQ) else condition.expressions
            if literals and all(isinstance(value, exp.Literal) and value.is_string for value in literals):
                values = {value.name for value in literals}
                name = column.name.lower()
                limits[name] = limits[name] & values if name in limits else values
        # Every read must limit a column for its row groups to be skipped.
        asked = limits if number == 0 else {c: asked[c] | limits[c] for c in asked.keys() & limits.keys()}
    return asked


def _conjuncts(condition: Any) -> list[Any]:
    from sqlglot import exp

    if isinstance(condition, exp.Paren):
        return _conjuncts(condition.this)
    if isinstance(condition, exp.And):
        return _conjuncts(condition.this) + _conjuncts(condition.expression)
    return [condition]


def _partition_kept(tree: Any, values: dict[str, str]) -> bool:
    """Whether the query's bounds on partition columns (=, BETWEEN, >=, <=, >, < with literals)
    keep a partition with these values: the pruning Athena does with partition projection."""
    from sqlglot import exp

    for condition in tree.find_all(exp.Between, exp.EQ, exp.GTE, exp.LTE, exp.GT, exp.LT):
        column = condition.this if isinstance(condition.this, exp.Column) else None
        if column is None or column.name.lower() not in values:
            continue
        value = values[column.name.lower()]
        if isinstance(condition, exp.Between):
            low, high = condition.args.get("low"), condition.args.get("high")
            if (
                isinstance(low, exp.Literal)
                and isinstance(high, exp.Literal)
                and not low.name <= value <= high.name
            ):
                return False
            continue
        other = condition.expression
        if not isinstance(other, exp.Literal):
            continue
        checks = {
            exp.EQ: value == other.name,
            exp.GTE: value >= other.name,
            exp.LTE: value <= other.name,
            exp.GT: value > other.name,
            exp.LT: value < other.name,
        }
        if not checks[type(condition)]:
            return False
    return True


def _write_output(account: str, run: _Run) -> None:
    """The answer as Athena writes it: CSV with a header, every value quoted, at the output location."""
    from moto.s3.models import s3_backends

    bucket, _, key = run.output.removeprefix("s3://").partition("/")
    text = io.StringIO()
    writer = csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow([name for name, _ in run.columns])
    writer.writerows([["" if value is None else value for value in row] for row in run.rows])
    s3_backends[account]["aws"].put_object(bucket, key, text.getvalue().encode())


def _text(value: Any) -> str | None:
    """A value as GetQueryResults gives it: text (Trino's spelling of booleans and times)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "isoformat") and hasattr(value, "hour"):
        return value.isoformat(sep=" ", timespec="milliseconds")
    return str(value)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _duckdb_type(kind: str) -> str:
    return {
        "string": "VARCHAR",
        "int": "INTEGER",
        "bigint": "BIGINT",
        "boolean": "BOOLEAN",
        "timestamp": "TIMESTAMP",
        "double": "DOUBLE",
        "date": "DATE",
    }.get(kind, "VARCHAR")
