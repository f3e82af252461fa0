"""Links and the requests and answers about them."""

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    Field,
    StringConstraints,
    model_validator,
)

from shortener import clock
from shortener.links.domains import DomainName, ShortUrls
from shortener.links.passwords import hash_password
from shortener.links.rules_model import (
    RULE_FIELDS,
    UTM_COLUMNS,
    LinkRules,
    StoredRules,
    Utm,
    UtmView,
    Variant,
    VariantView,
    rules_view,
)
from shortener.request_model import RequestModel

# A deleted link stays as a tombstone: its code answers 410 Gone and is never given out again.
LinkStatus = Literal["active", "disabled", "deleted"]
MAX_TAGS = 10
TAG_PATTERN = r"^[\w.-]{1,40}$"
MAX_TITLE_LENGTH = 200
MAX_PREVIEW_DESCRIPTION_LENGTH = 1000


def _distinct(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tags))


Tags = Annotated[
    list[Annotated[str, Field(pattern=TAG_PATTERN)]], Field(max_length=MAX_TAGS), AfterValidator(_distinct)
]


def _iso_text(value: object) -> object:
    # Only text: a bare number would be read as seconds since the epoch, which nobody means here.
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 date and time with a zone, such as 2026-12-31T23:59:00Z")
    return value


def _whole_number(value: object) -> object:
    # JSON true is not a number of clicks (pydantic would read it as 1).
    if isinstance(value, bool):
        raise ValueError("must be a whole number")
    return value


def _in_future(moment: datetime) -> datetime:
    if moment <= clock.now():
        raise ValueError("must be in the future")
    # Stored and shown in UTC, whatever zone it was written in.
    return moment.astimezone(UTC)


# When a link stops redirecting: ISO 8601 with a zone ("2026-12-31T23:59:00+01:00", "...Z").
ExpiresAt = Annotated[AwareDatetime, BeforeValidator(_iso_text), AfterValidator(_in_future)]
# How many redirects a link answers before it expires.
MaxClicks = Annotated[int, BeforeValidator(_whole_number), Field(ge=1, le=1_000_000_000)]


def _https_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.hostname or any(character.isspace() for character in value):
        raise ValueError("must be an absolute https URL")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


# A password as typed: kept exactly (spaces included), never empty; stored only as a hash.
Password = Annotated[
    str, StringConstraints(strip_whitespace=False, min_length=1, max_length=128), AfterValidator(_not_blank)
]
PreviewTitle = Annotated[str, Field(min_length=1, max_length=MAX_TITLE_LENGTH)]
PreviewDescription = Annotated[str, Field(max_length=MAX_PREVIEW_DESCRIPTION_LENGTH)]
HttpsUrl = Annotated[str, Field(max_length=2048), AfterValidator(_https_url)]


class Preview(RequestModel):
    """What link-preview fetchers and social crawlers are shown instead of the redirect (Open
    Graph and Twitter card tags): a title, and optionally a description and an image (an absolute
    https URL)."""

    title: PreviewTitle
    description: PreviewDescription = ""
    image: HttpsUrl | None = None


class LinkPreview(BaseModel):
    """A link's preview as views show it."""

    title: str
    description: str = ""
    image: str | None = None


class LinkLimits(RequestModel):
    """When a link ends: at a time, after a number of clicks, or both (whichever comes first)."""

    expires_at: ExpiresAt | None = None
    max_clicks: MaxClicks | None = None


class LinkAttributes(LinkLimits, LinkRules):
    """A bulk row's title, tags, limits and rules, from the text of its cells (an empty cell: not
    given) over the job's defaults. ``tags`` is one text with the tags separated by commas.

    Its fields are a link's optional attributes: the bulk file's columns (ATTRIBUTE_COLUMNS), a
    job's defaults, and what every way of making a link copies onto it (``link_fields``) follow
    from them, so a new attribute is a field here, on ``ShortenRequest``, ``Link``, ``LinkView``
    and ``LinkUpdate`` (CONTRIBUTING.md, "Adding a link field")."""

    title: str = Field(default="", max_length=MAX_TITLE_LENGTH)
    tags: Tags = []
    password: Password | None = None
    preview_title: PreviewTitle | None = None
    preview_description: PreviewDescription | None = None
    preview_image: HttpsUrl | None = None
    # The domain the link answers on (any letter case); checked against the stack's domains and
    # the submitter's where the link is made (shortener.links.domains).
    domain: DomainName | None = None

    @model_validator(mode="before")
    @classmethod
    def _cells(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        cells = {
            name: value for name, value in data.items() if not (isinstance(value, str) and not value.strip())
        }
        if isinstance(tags := cells.get("tags"), str):
            cells["tags"] = [tag.strip() for tag in tags.split(",") if tag.strip()]
        return cells

    @model_validator(mode="after")
    def _titled_preview(self) -> "LinkAttributes":
        if self.preview_title is None and (self.preview_description or self.preview_image):
            raise ValueError("preview_title is needed with preview_description or preview_image")
        return self

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)

    @property
    def preview(self) -> Preview | None:
        """The preview its preview_* cells make (None without a preview_title)."""
        if self.preview_title is None:
            return None
        return Preview(
            title=self.preview_title, description=self.preview_description or "", image=self.preview_image
        )

    def as_cells(self) -> dict[str, str]:
        """The attributes given, as the text of bulk cells (a job's defaults travel so)."""
        cells: dict[str, str] = {}
        for name in LINK_ATTRIBUTES:
            value = getattr(self, name)
            if name not in self.model_fields_set:
                continue
            if isinstance(value, Utm):
                cells.update(value.tags())
            else:
                cells[name] = _cell_text(value)
        return {name: cells[name] for name in ATTRIBUTE_COLUMNS if cells.get(name)}


# A link's optional attributes, as every way of making a link copies them (``link_fields``).
LINK_ATTRIBUTES = tuple(LinkAttributes.model_fields)
# The optional columns of a bulk file that set a link's attributes (tags: comma-separated; geo
# DE=url;FR=url; variants url|weight;url|weight; utm as one column per tag).
ATTRIBUTE_COLUMNS = tuple(
    column for name in LINK_ATTRIBUTES for column in (UTM_COLUMNS if name == "utm" else (name,))
)
# The attributes that are one text each (title): the CLI's `update --<name>` options.
TEXT_ATTRIBUTES = tuple(
    name for name in LINK_ATTRIBUTES if LinkAttributes.model_fields[name].annotation is str
)


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict | list | tuple):
        return _collection_text(value)
    return str(value)


def _collection_text(value: dict | list | tuple) -> str:
    if isinstance(value, dict):
        return ";".join(f"{country}={url}" for country, url in value.items())
    if value and isinstance(value[0], Variant):
        return ";".join(f"{variant.url}|{variant.weight}" for variant in value)
    return ",".join(value)


def link_fields(source: BaseModel, *, scope: str | None = None) -> dict[str, object]:
    """The link attributes (LINK_ATTRIBUTES) ``source`` has (a request, a bulk row's attributes,
    an update), as ``Link``'s fields: lists as tuples; a password as its hash (shared by the rows
    of one ``scope``, a bulk job: shortener.links.passwords), the preview_* cells as ``preview``."""
    fields: dict[str, object] = {
        name: tuple(value) if isinstance(value, list) else value
        for name in LINK_ATTRIBUTES
        if name in type(source).model_fields and name in Link.model_fields
        for value in [getattr(source, name)]
    }
    if isinstance(password := getattr(source, "password", None), str):
        fields["password_hash"] = hash_password(password, scope)
    if isinstance(preview := getattr(source, "preview", None), Preview):
        fields["preview"] = preview
    return fields


def attributes_of(defaults: Mapping[str, str], cells: Mapping[str, str] | None) -> LinkAttributes | None:
    """A bulk row's attributes (None when neither the row nor the job sets any); ValidationError
    for a cell (or default) that is not valid."""
    if not defaults and not cells:
        return None
    merged = dict(defaults)
    merged.update((name, value) for name, value in (cells or {}).items() if value.strip())
    attributes = LinkAttributes.model_validate(merged)
    return attributes if attributes.given else None


_PREVIEW_DESCRIPTION = (
    "Shown to link-preview fetchers and social crawlers instead of the redirect. Precedence: "
    "password first (a crawler of a password link gets its preview if it has one, else the "
    "password page), then the preview for crawlers, then the link's destination."
)


class ShortenRequest(LinkLimits, LinkRules):
    """``POST /``: a URL and, optionally, the custom code wanted for it, a title, tags, the
    link's limits, its rules, a password and a preview. An unknown field is refused (422 naming
    it), never ignored."""

    url: str = Field(min_length=1, max_length=32768, examples=["https://example.com/spring-sale"])
    code: str | None = Field(default=None, max_length=256)
    title: str = Field(default="", max_length=MAX_TITLE_LENGTH)
    tags: Tags = []
    password: Password | None = Field(
        default=None, description="Asked for before redirecting (write-only: views say has_password)."
    )
    preview: Preview | None = Field(default=None, description=_PREVIEW_DESCRIPTION)
    domain: DomainName | None = Field(
        default=None,
        description="The domain the short link answers on (GET /domains lists them); default: the "
        "stack's default domain.",
        examples=["go.example.com"],
    )


class Link(StoredRules):
    """One code and the URL it points to (and its rules: shortener.links.rules_model). Never
    overwritten by another link; its owner may change its target, title, tags and rules, disable
    it, or delete it (which leaves a tombstone)."""

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
    # Its row in the job's file (a bulk link): what its click events and the export name.
    row: int | None = None
    expires_at: datetime | None = None
    max_clicks: int | None = None
    # Redirects answered while the link had a click limit (counted only then).
    clicks: int = 0
    # On a cached stage: every redirect the access log showed while the link had a click limit,
    # answers from the stage cache included (added by the click collector; 0 elsewhere).
    served: int = 0
    # The password's salted hash (shortener.links.passwords); the password itself is never kept.
    password_hash: str | None = None
    preview: Preview | None = None
    # The domain it answers on (shortener.links.domains); None: the stack's default domain.
    domain: str | None = None

    @property
    def active(self) -> bool:
        return self.status == "active"

    @property
    def click_limited(self) -> bool:
        return self.max_clicks is not None

    @property
    def one_of_its_own(self) -> bool:
        """Whether the link is never its URL's plain link (the one find-if-exists hands out): it
        has limits, rules, a password or a preview."""
        limited = self.expires_at is not None or self.max_clicks is not None
        # The plain links find-if-exists hands out are the default domain's.
        return limited or self.has_rules or self.per_visitor or self.domain is not None

    @property
    def clicks_left(self) -> int | None:
        return None if self.max_clicks is None else max(self.max_clicks - self.clicks, 0)

    @property
    def per_visitor(self) -> bool:
        """Whether its answer depends on the visitor (a password, a preview for crawlers): such a
        link is one of its own, never found by its URL, and its answers are never cached."""
        return self.password_hash is not None or self.preview is not None

    def expired(self, now: datetime) -> bool:
        """Whether the link is past its time or its last allowed click."""
        return (self.expires_at is not None and self.expires_at <= now) or self.clicks_left == 0


class ShortenResult(BaseModel):
    """What ``POST /`` answers; ``created`` says 201 (new link) or 200 (existing link)."""

    code: str
    short_url: str
    domain: str
    url: str
    created: bool = Field(default=True, exclude=True)


class LinkView(BaseModel):
    """One link as ``GET /links`` and ``GET /links/{code}`` show it."""

    code: str
    short_url: str
    domain: str
    url: str
    title: str
    tags: list[str]
    status: LinkStatus
    created_at: datetime
    updated_at: datetime | None
    owner: str | None
    is_custom: bool
    job_id: str | None
    expires_at: datetime | None
    max_clicks: int | None
    clicks_left: int | None
    expired: bool
    ios_url: str | None
    android_url: str | None
    geo: dict[str, str] | None
    variants: list[VariantView] | None
    utm: UtmView | None
    forward_query: bool
    has_password: bool = False
    preview: LinkPreview | None = None

    @classmethod
    def of(cls, link: Link, urls: ShortUrls) -> "LinkView":
        stored = {
            name: getattr(link, name)
            for name in cls.model_fields
            if name in Link.model_fields and name not in RULE_FIELDS and name != "domain"
        }
        return cls(
            **rules_view(link),
            short_url=urls.short_url(link.domain, link.code),
            domain=urls.name_of(link.domain),
            clicks_left=link.clicks_left,
            expired=link.expired(clock.now()),
            has_password=link.password_hash is not None,
            **(stored | {"preview": None if link.preview is None else LinkPreview(**dict(link.preview))}),
        )


class LinkList(BaseModel):
    """A page of ``GET /links``: newest first; ``next_cursor`` fetches the next page."""

    links: list[LinkView]
    next_cursor: str | None = None


class LinkUpdate(LinkRules):
    """``PATCH /links/{code}``: the fields to change (at least one). An unknown field is an error,
    so a misspelt one is never silently ignored. ``expires_at``, ``max_clicks``, a rule,
    ``password`` or ``preview`` sent as null removes it."""

    url: str | None = Field(
        default=None, min_length=1, max_length=32768, examples=["https://example.com/summer"]
    )
    title: str | None = Field(default=None, max_length=MAX_TITLE_LENGTH)
    tags: Tags | None = None
    status: Literal["active", "disabled"] | None = None
    expires_at: ExpiresAt | None = None
    max_clicks: MaxClicks | None = None
    forward_query: bool | None = Field(  # type: ignore[assignment]
        default=None, description="Pass the short URL's own query string on to the destination"
    )
    password: Password | None = Field(default=None, description="A new password; null removes it.")
    preview: Preview | None = Field(default=None, description="A new preview; null removes it.")

    @model_validator(mode="after")
    def _changes_something(self) -> "LinkUpdate":
        if not self.model_fields_set:
            raise ValueError(
                "send at least one of url, title, tags, status, expires_at, max_clicks, ios_url, "
                "android_url, geo, variants, utm, forward_query, password, preview"
            )
        return self
