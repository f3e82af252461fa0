"""``GET /clicks/export``: one line per click of the caller's links in a range, filtered as a
report is, built by Athena and fetched from S3 (docs/clicks.md, "Exports"). The first request
starts the query and answers 202 with Retry-After; the same request asked again answers 202 while
it runs and while the jobs worker writes the file from its answer in the asked format
(shortener.clicks.export_files), then a presigned link to the file (303), for an hour; a query
that failed says why."""

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from shortener import clock
from shortener.access.model import Caller
from shortener.clicks.counting import parse_range
from shortener.clicks.event_queries import Query, export_query
from shortener.clicks.event_reports import asked_codes, event_ask, selection_of
from shortener.clicks.event_store import EventQueryError, QueryOutcome
from shortener.clicks.export_files import FORMATS, ExportFileRequest, ExportFormat
from shortener.clicks.store_exports import ExportRecord
from shortener.exceptions import InvalidRequestError, ServiceUnavailableError

# How soon a client should ask again while the export is built.
RETRY_SECONDS = 5
# An export asked again within this long is the same file (then a new one is built).
EXPORT_SECONDS = 3600
# The worker writes a file within its 15 minutes: a file not written by then is asked for again.
FILE_STALE_SECONDS = 960


class ExportEvents(Protocol):
    """``shortener.clicks.event_store.ClickEventStore``."""

    table: str
    answers: str | None

    def start(self, query: Query) -> str: ...
    def outcome(self, execution_id: str) -> QueryOutcome: ...


class ExportRecords(Protocol):
    """``shortener.clicks.store_exports.ExportRecords``."""

    def get(self, owner: str, key: str) -> ExportRecord | None: ...
    def put(self, owner: str, key: str, execution_id: str, *, expires_at: int) -> None: ...
    def ask_file(self, owner: str, key: str, execution_id: str, *, now: int, stale_after: int) -> bool: ...


# Asks the jobs worker to write an export's file (shortener.jobs.invoke.JobsWorker).
ExportFileWriter = Callable[[ExportFileRequest], None]


# bucket, key, file name, seconds -> a presigned GET and when it expires (BulkFiles.download_url).
Presigner = Callable[[str, str, str, int], tuple[str, datetime]]


@dataclass(frozen=True)
class ExportBuilding:
    message: str
    retry_after: int = RETRY_SECONDS


@dataclass(frozen=True)
class ExportFile:
    url: str
    expires_at: datetime


class ClickExports:
    def __init__(
        self,
        events: Callable[[], ExportEvents | None],
        records: Callable[[], ExportRecords],
        presign: Presigner,
        write_file: ExportFileWriter,
        *,
        tagged: Callable[[str, str], list[str]] = lambda owner, tag: [],
        now: Callable[[], datetime] = clock.now,
    ) -> None:
        self._events = events
        self._records = records
        self._presign = presign
        self._write_file = write_file
        self._tagged = tagged
        self._now = now

    def export(
        self, caller: Caller, query: Mapping[str, str | None], codes: Sequence[str]
    ) -> ExportBuilding | ExportFile:
        """The export the query asks for: being built, or its file."""
        file_format = next((known for known in FORMATS if known == (query.get("format") or "csv")), None)
        if file_format is None:
            raise InvalidRequestError(f"format must be one of {', '.join(FORMATS)}.")
        begin, to, _ = parse_range(query.get("from"), query.get("to"), "day", self._now())
        ask = event_ask(query, group_values=())
        codes = asked_codes(codes)
        events = self._events()
        if events is None:
            raise ServiceUnavailableError("This stack keeps no click events to export.")
        key = _export_key(caller.owner_id, query, codes)
        records = self._records()
        found = records.get(caller.owner_id, key)
        if found is not None and found.expires_at > clock.epoch_seconds():
            if found.file is not None:
                bucket, _, object_key = found.file.removeprefix("s3://").partition("/")
                name = _file_name(begin, to, file_format)
                url, expires_at = self._presign(bucket, object_key, name, EXPORT_SECONDS)
                return ExportFile(url, expires_at)
            outcome = events.outcome(found.execution_id)
            if outcome.state == "SUCCEEDED":
                self._ask_file(records, caller.owner_id, key, found.execution_id, outcome.output, file_format)
                return ExportBuilding("The export's file is being written; ask again in a few seconds.")
            if outcome.state in ("QUEUED", "RUNNING"):
                return ExportBuilding("The export is being built; ask again in a few seconds.")
            # Failed or cancelled: asked again, it is built again.
            records.put(caller.owner_id, key, found.execution_id, expires_at=0)
            raise EventQueryError(f"The export could not be built: {outcome.reason or outcome.state}")
        if query.get("tag"):
            tagged = self._tagged(caller.owner_id, str(query.get("tag")))
            codes = [code for code in codes if code in tagged] if codes else tagged
            codes = codes or ["#none"]
        selection = selection_of(
            ask, owner=caller.owner_id, begin=begin, end=to, codes=codes, job_id=query.get("job_id")
        )
        execution_id = events.start(export_query(selection, events.table, events.answers))
        records.put(caller.owner_id, key, execution_id, expires_at=clock.epoch_seconds() + EXPORT_SECONDS)
        return ExportBuilding("The export is being built; ask again in a few seconds.")

    def _ask_file(  # noqa: PLR0917
        self,
        records: ExportRecords,
        owner: str,
        key: str,
        execution_id: str,
        answer: str,
        file_format: ExportFormat,
    ) -> None:
        """Ask the worker for the file of this build, unless it was asked for lately. The file is
        kept beside the answer (query-results/, which expires in a day)."""
        asked = records.ask_file(
            owner, key, execution_id, now=clock.epoch_seconds(), stale_after=FILE_STALE_SECONDS
        )
        if asked:
            bucket = answer.removeprefix("s3://").partition("/")[0]
            self._write_file(
                ExportFileRequest(
                    owner=owner,
                    export=key,
                    execution_id=execution_id,
                    answer=answer,
                    bucket=bucket,
                    key=f"query-results/exports/{execution_id}.{file_format}",
                    file_format=file_format,
                )
            )


def _export_key(owner: str, query: Mapping[str, str | None], codes: Sequence[str]) -> str:
    """The same for the same owner and query as asked (parameters in any order)."""
    asked = {name: value for name, value in query.items() if name != "code"} | {"code": sorted(codes)}
    text = json.dumps([owner, sorted(asked.items(), key=lambda item: item[0])], default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _file_name(begin: datetime, end: datetime, file_format: ExportFormat) -> str:
    return f"clicks-{begin:%Y%m%d}-{end:%Y%m%d}.{file_format}"
