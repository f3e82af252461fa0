"""QR code requests: which image of a short URL, and how large."""

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from shortener.request_model import RequestModel

QrFormat = Literal["png", "svg"]
# Pixels across the whole image, quiet zone included (a 33-module code at 512 gets 12 px a module).
DEFAULT_QR_SIZE = 512
MIN_QR_SIZE = 64
MAX_QR_SIZE = 4096
# Codes one POST /links/qr draws: their ZIP is answered at once (each image a GetItem and a few
# milliseconds of drawing; 500 PNGs of 512 px are about 0.35 MB, drawn in about 4 s on a loaded
# 2-core machine: far below the 6 MB of a Lambda answer and API Gateway's 29 s).
# A larger set has its job's labels (GET /jobs/{job_id}/qr) or several requests.
# https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html (6 MB a synchronous answer)
MAX_QR_ZIP_CODES = 500


class QrRequest(BaseModel):
    """``GET /links/{code}/qr?format=png|svg&size=``: the image format and its width in pixels
    (at most; the code is drawn with whole pixels per module)."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    format: QrFormat = "png"
    size: int = Field(default=DEFAULT_QR_SIZE, ge=MIN_QR_SIZE, le=MAX_QR_SIZE)


class QrLabelsQuery(BaseModel):
    """``GET /jobs/{job_id}/qr?format=png|svg``: the image format of the labels in the ZIP."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    format: QrFormat = "png"


class QrZipRequest(RequestModel):
    """``POST /links/qr``: the caller's links whose QR codes the ZIP holds (one image a code, a
    code listed twice drawn once), and their image format."""

    codes: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=64)]],
        Field(min_length=1, max_length=MAX_QR_ZIP_CODES),
    ]
    format: QrFormat = "png"


class LabelsFileLink(BaseModel):
    """``GET /jobs/{job_id}/qr`` once built: where the labels ZIP is, for how long."""

    labels_url: str
    expires_at: datetime


class LabelsBuilding(BaseModel):
    """``GET /jobs/{job_id}/qr`` meanwhile: the labels are being drawn (ask again after Retry-After)."""

    status: Literal["building"]
    message: str


class LabelsBuild(BaseModel):
    """Where a job's labels ZIP build stands, saved between invocations (shortener.jobs.labels):
    its multipart upload, the parts uploaded, the next outcome to draw (``skip`` outcomes into
    chunk ``chunk``), the archive's bytes and entries so far, its central directory spilled as
    ``segments`` objects (``directory_bytes`` in all), and the ``carry`` bytes written after the
    last part, kept in an object until the next part."""

    upload_id: str = Field(min_length=1)
    parts: int = Field(default=0, ge=0)
    chunk: int = Field(default=0, ge=0)
    skip: int = Field(default=0, ge=0)
    offset: int = Field(default=0, ge=0)
    entries: int = Field(default=0, ge=0)
    directory_bytes: int = Field(default=0, ge=0)
    segments: int = Field(default=0, ge=0)
    carry: int = Field(default=0, ge=0)
