"""What every route shares: the error body, and the query parameters that routes read."""

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    """Every error answer, the API function's and API Gateway's own (its gateway responses)."""

    error: str = Field(description="A stable machine word, such as not_found or code_taken.")
    message: str = Field(description="A sentence for a person: what went wrong and what to do.")


class ResultsFileLink(BaseModel):
    """``GET /jobs/{job_id}/results`` of a larger job: where its results file is, for how long."""

    results_file_url: str
    expires_at: datetime


class ClickReportFileLink(BaseModel):
    """``GET /jobs/{job_id}/clicks`` of a larger job: where its click report file is, for how long."""

    report_file_url: str
    expires_at: datetime


class ClickExportLink(BaseModel):
    """``GET /clicks/export`` once built: where the file is (no key needed), for how long."""

    export_url: str
    expires_at: datetime


class ListLinksQuery(BaseModel):
    """The query of ``GET /links``."""

    limit: int = Field(default=100, ge=1, le=1000, description="Links per page (fewer for very long URLs).")
    cursor: str | None = Field(default=None, description="next_cursor of the previous page.")
    owner: str | None = Field(default=None, description="An admin: another owner's links.")
    tag: str | None = Field(default=None, description="Only links with this tag.")
    q: str | None = Field(
        default=None,
        description="Only links with each word of this (any letter case) as a word, or the start of "
        "one, of their code, host, path, title or tags; across all the owner's links (docs/search.md).",
    )
    job_id: str | None = Field(default=None, description="Only the links made by this bulk job.")
    status: Literal["active", "disabled", "expired"] | None = Field(
        default=None, description="Only links with this status as the link list shows it."
    )
    domain: str | None = Field(default=None, description="Only the links of this domain (GET /domains).")


class BulkUploadQuery(BaseModel):
    """The query of ``POST /bulk``."""

    notify_topic: str | None = Field(
        default=None,
        max_length=256,
        description="An SNS topic ARN of the stack's account and region that also gets the job-ended "
        "message (where the stack's AllowJobTopics parameter allows it).",
    )
    # The job's defaults for its rows' link attributes (docs/campaign-links.md); a row's own cell
    # wins. Read and validated by functions/api/request.py's link_defaults (LinkAttributes).
    expires_at: str | None = Field(
        default=None,
        description="Default expiry of every row's link (ISO 8601 with an offset, in the future).",
    )
    max_clicks: str | None = Field(
        default=None, description="Default click limit of every row's link (1 or more)."
    )
    title: str | None = Field(default=None, description="Default title of every row's link.")
    tags: str | None = Field(
        default=None, description="Default tags of every row's link, separated by commas."
    )
    password: str | None = Field(
        default=None,
        description="Default password of every row's link (rows sharing it share one hash). A query "
        "string may be logged on its way: prefer the file's password column.",
    )
    preview_title: str | None = Field(default=None, description="Default preview title of every row's link.")
    preview_description: str | None = Field(
        default=None, description="Default preview description of every row's link."
    )
    preview_image: str | None = Field(
        default=None, description="Default preview image (an absolute https URL) of every row's link."
    )
    domain: str | None = Field(
        default=None,
        description="Default domain of every row's link (GET /domains lists them; a row's domain "
        "cell wins). Refused at once when unknown (422) or not one the caller may use (403).",
        examples=["go.example.com"],
    )


class ListJobsQuery(BaseModel):
    """The query of ``GET /jobs``."""

    limit: int = Field(default=25, ge=1, le=100, description="Jobs per page.")
    cursor: str | None = Field(default=None, description="next_cursor of the previous page.")


class JobResultsQuery(BaseModel):
    """The query of ``GET /jobs/{job_id}/results``."""

    from_chunk: int = Field(default=0, ge=0, description="Where the next page starts (from the Link header).")


class EventFiltersQuery(BaseModel):
    """What the click events answer: a time zone, filters, bots, a breakdown."""

    tz: str = Field(default="UTC", description="IANA time zone of the series' buckets (Europe/Berlin).")
    country: str | None = Field(
        default=None, description="Only clicks from this country (ISO code, or unknown)."
    )
    device: str | None = Field(
        default=None, description="Only clicks from this device class (desktop, mobile, ...)."
    )
    browser: str | None = Field(
        default=None, description="Only clicks from this browser (Chrome, Safari, ...)."
    )
    os: str | None = Field(default=None, description="Only clicks from this OS (iOS, Windows, ...).")
    referrer: str | None = Field(default=None, description="Only clicks referred by this host.")
    bots: Literal["include", "exclude", "only"] = Field(
        default="include", description="Bots and preview fetchers."
    )


class LinkClicksQuery(EventFiltersQuery):
    """The query of ``GET /links/{code}/clicks``."""

    from_: datetime | None = Field(
        default=None, alias="from", description="ISO 8601 start of the range (default: 30 days ago)."
    )
    to: datetime | None = Field(default=None, description="ISO 8601 end of the range (default: now).")
    interval: Literal["hour", "day", "week", "month"] = Field(default="day", description="The series' step.")
    group_by: Literal["country", "device", "browser", "os", "referrer", "destination", "code"] | None = Field(
        default=None, description="A breakdown: the answer's groups, by this value."
    )


class LinksSeriesQuery(BaseModel):
    """The query of ``GET /clicks/series``."""

    codes: str = Field(description="1 to 50 of the caller's codes, separated by commas.")
    from_: datetime | None = Field(
        default=None, alias="from", description="ISO 8601 start of the range (default: 30 days ago)."
    )
    to: datetime | None = Field(default=None, description="ISO 8601 end of the range (default: now).")


class TopLinksQuery(EventFiltersQuery):
    """The query of ``GET /clicks``."""

    from_: datetime | None = Field(
        default=None, alias="from", description="ISO 8601 first day of the range (whole UTC days)."
    )
    to: datetime | None = Field(default=None, description="ISO 8601 last day of the range.")
    tag: str | None = Field(default=None, description="Only the caller's links with this tag.")
    job_id: str | None = Field(default=None, description="Only the links of this bulk job.")
    code: list[str] | None = Field(default=None, description="Only these links (repeat the parameter).")
    group_by: Literal["country", "device", "browser", "os", "referrer", "destination", "code"] | None = Field(
        default=None, description="A breakdown: the answer's groups, by this value."
    )


class ClickExportQuery(EventFiltersQuery):
    """The query of ``GET /clicks/export``."""

    from_: datetime | None = Field(
        default=None, alias="from", description="ISO 8601 start of the range (default: 30 days ago)."
    )
    to: datetime | None = Field(default=None, description="ISO 8601 end of the range (default: now).")
    format: Literal["csv", "jsonl", "parquet"] = Field(
        default="csv",
        description=(
            "The file's format: csv (header time,code,job_id,row,destination,status,country,device,"
            "browser,os,referrer,bot,visitor), jsonl (one JSON object a click, the same names), "
            "or parquet (the same columns; time a UTC timestamp)."
        ),
    )
    tag: str | None = Field(default=None, description="Only the caller's links with this tag.")
    job_id: str | None = Field(default=None, description="Only the links of this bulk job.")
    code: list[str] | None = Field(default=None, description="Only these links (repeat the parameter).")


class ClickErasureQuery(BaseModel):
    """The query of ``DELETE /clicks``."""

    code: list[str] | None = Field(
        default=None, description="Erase these links' events (repeat the parameter); none: all the owner's."
    )
    owner: str | None = Field(default=None, description="Another owner's clicks (admins only).")


class ClickErasureStatusQuery(BaseModel):
    """The query of ``GET /clicks/erasures/{erasure_id}``."""

    owner: str | None = Field(default=None, description="Another owner's erasure (admins only).")


class TopValuesQuery(BaseModel):
    """The query of ``GET /clicks/top``."""

    by: Literal["code", "country", "referrer"] = Field(default="code", description="What to rank.")
    from_: datetime | None = Field(
        default=None, alias="from", description="ISO 8601 start of the range (default: 30 days ago)."
    )
    to: datetime | None = Field(default=None, description="ISO 8601 end of the range (default: now).")
    limit: int = Field(default=100, ge=1, le=1000, description="How many values.")
