"""Click events: three questions asked of 10,000,000 generated events in the local store, with the
time each takes (DuckDB, locally) and the bytes each scans (what Athena would bill), then the cost
per million clicks, all in, at 10,000 links, where no counters are kept (the default) and where
they are (their writes measured as the clicks benchmark measures them).

    python -m benchmarks click_events [--events 10000000] [--links 10000] [--days 30]

The events are written as Firehose would have written them: Parquet (Snappy) with the Glue table's
columns, one object per day under events/day=<day>/, put into the local stack's embedded S3. The
questions go through the local Athena (boto3, as the API function asks them): a link's breakdowns
over 30 days (every top list in one GROUPING SETS scan), an owner's top 100 links over 30 days, an
export of one day of an owner's clicks. Each is asked twice: the first time includes the local
Athena's copy of the objects (a --no-persist stack keeps bodies in memory), the second is the query.
"""

import argparse
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.bulk import LocalStack
from benchmarks.clicks import (
    COLLECTOR_MEMORY_GB,
    DYNAMODB_PER_MILLION_WRITE_UNITS,
    LAMBDA_ARM_PER_GB_SECOND,
    LAMBDA_PER_MILLION_REQUESTS,
    LOGS_INGESTION_PER_GB,
    LOGS_STORAGE_PER_GB_MONTH,
    measure_collector,
    measure_writes,
)

OWNERS = 10
# The jobs worker's memory (template.yaml, FilesFunction).
WORKER_MEMORY_GB = 1.0
# Prices (us-east-1): Firehose Direct PUT ingestion per GB, each record rounded up to 5 KB, and its
# format conversion per GB ingested; S3 Standard per GB-month; Athena per TB scanned, at least
# 10 MB a query ("Amazon Data Firehose pricing", "Amazon S3 pricing", "Amazon Athena pricing").
FIREHOSE_PER_GB = 0.029
FIREHOSE_CONVERSION_PER_GB = 0.018
S3_PER_GB_MONTH = 0.023
ATHENA_PER_TB = 5.0
ATHENA_MINIMUM_BYTES = 10 * 1024**2
RETENTION_MONTHS = 400 / 30.4
# One day of events: deterministic pseudo-random values from each event's number (hash); a third as
# many visitors as clicks; a link's owner is its number modulo OWNERS.
DAY_OF_EVENTS = """COPY (SELECT
    CAST(TIMESTAMP '{start}'
        + to_microseconds(CAST((i - {first}) * 86400000000 // {per_day} AS BIGINT)) AS TIMESTAMP) AS time,
    'r' || i AS request_id,
    'c' || (hash(i) % {links}) AS code,
    'owner-' || ((hash(i) % {links}) % {owners}) AS owner,
    CAST(NULL AS VARCHAR) AS job_id,
    CAST(NULL AS INTEGER) AS "row",
    'default' AS destination,
    301 AS status,
    ['US', 'DE', 'FR', 'GB', 'IN', 'BR', 'unknown'][1 + CAST(hash(i * 3) % 7 AS BIGINT)] AS country,
    ['mobile', 'desktop', 'tablet', 'bot'][1 + CAST(hash(i * 5) % 4 AS BIGINT)] AS device,
    ['Chrome', 'Mobile Safari', 'Firefox', 'Edge', 'Samsung Internet']
        [1 + CAST(hash(i * 7) % 5 AS BIGINT)] AS browser,
    ['iOS', 'Android', 'Windows', 'Mac OS X', 'Linux'][1 + CAST(hash(i * 11) % 5 AS BIGINT)] AS os,
    CASE WHEN hash(i * 13) % 3 = 0 THEN NULL
        ELSE ['t.co', 'l.facebook.com', 'news.example.com'][1 + CAST(hash(i * 17) % 3 AS BIGINT)]
        END AS referrer,
    hash(i * 19) % 10 = 0 AS bot,
    substr(md5(CAST(i % ({per_day} // 3) + {first} AS VARCHAR)), 1, 16) AS visitor
  FROM range({first}, {first} + {per_day}) AS t(i))
  TO '{path}' (FORMAT parquet, COMPRESSION snappy)"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000, help="events generated")
    parser.add_argument("--links", type=int, default=10_000, help="links they fall on")
    parser.add_argument("--days", type=int, default=30, help="days they span (ending today)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-click-events-") as folder:
        stack = LocalStack(Path(folder), 1.0, {}, log_level="WARNING")
        try:
            stored = store_events(stack, Path(folder), options)
            figures = ask(stack, options)
        finally:
            stack.stop()
    figures.update(cost_per_million(stored, figures))
    width = max(len(name) for name in figures)
    for name, value in figures.items():
        print(f"{name:<{width}}  {value:,.4f}" if isinstance(value, float) else f"{name:<{width}}  {value:,}")
    print(f"cost per million clicks: ${figures['cost per million clicks in all, 10,000 links, $']:.2f}")


def store_events(stack: LocalStack, folder: Path, options: argparse.Namespace) -> dict[str, float]:
    """Generate the events, a Parquet file per day, and put each under its day in the bucket."""
    import duckdb

    s3, bucket = stack.client("s3"), str(stack.info["resources"]["ClickEventsBucket"])
    today = datetime.now(UTC).date()
    per_day = options.events // options.days
    total_bytes, started = 0, time.monotonic()
    connection = duckdb.connect()
    for offset in range(options.days):
        day = today - timedelta(days=options.days - 1 - offset)
        path = folder / f"{day}.parquet"
        first = offset * per_day
        start = datetime(day.year, day.month, day.day, tzinfo=UTC).strftime("%Y-%m-%d %H:%M:%S")
        connection.execute(
            DAY_OF_EVENTS.format(
                start=start, first=first, per_day=per_day, links=options.links, owners=OWNERS, path=path
            )
        )
        total_bytes += path.stat().st_size
        s3.put_object(Bucket=bucket, Key=f"events/day={day}/bench-{day}.parquet", Body=path.read_bytes())
        path.unlink()
    events = per_day * options.days
    print(
        f"stored {events:,} events in {options.days} daily objects, {total_bytes / 1e6:,.1f} MB, "
        f"in {time.monotonic() - started:.0f} s"
    )
    compacted = compact(stack, [today - timedelta(days=back) for back in range(options.days - 1, -1, -1)])
    return {
        "events": float(events),
        "days": float(options.days),
        "parquet bytes": float(total_bytes),
        **compacted,
    }


def compact(stack: LocalStack, days: list[date]) -> dict[str, float]:
    """Each day compacted by the jobs worker, as its hourly run leaves them (sorted by owner and
    link, in small row groups; today's up to the last hour): the seconds a day took, the bytes after."""
    import json

    function = str(stack.info["resources"]["FilesFunction"])
    lambda_client = stack.client("lambda")
    took = []
    for day in days:
        started = time.monotonic()
        answer = lambda_client.invoke(
            FunctionName=function, Payload=json.dumps({"task": "click_compaction", "day": day.isoformat()})
        )
        [done] = json.loads(answer["Payload"].read())["click_compaction"]
        assert done["outcome"] == "compacted", done
        took.append(time.monotonic() - started)
    s3, bucket = stack.client("s3"), str(stack.info["resources"]["ClickEventsBucket"])
    size = sum(
        item["Size"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="events/")
        for item in page.get("Contents", [])
    )
    print(f"compacted {len(days)} days in {sum(took):.0f} s")
    return {
        "compaction of a day (the jobs worker, local): seconds, median": sorted(took)[len(took) // 2],
        "parquet bytes after compaction": float(size),
    }


def ask(stack: LocalStack, options: argparse.Namespace) -> dict[str, Any]:
    """Each question twice, with its time and the bytes it scans."""
    from shortener.clicks.event_queries import (
        EventSelection,
        answers_query,
        breakdown_query,
        codes_series_query,
        export_query,
        groups_query,
        lifetime_query,
        series_query,
    )
    from shortener.clicks.event_store import ClickEventStore

    resources = stack.info["resources"]
    store = ClickEventStore(
        str(resources["ClickEventsWorkGroup"]),
        str(resources["ClickEventsDatabase"]),
        str(resources["ClickEventsTable"]),
        client=stack.client("athena"),
        answers=str(resources["ClickAnswersTable"]),
        timeout=600,
    )
    now = datetime.now(UTC)
    month = EventSelection(owner="owner-3", begin=now - timedelta(days=options.days), end=now)
    link = EventSelection(owner="owner-3", begin=month.begin, end=now, codes=("c13",))
    yesterday = datetime(now.year, now.month, now.day, tzinfo=UTC) - timedelta(days=1)
    day = EventSelection(owner="owner-3", begin=yesterday, end=yesterday + timedelta(days=1))
    twenty = EventSelection(
        owner="owner-3", begin=month.begin, end=now, codes=tuple(f"c{3 + 10 * n}" for n in range(20))
    )
    assert store.answers is not None
    questions = {
        # What a link's report asks where no counters are kept (shortener.clicks.reports).
        "a link's series, 30 days": series_query(link, store.table),
        "a link's breakdowns, 30 days": breakdown_query(
            link, store.table, ["country", "device", "browser", "os", "referrer", "destination"]
        ),
        "a link's all-time totals": lifetime_query(link, store.table),
        "a link's answers by rule, 30 days": answers_query("c13", month.begin, now, store.answers),
        "the daily clicks of 20 links, 30 days": codes_series_query(twenty, store.table),
        "an owner's top 100 links, 30 days": groups_query(month, store.table, "code", 100),
        "an export of one day of an owner's clicks": export_query(day, store.table),
    }
    figures: dict[str, Any] = {}
    for name, query in questions.items():
        for attempt in ("first", "again"):
            started = time.perf_counter()
            execution_id = store.start(query)
            store.wait(execution_id)
            took = time.perf_counter() - started
            execution = store.client.get_query_execution(QueryExecutionId=execution_id)["QueryExecution"]
            scanned = int(execution["Statistics"]["DataScannedInBytes"])
            figures[f"{name}: seconds ({attempt})"] = took
        rows = len(store.rows(query))
        figures[f"{name}: rows answered"] = rows
        figures[f"{name}: MB scanned"] = scanned / 1e6
        figures[f"{name}: Athena $ per query"] = max(scanned, ATHENA_MINIMUM_BYTES) / 1e12 * ATHENA_PER_TB
    figures.update(export_files(stack, store.outcome(execution_id).output))
    return figures


def export_files(stack: LocalStack, answer: str) -> dict[str, float]:
    """The last export's answer (Athena's CSV) rewritten as each format's file, as the jobs worker
    writes it (shortener.clicks.export_files): seconds and MB of each."""
    from shortener.clicks.export_files import FORMATS, write_export_file

    figures: dict[str, float] = {}
    bucket, _, key = answer.removeprefix("s3://").partition("/")
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "answer.csv"
        source.write_bytes(stack.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
        figures["an export's answer (Athena's CSV): MB"] = source.stat().st_size / 1e6
        for file_format in FORMATS:
            target = Path(folder) / f"export.{file_format}"
            started = time.perf_counter()
            rows = write_export_file(source, target, file_format)
            took = time.perf_counter() - started
            figures[f"an export's file as {file_format}: seconds"] = took
            figures[f"an export's file as {file_format}: MB"] = target.stat().st_size / 1e6
            figures[f"an export's file as {file_format}: rows per second"] = rows / took
    return figures


def sample_event() -> Any:
    """A click event as a browser's click on a bulk job's link makes it."""
    from shortener.clicks.events import ClickEvent

    return ClickEvent(
        time=datetime.now(UTC),
        request_id="a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
        code="xY3kP9q",
        owner="campaigns-team",
        job_id="4f1c2d3e4b5a69788796a5b4c3d2e1f0",
        destination="default",
        status=301,
        country="DE",
        device="mobile",
        browser="Mobile Safari",
        os="iOS",
        referrer="l.instagram.com",
        bot=False,
        visitor="9f86d081884c7d65",
    )


# What the events are asked per million clicks (an assumption, to price the queries): a link's
# report opened once per 1,000 clicks; Athena bills each query at least 10 MB.
REPORTS_PER_MILLION_CLICKS = 1000
REPORT_QUERIES = (
    "a link's series, 30 days",
    "a link's breakdowns, 30 days",
    "a link's all-time totals",
    "a link's answers by rule, 30 days",
)
# Without counters the collector writes one marker a batch (a PutItem, 1 write unit); the access
# log delivers about 1,000 clicks a batch at this rate.
CLICKS_PER_BATCH = 1000


def cost_per_million(stored: dict[str, float], figures: dict[str, Any]) -> dict[str, float]:
    """Dollars per million clicks: the access log, the collector, its batch markers (or the
    counters, where kept), Firehose (ingestion and conversion), S3 storage of the Parquet for the
    retention, and Athena for the reports asked."""
    line_bytes = 330
    gigabytes = 1_000_000 * line_bytes / 1e9
    logs = gigabytes * LOGS_INGESTION_PER_GB + gigabytes / 6 * LOGS_STORAGE_PER_GB_MONTH
    collector = measure_collector(1000)
    seconds = 1_000_000 / collector["collector clicks per second per invocation (classify + add up)"]
    lambda_cost = (
        seconds * COLLECTOR_MEMORY_GB * LAMBDA_ARM_PER_GB_SECOND + LAMBDA_PER_MILLION_REQUESTS / 1000
    )
    markers = 1_000_000 / CLICKS_PER_BATCH / 1e6 * DYNAMODB_PER_MILLION_WRITE_UNITS
    writes = measure_writes(1000)["DynamoDB write units per 1,000 clicks, 10,000 links"]
    counters = writes * 1000 / 1e6 * DYNAMODB_PER_MILLION_WRITE_UNITS
    # The collector packs a batch's events into records of up to 1,000 KiB: the 5 KB rounding of
    # each record is then a rounding error.
    event_bytes = len(sample_event().record())
    firehose_gb = 1_000_000 * event_bytes / 1024**3
    firehose = firehose_gb * (FIREHOSE_PER_GB + FIREHOSE_CONVERSION_PER_GB)
    # Kept compacted (a day's raw objects live a day).
    parquet_per_million = stored["parquet bytes after compaction"] / stored["events"] * 1_000_000
    s3 = parquet_per_million / 1e9 * S3_PER_GB_MONTH * RETENTION_MONTHS
    # The jobs worker (1 GB) compacts each day once a day, and today every hour as it grows (about
    # 12 days' worth of rewriting a day): its seconds for a day's clicks.
    per_day = stored["events"] / (stored["days"] or 1)
    compaction = (
        stored["compaction of a day (the jobs worker, local): seconds, median"]
        * (1 + 12)
        * 1_000_000
        / per_day
        * WORKER_MEMORY_GB
        * LAMBDA_ARM_PER_GB_SECOND
    )
    report = sum(float(figures[f"{name}: Athena $ per query"]) for name in REPORT_QUERIES)
    athena = REPORTS_PER_MILLION_CLICKS * report
    events_only = logs + lambda_cost + markers + firehose + s3 + compaction + athena
    return {
        "Parquet bytes per click, as delivered": stored["parquet bytes"] / stored["events"],
        "Parquet bytes per click, compacted": stored["parquet bytes after compaction"] / stored["events"],
        "cost per million clicks: access log (ingestion + a month kept), $": logs,
        "cost per million clicks: collector Lambda, $": lambda_cost,
        "cost per million clicks: DynamoDB batch markers (no counters kept), $": markers,
        "click event bytes sent to Firehose": float(event_bytes),
        "cost per million clicks: Firehose (events packed into records), $": firehose,
        "cost per million clicks: S3, compacted Parquet kept 400 days, $": s3,
        "cost per million clicks: compaction (the jobs worker), $": compaction,
        "a link's report (4 queries): Athena $": report,
        f"cost per million clicks: Athena, {REPORTS_PER_MILLION_CLICKS:,} reports, $": athena,
        "cost per million clicks: DynamoDB counters if kept (KeepClickCounters), 10,000 links, $": counters,
        "cost per million clicks in all with counters kept, 10,000 links, $": events_only
        - markers
        + counters,
        "cost per million clicks in all, 10,000 links, $": events_only,
    }


if __name__ == "__main__":
    main()
