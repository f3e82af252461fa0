"""A bulk job's click report (docs/clicks.md): one CSV line per input row, in input order, with
the clicks of the row's link (a row that failed has no code and 0 clicks) and, for a link with
rules, a password or a preview, its answers by destination. Small jobs are answered inline; larger
ones get a file built on request by the jobs worker, kept fresh for an hour."""

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Literal, Protocol

from shortener import clock
from shortener.clicks.counting import destinations_of
from shortener.clicks.event_queries import EventSelection, Query, lifetime_query
from shortener.clicks.event_reports import lifetime_totals
from shortener.clicks.model import LinkTotals, ReportState
from shortener.jobs.model import Job, RowOutcome
from shortener.jobs.results import RESULTS_BLOCK_BYTES, RESULTS_CONTENT_TYPE, neutralise
from shortener.links.domains import ShortUrls

CLICKS_REPORT_HEADER = (
    "row",
    "url",
    "code",
    "short_url",
    "clicks",
    "humans",
    "first_click",
    "last_click",
    "destinations",
)
# A report file older than this is built again.
REPORT_FRESH = timedelta(hours=1)
# A build asked for this recently is taken to be under way (the jobs worker's timeout is 15 min).
BUILD_UNDER_WAY = timedelta(minutes=15)
ReportDelivery = Literal["file", "wait", "build"]


class TotalsReader(Protocol):
    def totals(self, codes: Sequence[str]) -> dict[str, LinkTotals]: ...


# A job -> what reads its links' totals (the counters, or the job's click events).
JobTotals = Callable[[Job], TotalsReader]


class EventRows(Protocol):
    """The click events, asked through Athena (``shortener.clicks.event_store.ClickEventStore``)."""

    table: str
    answers: str | None

    def rows(self, query: Query) -> list[dict[str, str | None]]: ...


class JobEventTotals:
    """A job's links' totals from their click events, where the stack keeps no counters: one query
    for the whole job (its links' clicks since the job began, by the rule that answered them), on
    first use; a report then reads it chunk by chunk."""

    def __init__(self, events: EventRows, job: Job, now: Callable[[], datetime] = clock.now) -> None:
        self._events = events
        self._job = job
        self._now = now
        self._found: dict[str, LinkTotals] | None = None

    def totals(self, codes: Sequence[str]) -> dict[str, LinkTotals]:
        if self._found is None:
            job = self._job
            selection = EventSelection(
                owner=job.owner or "", begin=job.created_at, end=self._now(), job_id=job.job_id
            )
            query = lifetime_query(selection, self._events.table, self._events.answers)
            self._found = lifetime_totals(self._events.rows(query))
        return {code: self._found[code] for code in codes if code in self._found}


def job_event_totals(events: EventRows | None) -> JobTotals | None:
    """What reads each job's totals from the click events, where the stack keeps them."""
    if events is None:
        return None
    return lambda job: JobEventTotals(events, job)


def report_key(job_id: str) -> str:
    """Where a job's click report is kept (beside its results, expiring with them)."""
    return f"results/{job_id}-clicks.csv"


def report_lines(outcomes: Sequence[RowOutcome], totals: dict[str, LinkTotals], urls: ShortUrls) -> str:
    lines = io.StringIO()
    writer = csv.writer(lines)
    for outcome in outcomes:
        found = totals.get(outcome.code) if outcome.code else None
        writer.writerow(
            [
                str(outcome.row),
                neutralise(outcome.url),
                neutralise(outcome.code),
                neutralise(urls.short_url(outcome.domain, outcome.code) if outcome.code else ""),
                str(found.clicks if found else 0),
                str(found.humans if found else 0),
                _moment(found.first_click if found else None),
                _moment(found.last_click if found else None),
                _destinations(found),
            ]
        )
    return lines.getvalue()


def _destinations(totals: LinkTotals | None) -> str:
    """``rule=answers`` pairs, most first (``default=12;ios=30``), as the link's clicks report
    counts them; empty for a link whose answers no rule recorded (a plain link's are all default)."""
    if totals is None or not totals.destinations:
        return ""
    answers = destinations_of(totals.clicks, totals.destinations)
    return ";".join(f"{answer.value}={answer.clicks}" for answer in answers)


def _moment(moment: datetime | None) -> str:
    return moment.isoformat().replace("+00:00", "Z") if moment is not None else ""


def report_blocks(
    chunks: Iterable[tuple[int, list[RowOutcome]]],
    reader: TotalsReader,
    urls: ShortUrls,
    block_bytes: int = RESULTS_BLOCK_BYTES,
) -> Iterator[bytes]:
    """The report CSV in blocks of about ``block_bytes``, read chunk by chunk (one BatchGetItem
    of totals per 100 codes of a chunk), so a job of millions of rows never sits in memory."""
    pending = [(",".join(CLICKS_REPORT_HEADER) + "\r\n").encode()]
    size = len(pending[0])
    for _, outcomes in chunks:
        totals = reader.totals([outcome.code for outcome in outcomes if outcome.code])
        data = report_lines(outcomes, totals, urls).encode()
        pending.append(data)
        size += len(data)
        if size >= block_bytes:
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def report_text(chunks: Iterable[tuple[int, list[RowOutcome]]], reader: TotalsReader, urls: ShortUrls) -> str:
    return b"".join(report_blocks(chunks, reader, urls)).decode()


def report_delivery(state: ReportState | None, now: datetime) -> ReportDelivery:
    """For a job too large to answer inline: a fresh file to redirect to, a build under way to wait
    for, or a build to ask for."""
    state = state or ReportState()
    built, requested = state.built_at, state.requested_at
    if built is not None and now - built < REPORT_FRESH and (requested is None or requested <= built):
        return "file"
    if requested is not None and now - requested < BUILD_UNDER_WAY and (built is None or requested > built):
        return "wait"
    return "build"


class ReportRecords(TotalsReader, Protocol):
    def record_report(self, job_id: str, built_at: datetime) -> None: ...


class JobChunks(Protocol):
    def get_job(self, job_id: str) -> Job | None: ...

    def iter_chunk_outcomes(
        self, job_id: str, from_chunk: int = 0
    ) -> Iterator[tuple[int, list[RowOutcome]]]: ...


class FileWriter(Protocol):
    def write(
        self, bucket: str, key: str, blocks: Iterable[bytes], *, content_type: str, file_name: str
    ) -> int: ...


class ClickReportWriter:
    """Builds a job's click report file (the jobs worker, asked by GET /jobs/{id}/clicks)."""

    def __init__(
        self, jobs: JobChunks, records: ReportRecords, files: FileWriter, totals: JobTotals | None = None
    ) -> None:
        self._jobs = jobs
        self._records = records
        self._files = files
        # Where the stack keeps no counters: the job's totals from its click events.
        self._totals = totals

    def write(self, job_id: str) -> str | None:
        """The report's key once written; None for an unknown job or one without a bucket."""
        job = self._jobs.get_job(job_id)
        if job is None or not job.bucket:
            return None
        key = report_key(job_id)
        reader = self._totals(job) if self._totals is not None else self._records
        blocks = report_blocks(self._jobs.iter_chunk_outcomes(job_id), reader, job.short_urls())
        self._files.write(
            job.bucket, key, blocks, content_type=RESULTS_CONTENT_TYPE, file_name=f"{job_id}-clicks.csv"
        )
        self._records.record_report(job_id, clock.now())
        return key
