"""Links and the requests and answers about them."""

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

# A deleted link stays as a tombstone: its code answers 410 Gone and is never given out again.
LinkStatus = Literal["active", "disabled", "deleted"]
MAX_TAGS = 10
TAG_PATTERN = r"^[\w.-]{1,40}$"
MAX_TITLE_LENGTH = 200


def _distinct(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tags))


Tags = Annotated[
    list[Annotated[str, Field(pattern=TAG_PATTERN)]], Field(max_length=MAX_TAGS), AfterValidator(_distinct)
]


class ShortenRequest(BaseModel):
    """``POST /``: a URL and, optionally, the custom code wanted for it, a title and tags."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    url: str = Field(min_length=1, max_length=32768, examples=["https://example.com/spring-sale"])
    code: str | None = Field(default=None, max_length=256)
    title: str = Field(default="", max_length=MAX_TITLE_LENGTH)
    tags: Tags = []


class Link(BaseModel):
    """One code and the URL it points to. Never overwritten by another link; its owner may change
    its target, title and tags, disable it, or delete it (which leaves a tombstone)."""

    code: str
    url: str
    created_at: datetime
    is_custom: bool = False
    owner: str | None = None
    title: str = ""
    tags: tuple[str, ...] = ()
    status: LinkStatus = "active"
    updated_at: datetime | None = None
    job_id: str | None = None

    @property
    def active(self) -> bool:
        return self.status == "active"


class ShortenResult(BaseModel):
    """What ``POST /`` answers; ``created`` says 201 (new link) or 200 (existing link)."""

    code: str
    short_url: str
    url: str
    created: bool = Field(default=True, exclude=True)


class LinkView(BaseModel):
    """One link as ``GET /links`` and ``GET /links/{code}`` show it."""

    code: str
    short_url: str
    url: str
    title: str
    tags: list[str]
    status: LinkStatus
    created_at: datetime
    updated_at: datetime | None
    owner: str | None
    is_custom: bool
    job_id: str | None

    @classmethod
    def of(cls, link: Link, base_url: str) -> "LinkView":
        return cls(
            code=link.code,
            short_url=base_url + link.code,
            url=link.url,
            title=link.title,
            tags=list(link.tags),
            status=link.status,
            created_at=link.created_at,
            updated_at=link.updated_at,
            owner=link.owner,
            is_custom=link.is_custom,
            job_id=link.job_id,
        )


class LinkList(BaseModel):
    """A page of ``GET /links``: newest first; ``next_cursor`` fetches the next page."""

    links: list[LinkView]
    next_cursor: str | None = None


class LinkUpdate(BaseModel):
    """``PATCH /links/{code}``: the fields to change (at least one). An unknown field is an error,
    so a misspelt one is never silently ignored."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    url: str | None = Field(
        default=None, min_length=1, max_length=32768, examples=["https://example.com/summer"]
    )
    title: str | None = Field(default=None, max_length=MAX_TITLE_LENGTH)
    tags: Tags | None = None
    status: Literal["active", "disabled"] | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> "LinkUpdate":
        if not self.model_fields_set:
            raise ValueError("send at least one of url, title, tags, status")
        return self
