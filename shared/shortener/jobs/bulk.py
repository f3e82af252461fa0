"""Bulk shortening, one module per concern:

- ``upload``: reading files as people have them, as a stream with its position;
- ``packing``: rows into SQS messages;
- ``submit``: accepting a job (a body upload queued at once, or a direct upload to S3);
- ``split``: reading an uploaded file into the queue, checkpointed across invocations;
- ``processing``: processing one message into links and row outcomes, idempotently;
- ``results``: the results CSV, in pages and as one file written once;
- ``metering`` and ``cost``: what a job's work counted, and what it costs.

The names other layers use are importable from the package itself."""

from shortener.jobs.chunk_outcomes import expiry
from shortener.jobs.csv_reader import CsvRows, UploadedFile, detect_format, parse_csv, read_upload
from shortener.jobs.packing import MessagePacker, pack_rows
from shortener.jobs.processing import ChunkLinks, ChunkProcessor, ChunkRecords
from shortener.jobs.results import (
    RESULTS_HEADER,
    ResultsPage,
    ResultsWriter,
    ending_line,
    neutralise,
    results_csv,
    results_key,
    results_page,
)
from shortener.jobs.split import SplitOptions, Splitter
from shortener.jobs.submit import (
    BulkOptions,
    JobOrigin,
    JobRecords,
    MessageSender,
    create_upload_job,
    is_job_id,
    job_for,
    submit_job,
)

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
    "UploadedFile",
    "create_upload_job",
    "detect_format",
    "ending_line",
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
