"""Changes in bulk: ``POST /links/batch`` disables, enables, deletes or sets the fields of every
link a selector matches (a list of codes, a bulk job, a tag); ``GET /links/batch/{batch_id}`` tells
how far it got and what happened to each code."""

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from shortener.access.model import Role
from shortener.jobs.model import JOB_ID_TEXT
from shortener.links.model import MAX_TITLE_LENGTH, TAG_PATTERN, ExpiresAt, MaxClicks, Tags
from shortener.request_model import RequestModel

BatchAction = Literal["disable", "enable", "delete", "set"]
BatchSelector = Literal["codes", "job_id", "tag"]
# "failed": it stalled (its work crashed again and again); the codes it reached keep their outcome.
BatchStatus = Literal["running", "done", "failed"]
# What happened to one code: changed; already so (nothing written); or why not.
BatchOutcomeWord = Literal["changed", "unchanged", "not_found", "gone", "conflict", "invalid"]
FAILED_OUTCOMES = frozenset({"not_found", "gone", "conflict", "invalid"})
BATCH_ID_TEXT = JOB_ID_TEXT
# Codes one request may list: the batch item holds them, 5,000 of at most 64 characters stay
# under DynamoDB's 400 KB item limit.
MAX_BATCH_CODES = 5_000
# Outcomes one GET /links/batch/{batch_id} answers at most; next_cursor continues.
BATCH_OUTCOMES_PAGE = 1_000

BatchCode = Annotated[str, Field(min_length=1, max_length=64)]


class BatchSet(RequestModel):
    """The fields ``set`` changes, validated as ``PATCH /links/{code}`` validates them (null
    removes a limit)."""

    expires_at: ExpiresAt | None = None
    max_clicks: MaxClicks | None = None
    tags: Tags | None = None
    title: str | None = Field(default=None, max_length=MAX_TITLE_LENGTH)

    @model_validator(mode="after")
    def _sets_something(self) -> "BatchSet":
        if not self.model_fields_set:
            raise ValueError("send at least one of expires_at, max_clicks, tags, title")
        return self


class BatchRequest(RequestModel):
    """``POST /links/batch``: an action and exactly one selector (``codes``, ``job_id`` or
    ``tag``); ``set`` with the fields to change, only (and always) for the action "set"."""

    action: BatchAction
    codes: Annotated[list[BatchCode], Field(min_length=1, max_length=MAX_BATCH_CODES)] | None = None
    job_id: str | None = Field(default=None, pattern=JOB_ID_TEXT)
    tag: str | None = Field(default=None, pattern=TAG_PATTERN)
    set: BatchSet | None = None

    @model_validator(mode="after")
    def _one_selector(self) -> "BatchRequest":
        chosen = [name for name in ("codes", "job_id", "tag") if getattr(self, name) is not None]
        if len(chosen) != 1:
            raise ValueError("send exactly one of codes, job_id, tag")
        if (self.action == "set") != (self.set is not None):
            raise ValueError('send "set" with the action "set", and only with it')
        return self

    @property
    def selector(self) -> BatchSelector:
        return "codes" if self.codes is not None else "job_id" if self.job_id is not None else "tag"


class Batch(BaseModel):
    """A batch as the jobs table keeps it: what it changes, for whom, and how far it got.
    ``cursor`` is where its next page of links starts (what it means depends on the selector);
    ``pages`` how many pages are counted (a page is counted once, however often it is run)."""

    batch_id: str
    owner: str
    role: Role
    action: BatchAction
    selector: BatchSelector
    codes: list[str] = []
    job_id: str | None = None
    tag: str | None = None
    # The "set" body as sent (checked when the batch was accepted).
    set_fields: dict[str, Any] = {}
    # The stage whose cache of GET /{code} takedowns refresh (None: it has no cache).
    stage_base_url: str | None = None
    status: BatchStatus = "running"
    total: int = 0
    changed: int = 0
    unchanged: int = 0
    failed: int = 0
    pages: int = 0
    cursor: str | None = None
    created_at: datetime
    finished_at: datetime | None = None
    error: str = ""


class BatchOutcome(BaseModel):
    """One code's outcome (``message`` says why for a failed one)."""

    code: str
    outcome: BatchOutcomeWord
    message: str | None = None


@dataclass(slots=True)
class BatchPage:
    """One page of a batch: each code's outcome, and where the next page starts (None: the last)."""

    outcomes: list[BatchOutcome]
    next_cursor: str | None


class BatchAccepted(BaseModel):
    """``POST /links/batch``'s answer: where to follow the batch."""

    batch_id: str
    status_url: str


class BatchView(BaseModel):
    """``GET /links/batch/{batch_id}``: the counts, and a page of outcomes in the order the links
    were reached (``next_cursor`` fetches the next page of outcomes)."""

    batch_id: str
    action: BatchAction
    status: BatchStatus
    total: int
    changed: int
    unchanged: int
    failed: int
    created_at: datetime
    finished_at: datetime | None
    error: str | None = None
    outcomes: list[BatchOutcome]
    next_cursor: str | None = None


class BatchStatusQuery(BaseModel):
    """``GET /links/batch/{batch_id}``'s query."""

    cursor: str | None = Field(
        default=None, description="The next_cursor of the answer before: more outcomes"
    )
