"""Bulk jobs as the jobs table stores them: the job item (its source file, how it is read, its
progress, results and usage) and a chunk's recorded ids and outcomes. The messages that carry
rows are in ``message_model``, what the API shows and accepts in ``view_model``."""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shortener.links.domains import JobDomains, ShortUrls

JobStatus = Literal["queued", "running", "done"]


# A job id: 32 lowercase hex digits (a uuid4 without dashes).
JOB_ID_TEXT = r"^[0-9a-f]{32}$"


# Finer than the status: where a job is on its way (an upload's file first has to arrive and be read).
JobPhase = Literal["awaiting_upload", "splitting", "processing", "writing_results", "done"]


# "body": the CSV came in the request (POST /bulk); "upload": straight to S3 (POST /bulk/uploads).
JobKind = Literal["body", "upload"]


class CsvFormat(BaseModel):
    """How a bulk file is laid out, found from its first line: kept on an upload job so that
    reading can continue mid-file in a later invocation."""

    model_config = ConfigDict(frozen=True)

    separator: str = Field(min_length=1, max_length=1)
    has_header: bool
    url_column: int = Field(ge=0)
    code_column: int | None = Field(default=None, ge=0)
    # The encoding of a line that is not UTF-8 (see ``shortener.jobs.csv_reader``).
    fallback: str = "cp1252"
    # The columns of link attributes (expires_at, max_clicks, title, tags) the header names.
    attribute_columns: dict[str, int] = {}
    # The header's names of the columns that are read for nothing (a typo such as "titel"), shown
    # with the job so that it is noticed; at most MAX_IGNORED_COLUMNS, each cut short.
    ignored_columns: tuple[str, ...] = ()


class ReadPosition(BaseModel):
    """A row boundary in a bulk file: its byte offset, and the data rows (those with an outcome)
    and lines before it; ``numbered`` counts the data lines before it, blank lines included (the
    last row number given; None where only ``rows`` was kept), ``fallback_lines`` the lines that
    were decoded with the fallback encoding."""

    model_config = ConfigDict(frozen=True)

    offset: int = Field(default=0, ge=0)
    rows: int = Field(default=0, ge=0)
    lines: int = Field(default=0, ge=0)
    numbered: int | None = Field(default=None, ge=0)
    fallback_lines: int = Field(default=0, ge=0)

    @property
    def last_row_number(self) -> int:
        return self.rows if self.numbered is None else self.numbered


class FileEncoding(BaseModel):
    """How a job's file was decoded: each line as ``encoding`` (UTF-8), and ``fallback_lines`` of
    them, which were not, with ``fallback``."""

    model_config = ConfigDict(frozen=True)

    encoding: str = "utf-8"
    fallback: str = "cp1252"
    fallback_lines: int = Field(default=0, ge=0)


class UploadSource(BaseModel):
    """An upload job's file: its S3 key (in the job's bucket), its name and declared size, and its
    ETag once the first read pinned it (a file replaced mid-way is refused, not mixed)."""

    key: str
    file_name: str
    size: int = Field(ge=0)
    etag: str | None = None
    # The job's defaults for its rows' link attributes (text, as validated with the request).
    defaults: dict[str, str] = {}


class SplitState(BaseModel):
    """How far reading an upload's file got (checkpointed after its rows were queued), the format
    found at its start, and which invocation holds the split (a lease until ``lease_until``)."""

    position: ReadPosition = Field(default_factory=ReadPosition)
    file_format: CsvFormat | None = None
    owner: str | None = None
    lease_until: int | None = None  # epoch seconds


class ResultsFile(BaseModel):
    """A finished job's results CSV in S3, written once."""

    key: str
    size: int = Field(ge=0)
    rows: int = Field(ge=0)
    written_at: datetime


class JobError(BaseModel):
    """Why a job's file could not be read (further): the rows before it were still processed."""

    error: str
    message: str


class JobUsage(BaseModel):
    """The AWS requests a job's own work made, counted as they were made, and what they wrote.

    DynamoDB write units are worked out from the size of each item written (1 per started KB);
    read units count one per read request. What several jobs share (a loop's receive and delete
    calls, heartbeats, re-invokes) is not in any one job's figure."""

    model_config = ConfigDict(frozen=True)

    dynamodb_requests: int = 0
    sqs_requests: int = 0
    lambda_requests: int = 0
    s3_write_requests: int = 0
    s3_read_requests: int = 0
    write_units: float = 0
    read_units: float = 0
    lambda_gb_seconds: float = 0
    # Requests of the job's work that DynamoDB throttled (each attempt): the table was its bottleneck.
    throttled_requests: int = 0

    def __add__(self, other: "JobUsage") -> "JobUsage":
        return JobUsage.model_validate(
            {name: getattr(self, name) + getattr(other, name) for name in JobUsage.model_fields}
        )

    @property
    def requests(self) -> int:
        return (
            self.dynamodb_requests
            + self.sqs_requests
            + self.lambda_requests
            + self.s3_write_requests
            + self.s3_read_requests
        )


class Job(BaseModel):
    """A bulk upload and its progress. ``succeeded`` and ``failed`` count processed rows, each once.

    ``total`` and ``chunks`` are final once ``split_done``: at once for a body upload, while its
    file is read for a direct upload (they count the rows and messages queued so far)."""

    job_id: str
    total: int = Field(ge=0)
    chunks: int = Field(ge=0)
    succeeded: int = 0
    failed: int = 0
    created_at: datetime
    kind: JobKind = "body"
    split_done: bool = True
    # The S3 bucket of the job's files (its upload, its results); "" where there is none.
    bucket: str = ""
    # The base of short URLs and the host the job came in on, for the results file and the rows.
    base_url: str = ""
    # The base of the API's own links (its status URL in the job-ended event); "" for jobs from
    # before it was kept apart from base_url, which then stands for it.
    api_url: str = ""
    own_host: str | None = None
    # The API's other hosts (its execute-api host, custom domain) as the request that created the
    # job saw them: a direct upload's rows are checked against them as a body upload's are.
    own_hosts: list[str] = []
    # The uploader's owner id (the API key's owner); None for jobs from before owners existed
    # (admins only).
    owner: str | None = None
    # The stack's domains and those the uploader may use, as the job was submitted: its rows are
    # checked against them, and its short URLs made on them (None: jobs from before rows had
    # domains, every row on the default domain).
    domains: JobDomains | None = None
    # The name of a file sent in the body (a multipart upload's); a direct upload's is upload's.
    file_name: str | None = None
    upload: UploadSource | None = None
    split: SplitState | None = None
    results: ResultsFile | None = None
    # A writer of the results file holds it until then (epoch seconds).
    results_lease_until: int | None = None
    error: JobError | None = None
    # How its file was decoded (None for jobs from before it was recorded).
    encoding: FileEncoding | None = None
    # Its file's columns read for nothing (``CsvFormat.ignored_columns``).
    ignored_columns: list[str] = []
    # When the job last made progress (a chunk counted); None until the first one.
    updated_at: datetime | None = None
    usage: JobUsage = Field(default_factory=JobUsage)
    # An SNS topic (ARN) that gets the job-ended message too.
    notify_topic: str | None = None

    @property
    def processed(self) -> int:
        return self.succeeded + self.failed

    def short_urls(self, default_base: str = "") -> ShortUrls:
        """Where its rows' short links answer: the default domain's at ``default_base`` (else the
        job's own ``base_url``), each other domain's where it answered when the job was submitted."""
        base = default_base or self.base_url
        return self.domains.short_urls(base) if self.domains is not None else ShortUrls(base)

    @property
    def complete(self) -> bool:
        """Every row that will ever be queued has its outcome."""
        return self.split_done and self.processed >= self.total

    @property
    def ended_early(self) -> bool:
        """The file was not read to its end (``error`` says why): its status may still be
        ``done``, every row read having its outcome, but rows after that point have none."""
        return self.error is not None

    @property
    def file_arrived(self) -> bool:
        """An upload job's file is in S3 (its first read pinned the ETag)."""
        return self.upload is not None and self.upload.etag is not None

    @property
    def status(self) -> JobStatus:
        """``done`` once everything the job produces can be fetched: every row's outcome, and its
        results file where it has one (a job with a bucket), not merely every row processed."""
        if self.complete and (self.results is not None or not self.bucket):
            return "done"
        return "running" if self.processed or self.file_arrived else "queued"

    @property
    def phase(self) -> JobPhase:
        if not self.split_done:
            return "splitting" if self.file_arrived else "awaiting_upload"
        if self.processed < self.total:
            return "processing"
        return "done" if self.results is not None else "writing_results"


@dataclass(frozen=True, slots=True)
class RowOutcome:
    """The outcome of one row: a code, or an error (``"<word>: <sentence>"``). A plain value, not a
    validated model: one is made for every row a loop processes and every row a results file
    reads, from values already checked (a pydantic model cost 2 µs each, make bench ARGS=cpu)."""

    row: int
    url: str
    code: str = ""
    error: str = ""
    # The domain its link answers on (None: the default domain).
    domain: str | None = None

    @property
    def succeeded(self) -> bool:
        return not self.error


class ChunkIds(BaseModel):
    """The counter ids a chunk's generated rows use, fixed by its first delivery, and that delivery's
    time (so a redelivery rewrites byte-identical links). ``done`` with the counts when an earlier
    delivery already recorded the chunk's outcomes."""

    ids: list[int]
    created_at: datetime
    done: bool = False
    succeeded: int = 0
    failed: int = 0


class RecordedChunk(BaseModel):
    """The outcome counts a chunk item holds once recorded: those just written, or those of the
    delivery (or the dead-letter settlement) that recorded the chunk first."""

    model_config = ConfigDict(frozen=True)

    succeeded: int
    failed: int
    dead_letter: bool = False
