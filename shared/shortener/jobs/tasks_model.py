"""What the files function is invoked with: S3 event notifications of uploaded files, a split to
continue, or a job whose results file is to be written."""

import re
from typing import Literal
from urllib.parse import unquote_plus

from pydantic import BaseModel, ConfigDict, Field

from shortener.jobs.model import JOB_ID_TEXT

UPLOADS_PREFIX = "uploads/"
_UPLOAD_KEY = re.compile(r"uploads/([0-9a-f]{32})\.csv")


def upload_key(job_id: str) -> str:
    """Where a job's uploaded file goes in the bulk bucket."""
    return f"{UPLOADS_PREFIX}{job_id}.csv"


class SplitRequest(BaseModel):
    """Read an upload's file into queued rows: from an S3 event, or an invocation continuing the
    split of the one before (``owner``: the split's lease holder, which it hands over)."""

    job_id: str = Field(pattern=JOB_ID_TEXT)
    bucket: str = Field(min_length=1)
    key: str = Field(min_length=1)
    etag: str = Field(min_length=1)
    owner: str | None = None


class LabelsRequest(BaseModel):
    """A job whose QR labels archive is to be built, in which image format (``owner``: the
    build's lease holder, handed to the invocation that continues it)."""

    job_id: str = Field(pattern=JOB_ID_TEXT)
    format: Literal["png", "svg"] = "png"
    owner: str | None = None


class FilesTask(BaseModel):
    """What the files function is invoked with besides S3 events: a split to continue, or a job
    whose results file is to be written."""

    model_config = ConfigDict(extra="ignore")

    split: SplitRequest | None = None
    write_results: str | None = Field(default=None, pattern=JOB_ID_TEXT)
    # A job whose click report file is to be built (docs/clicks.md).
    write_click_report: str | None = Field(default=None, pattern=JOB_ID_TEXT)
    write_labels: LabelsRequest | None = None
    # A batch of link changes to run or go on with (shortener.jobs.batches).
    run_batch: str | None = Field(default=None, pattern=JOB_ID_TEXT)


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
