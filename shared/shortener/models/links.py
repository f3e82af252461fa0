"""Links and the requests and answers about them."""

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class ShortenRequest(BaseModel):
    """``POST /``: a URL and, optionally, the custom code wanted for it."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    url: str = Field(min_length=1, max_length=32768)
    code: str | None = Field(default=None, max_length=256)


class Link(BaseModel):
    """One code and the URL it points to. Written once, never overwritten."""

    code: str
    url: str
    created_at: datetime
    is_custom: bool = False
    owner: str | None = None


class ShortenResult(BaseModel):
    """What ``POST /`` answers; ``created`` says 201 (new link) or 200 (existing link)."""

    code: str
    short_url: str
    url: str
    created: bool = Field(default=True, exclude=True)
