"""QR code requests: which image of a short URL, and how large."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

QrFormat = Literal["png", "svg"]
# Pixels across the whole image, quiet zone included (a 33-module code at 512 gets 12 px a module).
DEFAULT_QR_SIZE = 512
MIN_QR_SIZE = 64
MAX_QR_SIZE = 4096


class QrRequest(BaseModel):
    """``GET /links/{code}/qr?format=png|svg&size=``: the image format and its width in pixels
    (at most; the code is drawn with whole pixels per module)."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    format: QrFormat = "png"
    size: int = Field(default=DEFAULT_QR_SIZE, ge=MIN_QR_SIZE, le=MAX_QR_SIZE)
