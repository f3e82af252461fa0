"""What the jobs worker is invoked with: S3 event notifications of uploaded files, or one typed
task (``WorkerTask``, told apart by its ``task`` field): a split to continue, a results file, a
click report, a QR labels archive, a batch of link changes, a click export's file, an erasure.
``worker_tasks`` reads an invocation's event into the tasks it carries, including the keyed shape
invocations had before tasks were typed (``{"write_results": <job id>}`` ...): Lambda keeps an
asynchronous event for up to six hours, so an event sent before an update may arrive after it."""

import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Annotated, Any, Literal
from urllib.parse import unquote_plus

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from shortener.clicks.export_files import ExportFileRequest, ExportFormat
from shortener.jobs.model import JOB_ID_TEXT

UPLOADS_PREFIX = "uploads/"
_UPLOAD_KEY = re.compile(r"uploads/([0-9a-f]{32})\.csv")


def upload_key(job_id: str) -> str:
    """Where a job's uploaded file goes in the bulk bucket."""
    return f"{UPLOADS_PREFIX}{job_id}.csv"


class SplitRequest(BaseModel):
    """Read an upload's file into queued rows: from an S3 event, or an invocation continuing the
    split of the one before (``owner``: the split's lease holder, which it hands over)."""

    task: Literal["split"] = "split"
    job_id: str = Field(pattern=JOB_ID_TEXT)
    bucket: str = Field(min_length=1)
    key: str = Field(min_length=1)
    etag: str = Field(min_length=1)
    owner: str | None = None


class LabelsRequest(BaseModel):
    """A job whose QR labels archive is to be built, in which image format (``owner``: the
    build's lease holder, handed to the invocation that continues it)."""

    task: Literal["labels"] = "labels"
    job_id: str = Field(pattern=JOB_ID_TEXT)
    format: Literal["png", "svg"] = "png"
    owner: str | None = None


class ResultsTask(BaseModel):
    """A complete job whose results file is to be written."""

    task: Literal["results"] = "results"
    job_id: str = Field(pattern=JOB_ID_TEXT)


class ClickReportTask(BaseModel):
    """A job whose click report file is to be built (docs/clicks.md)."""

    task: Literal["click_report"] = "click_report"
    job_id: str = Field(pattern=JOB_ID_TEXT)


class ClickExportTask(BaseModel):
    """An export of click events whose file is to be written from its query's answer
    (shortener.clicks.export_files), recorded on the owner's export ``export``."""

    task: Literal["click_export"] = "click_export"
    owner: str = Field(min_length=1)
    export: str = Field(pattern=r"[0-9a-f]{32}")
    execution_id: str = Field(min_length=1, max_length=128)
    answer: str = Field(pattern=r"s3://[^/]+/query-results/[^/]+\.csv")
    bucket: str = Field(min_length=3)
    key: str = Field(pattern=r"query-results/exports/[^/]+")
    format: ExportFormat

    @classmethod
    def of(cls, request: ExportFileRequest) -> "ClickExportTask":
        return cls(
            owner=request.owner,
            export=request.export,
            execution_id=request.execution_id,
            answer=request.answer,
            bucket=request.bucket,
            key=request.key,
            format=request.file_format,
        )

    def request(self) -> ExportFileRequest:
        return ExportFileRequest(
            owner=self.owner,
            export=self.export,
            execution_id=self.execution_id,
            answer=self.answer,
            bucket=self.bucket,
            key=self.key,
            file_format=self.format,
        )


class ClickErasureTask(BaseModel):
    """An erasure of an owner's click events (shortener.clicks.erasure): of ``codes`` (none: all
    their links), of clicks made up to ``before``; ``after``: the last event object done by the
    invocation before."""

    task: Literal["click_erasure"] = "click_erasure"
    owner: str = Field(min_length=1)
    erasure: str = Field(pattern=r"[0-9a-f]{32}")
    codes: list[str] = Field(default_factory=list, max_length=100)
    before: datetime
    after: str | None = None


class ClickCompactionTask(BaseModel):
    """The hourly compaction of the settled days' click events (shortener.clicks.compaction), or
    of one ``day`` (an operator's: a day older than the hourly run looks at)."""

    task: Literal["click_compaction"] = "click_compaction"
    day: date | None = None


class BatchTask(BaseModel):
    """A batch of link changes to run or go on with (shortener.jobs.batches)."""

    task: Literal["batch"] = "batch"
    batch_id: str = Field(pattern=JOB_ID_TEXT)


WorkerTask = Annotated[
    SplitRequest
    | ResultsTask
    | ClickReportTask
    | LabelsRequest
    | BatchTask
    | ClickExportTask
    | ClickErasureTask
    | ClickCompactionTask,
    Field(discriminator="task"),
]
_WORKER_TASK: TypeAdapter[WorkerTask] = TypeAdapter(WorkerTask)


class _KeyedTasks(BaseModel):
    """The shape of an invocation before tasks were typed: one key per kind of work."""

    model_config = ConfigDict(extra="ignore")

    split: SplitRequest | None = None
    write_click_report: str | None = Field(default=None, pattern=JOB_ID_TEXT)
    write_results: str | None = Field(default=None, pattern=JOB_ID_TEXT)
    run_batch: str | None = Field(default=None, pattern=JOB_ID_TEXT)
    write_labels: LabelsRequest | None = None

    def tasks(self) -> list[WorkerTask]:
        # In the order the worker used to run them.
        found: list[WorkerTask | None] = [
            self.split,
            ClickReportTask(job_id=self.write_click_report) if self.write_click_report else None,
            ResultsTask(job_id=self.write_results) if self.write_results else None,
            BatchTask(batch_id=self.run_batch) if self.run_batch else None,
            self.write_labels,
        ]
        return [task for task in found if task is not None]


class S3Object(BaseModel):
    model_config = ConfigDict(extra="ignore")

    key: str
    size: int = 0
    eTag: str = ""


class S3Bucket(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str


class S3Entity(BaseModel):
    model_config = ConfigDict(extra="ignore")

    bucket: S3Bucket
    object: S3Object


class S3EventRecord(BaseModel):
    """One record of an S3 event notification (the shape of ``sam local generate-event s3 put``)."""

    model_config = ConfigDict(extra="ignore")

    eventSource: str = "aws:s3"
    eventName: str
    s3: S3Entity

    def split_request(self) -> SplitRequest | None:
        """The split an uploaded file asks for: an object created under ``uploads/<job id>.csv``
        (keys arrive URL-encoded); None for any other record."""
        key = unquote_plus(self.s3.object.key)
        match = _UPLOAD_KEY.fullmatch(key)
        if not self.eventName.startswith("ObjectCreated:") or match is None or not self.s3.object.eTag:
            return None
        return SplitRequest(job_id=match[1], bucket=self.s3.bucket.name, key=key, etag=self.s3.object.eTag)


class S3Event(BaseModel):
    """An S3 event notification as Lambda receives it."""

    model_config = ConfigDict(extra="ignore")

    Records: list[S3EventRecord] = Field(min_length=1)


def worker_tasks(event: Mapping[str, Any]) -> list[WorkerTask]:
    """The tasks an invocation of the jobs worker carries: the splits an S3 event's uploads ask
    for, one typed task, or the tasks of the keyed shape of before (ValidationError for a task
    that does not parse)."""
    if "Records" in event:
        records = S3Event.model_validate(event).Records
        return [request for record in records if (request := record.split_request()) is not None]
    if "task" in event:
        return [_WORKER_TASK.validate_python(event)]
    return _KeyedTasks.model_validate(event).tasks()
