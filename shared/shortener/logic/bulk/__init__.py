"""Bulk shortening, one module per concern:

- ``upload``: reading files as people have them, as a stream with its position;
- ``packing``: rows into SQS messages;
- ``submit``: accepting a job (a body upload queued at once, or a direct upload to S3);
- ``split``: reading an uploaded file into the queue, checkpointed across invocations;
- ``processing``: processing one message into links and row outcomes, idempotently;
- ``results``: the results CSV, in pages and as one file written once;
- ``metering`` and ``cost``: what a job's work counted, and what it costs.

The names other layers use are importable from the package itself."""

from shortener.logic.bulk.packing import MessagePacker, pack_rows
from shortener.logic.bulk.processing import ChunkLinks, ChunkProcessor, ChunkRecords
from shortener.logic.bulk.results import (
    RESULTS_HEADER,
    ResultsPage,
    ResultsWriter,
    neutralise,
    results_csv,
    results_key,
    results_page,
)
from shortener.logic.bulk.split import SplitOptions, Splitter
from shortener.logic.bulk.submit import (
    BulkOptions,
    JobOrigin,
    JobRecords,
    MessageSender,
    create_upload_job,
    is_job_id,
    job_for,
    submit_job,
)
from shortener.logic.bulk.upload import CsvRows, detect_format, parse_csv, read_upload
from shortener.logic.chunk_outcomes import expiry

__all__ = [
    "RESULTS_HEADER",
    "BulkOptions",
    "ChunkLinks",
    "ChunkProcessor",
    "ChunkRecords",
    "CsvRows",
    "JobOrigin",
    "JobRecords",
    "MessagePacker",
    "MessageSender",
    "ResultsPage",
    "ResultsWriter",
    "SplitOptions",
    "Splitter",
    "create_upload_job",
    "detect_format",
    "expiry",
    "is_job_id",
    "job_for",
    "neutralise",
    "pack_rows",
    "parse_csv",
    "read_upload",
    "results_csv",
    "results_key",
    "results_page",
    "submit_job",
]
