"""Bulk jobs: the uploaded CSV's rows, the SQS messages that carry them, and their outcomes."""

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shortener.models.exceptions import ShortenerError

JobStatus = Literal["queued", "running", "done"]


class BulkRow(BaseModel):
    """One data row of an upload: the URL as written and the custom code wanted for it ('' if none)."""

    model_config = ConfigDict(frozen=True)

    url: str
    code: str = ""


class Job(BaseModel):
    """A bulk upload and its progress. ``succeeded`` and ``failed`` count processed rows, each once."""

    job_id: str
    total: int = Field(ge=0)
    chunks: int = Field(ge=0)
    succeeded: int = 0
    failed: int = 0
    created_at: datetime
    # When the job last made progress (a chunk counted); None until the first one.
    updated_at: datetime | None = None
    # The uploader's owner id; None for jobs from before owners existed (admins only).
    owner: str | None = None

    @property
    def processed(self) -> int:
        return self.succeeded + self.failed

    @property
    def status(self) -> JobStatus:
        if self.processed >= self.total:
            return "done"
        return "running" if self.processed else "queued"


class JobStatusView(BaseModel):
    """What ``GET /jobs/{job_id}`` answers."""

    job_id: str
    status: JobStatus
    total: int
    succeeded: int
    failed: int
    processed: int
    created_at: datetime
    # When the job last made progress: a chunk of rows counted (its creation until the first).
    # A job that is not done and has not moved for minutes is stuck; see its results and the DLQ.
    updated_at: datetime
    results_url: str
    owner: str | None = None


class JobList(BaseModel):
    """A page of ``GET /jobs``: newest first; ``next_cursor`` fetches the next page."""

    jobs: list[JobStatusView]
    next_cursor: str | None = None


class JobAccepted(BaseModel):
    """What ``POST /bulk`` answers."""

    job_id: str
    total: int
    status_url: str


class ChunkMessage(BaseModel):
    """One SQS message: consecutive rows of one job. ``rows`` are compact ``[url, code]`` pairs so
    that many rows fit in a message; row numbers are ``first_row``, ``first_row + 1``, ..."""

    model_config = ConfigDict(extra="ignore")

    job_id: str = Field(min_length=1)
    chunk: int = Field(ge=0)
    first_row: int = Field(ge=1)
    rows: list[tuple[str, str]] = Field(min_length=1)
    # The host the upload arrived on (and the shortener's other hosts): links back to the
    # shortener itself are refused.
    own_host: str | None = None
    own_hosts: list[str] = []
    # The uploader's owner id: every link of the job is theirs.
    owner: str | None = None

    def bulk_rows(self) -> list[BulkRow]:
        return [BulkRow(url=url, code=code) for url, code in self.rows]


class RowOutcome(BaseModel):
    """The outcome of one row: a code, or an error (``"<word>: <sentence>"``)."""

    model_config = ConfigDict(frozen=True)

    row: int
    url: str
    code: str = ""
    error: str = ""

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


class ChunkResult(BaseModel):
    """What processing one message did: ``counted`` is False when a redelivery found it done."""

    succeeded: int
    failed: int
    counted: bool


class QueueUnavailableError(ShortenerError):
    """The rows could not be queued; the job was withdrawn and the upload can be retried."""

    status_code = 503
    error = "queue_unavailable"
