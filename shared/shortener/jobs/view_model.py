"""Bulk jobs as the API shows and accepts them: a job's status, a page of jobs, an accepted
upload, and a direct upload's request and answer."""

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shortener.jobs.model import JobError, JobPhase, JobStatus
from shortener.links.domains import DomainName
from shortener.links.model import MAX_TITLE_LENGTH, ExpiresAt, MaxClicks, Tags
from shortener.request_model import RequestModel


class UploadProgress(BaseModel):
    """An upload job's file: its name and size, and how much of it has been read into rows."""

    file_name: str
    size: int
    bytes_read: int


class CostLine(BaseModel):
    """What a job's work cost: counted requests and units, and a dollar estimate."""

    requests: dict[str, int]
    write_units: float
    read_units: float
    lambda_gb_seconds: float
    usd: float
    prices: str


class JobStatusView(BaseModel):
    """What ``GET /jobs/{job_id}`` answers."""

    job_id: str
    status: JobStatus
    phase: JobPhase
    total: int
    succeeded: int
    failed: int
    processed: int
    created_at: datetime
    # When the job last made progress: a chunk of rows counted (its creation until the first).
    # A job that is not done and has not moved for minutes is stuck; see its results and the DLQ.
    updated_at: datetime
    # Always the API's results address; while not ready, and for large jobs, it says why or
    # redirects to the file.
    results_url: str
    results_ready: bool
    # A presigned link to the results file (valid for ``results_file_expires_at``), once written.
    results_file_url: str | None = None
    results_file_expires_at: datetime | None = None
    upload: UploadProgress | None = None
    # The uploaded file's name, when the upload gave one (a direct upload, a multipart form).
    file_name: str | None = None
    error: JobError | None = None
    # True when the file was not read to its end: ``error`` says why (the status stays "done").
    ended_early: bool = False
    # Each line is decoded as UTF-8; ``fallback_encoding`` names the encoding the
    # ``fallback_lines`` that were not UTF-8 were decoded with (None when every line was UTF-8).
    encoding: str | None = None
    fallback_encoding: str | None = None
    fallback_lines: int = 0
    # The header's columns that were read for nothing (not the URL, the code or a link attribute,
    # e.g. a misspelt "titel"): their names, at most 20, in the file's order.
    ignored_columns: list[str] = []
    cost: CostLine
    owner: str | None = None
    # "table" when DynamoDB throttled the job's writes: the table's throughput, not the loops,
    # bounded how fast it went (docs/capacity.md).
    throttled_by: Literal["table"] | None = None


class JobList(BaseModel):
    """A page of ``GET /jobs``: newest first; ``next_cursor`` fetches the next page."""

    jobs: list[JobStatusView]
    next_cursor: str | None = None


class JobAccepted(BaseModel):
    """What ``POST /bulk`` answers."""

    job_id: str
    total: int
    status_url: str


class DirectUploadRequest(RequestModel):
    """``POST /bulk/uploads``: the file about to be uploaded straight to S3, and the defaults of
    its rows' title, tags (a list, or one text with commas), limits and domain."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    file_name: str = Field(default="upload.csv", min_length=1, max_length=255, alias="filename")
    size: int = Field(gt=0)
    content_type: str | None = Field(default=None, max_length=255)
    # An SNS topic of this stack's account and region that also gets the job-ended message
    # (where the stack allows it: its AllowJobTopics parameter).
    notify_topic: str | None = Field(default=None, max_length=256)
    # The rows' defaults, read again as ``LinkAttributes`` (as POST /bulk's query parameters).
    title: str | None = Field(default=None, max_length=MAX_TITLE_LENGTH)
    tags: Tags | str | None = None
    expires_at: ExpiresAt | None = None
    max_clicks: MaxClicks | None = None
    domain: DomainName | None = Field(
        default=None,
        description="The rows' default domain (GET /domains lists them; a row's domain cell wins).",
        examples=["go.example.com"],
    )


class PresignedUpload(BaseModel):
    """How to send the file: one HTTP request with this method, URL and headers, before ``expires_at``."""

    method: Literal["PUT"] = "PUT"
    url: str
    headers: dict[str, str]
    expires_at: datetime


class UploadAccepted(BaseModel):
    """What ``POST /bulk/uploads`` answers."""

    job_id: str
    status_url: str
    upload: PresignedUpload
    max_bytes: int
