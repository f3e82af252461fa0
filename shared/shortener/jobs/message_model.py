"""Bulk rows on their way through SQS: the rows of a file, the message that carries a chunk of
them, and what processing one message did."""

from pydantic import BaseModel, ConfigDict, Field

from shortener.exceptions import ShortenerError
from shortener.links.domains import JobDomains


class BulkRow(BaseModel):
    """One data row of an upload: the URL as written and the custom code wanted for it ('' if none).

    ``row`` is its number in the file (data lines from 1, blank lines counted; 0 when rows are
    simply numbered in order). ``problem`` says why a line could not be read (it is then a row
    error ``invalid_row``, and ``url`` shows what the line holds)."""

    model_config = ConfigDict(frozen=True)

    url: str
    code: str = ""
    row: int = Field(default=0, ge=0)
    problem: str = ""
    # The row's link attribute cells by column name (``ATTRIBUTE_COLUMNS``), only those not empty.
    attributes: dict[str, str] | None = None


class ChunkMessage(BaseModel):
    """One SQS message: consecutive rows of one job. ``rows`` are compact ``[url, code]`` pairs so
    that many rows fit in a message; row numbers are ``first_row``, ``first_row + 1``, ... unless
    ``numbers`` lists them."""

    model_config = ConfigDict(extra="ignore")

    job_id: str = Field(min_length=1)
    chunk: int = Field(ge=0)
    first_row: int = Field(ge=1)
    rows: list[tuple[str, str]] = Field(min_length=1)
    # Link attribute cells of the rows that have any, by the row's index in ``rows``; and the
    # job's defaults for every row (both as text, read by ``shortener.links.model.attributes_of``).
    attributes: dict[int, dict[str, str]] = {}
    defaults: dict[str, str] = {}
    # The host the upload arrived on (and the shortener's other hosts): links back to the
    # shortener itself are refused.
    own_host: str | None = None
    own_hosts: list[str] = []
    # The uploader's owner id: every link of the job is theirs.
    owner: str | None = None
    # The stack's domains and the uploader's, as the job was submitted (None: from before rows
    # had domains; every row then belongs to the default domain).
    domains: JobDomains | None = None
    # The row numbers, when they do not simply follow ``first_row`` (blank lines in the file).
    numbers: list[int] = []
    # Rows whose line could not be read (by index in ``rows``): why, for their ``invalid_row`` error.
    problems: dict[int, str] = {}
    # Set when the rows may not be processed (``"quota_exceeded: <why>"``): each is that row error.
    refused: str = ""
    # Set by the restarter when it sends a dead-lettered message back for one last attempt
    # (shortener.jobs.dead_letters): if that attempt fails too, the loop fails the rows with
    # that attempt's reason instead of letting SQS deliver the message again.
    last_attempt: bool = False

    def row_number(self, index: int) -> int:
        """The file's row number of ``rows[index]``."""
        return self.numbers[index] if self.numbers else self.first_row + index

    def bulk_rows(self) -> list[BulkRow]:
        return [
            BulkRow(
                url=url,
                code=code,
                row=self.row_number(index),
                problem=self.problems.get(index, ""),
                attributes=self.attributes.get(index),
            )
            for index, (url, code) in enumerate(self.rows)
        ]


class ChunkResult(BaseModel):
    """What processing one message did: ``counted`` is False when a redelivery found it done."""

    succeeded: int
    failed: int
    counted: bool


class QueueUnavailableError(ShortenerError):
    """The rows could not be queued; the job was withdrawn and the upload can be retried."""

    status_code = 503
    error = "queue_unavailable"
