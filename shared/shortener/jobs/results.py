"""A job's results CSV: built from its chunks' outcomes in input order, every cell safe to open in a
spreadsheet, served in pages through the API for small jobs and written once to S3 as a file when
a job is complete."""

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from shortener import clock
from shortener.jobs.metering import Metering, null_metering
from shortener.jobs.model import Job, JobUsage, ResultsFile, RowOutcome
from shortener.links.domains import ShortUrls

RESULTS_HEADER = ("row", "url", "code", "short_url", "error")
RESULTS_CONTENT_TYPE = "text/csv; charset=utf-8"
# A spreadsheet runs a cell starting with one of these as a formula.
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
# C0 controls, DEL and C1 controls: a NUL or a bare carriage return would corrupt a CSV reader or
# a terminal; they are written percent-encoded, as a URL would carry them.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# The part size of a results file being written (S3 parts are at least 5 MiB, except the last).
RESULTS_BLOCK_BYTES = 8 * 1024 * 1024


def _percent_encode(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode())


def neutralise(cell: str) -> str:
    """``cell`` made safe to open in a spreadsheet: control characters percent-encoded, and a
    leading formula character quoted."""
    if _CONTROL.search(cell):
        cell = _CONTROL.sub(_percent_encode, cell)
    return "'" + cell if cell.startswith(_FORMULA_PREFIXES) else cell


def results_key(job_id: str) -> str:
    """Where a job's results file is kept in the bulk bucket."""
    return f"results/{job_id}.csv"


def results_lines(outcomes: Iterable[RowOutcome], urls: ShortUrls) -> str:
    """The CSV lines of ``outcomes`` (no header), each short URL on its row's domain."""
    lines = io.StringIO()
    writer = csv.writer(lines)
    for outcome in outcomes:
        short_url = urls.short_url(outcome.domain, outcome.code) if outcome.code else ""
        writer.writerow(
            [
                str(outcome.row),
                neutralise(outcome.url),
                neutralise(outcome.code),
                neutralise(short_url),
                neutralise(outcome.error),
            ]
        )
    return lines.getvalue()


def _header_line() -> str:
    return ",".join(RESULTS_HEADER) + "\r\n"


def ending_line(job: Job) -> str:
    """The results' last line for a job whose file was not read to its end: no row number, and
    ``ended_early: <why>`` in the error column, so a reader of the results alone sees it too."""
    if job.error is None:
        return ""
    lines = io.StringIO()
    why = f"ended_early: {job.error.error}: {job.error.message}"
    csv.writer(lines).writerow(["", "", "", "", neutralise(why)])
    return lines.getvalue()


def results_csv(outcomes: Iterable[RowOutcome], urls: ShortUrls) -> str:
    """The results CSV (``row,url,code,short_url,error``), one line per outcome, every cell
    spreadsheet-safe."""
    return _header_line() + results_lines(outcomes, urls)


@dataclass(frozen=True, slots=True)
class ResultsPage:
    """A results CSV, and the chunk the next page starts at when it stopped at the size limit."""

    text: str
    next_chunk: int | None = None


def results_page(
    chunks: Iterable[tuple[int, list[RowOutcome]]],
    urls: ShortUrls,
    *,
    max_bytes: int | None,
    ending: str = "",
) -> ResultsPage:
    """The results CSV of ``chunks`` (in order), stopping before the chunk that would take it past
    ``max_bytes`` (a Lambda response is at most 6 MB): ``next_chunk`` then says where to go on.
    The last page ends with ``ending`` (see ``ending_line``)."""
    buffer = io.StringIO()
    buffer.write(_header_line())
    size = buffer.tell()
    empty = True
    for chunk, outcomes in chunks:
        text = results_lines(outcomes, urls)
        # Bytes, not characters: the limit is on the response. A page has at least one chunk.
        added = len(text.encode())
        if max_bytes is not None and not empty and size + added > max_bytes:
            return ResultsPage(buffer.getvalue(), next_chunk=chunk)
        buffer.write(text)
        size += added
        empty = False
    buffer.write(ending)
    return ResultsPage(buffer.getvalue())


@dataclass(slots=True)
class _Tally:
    rows: int = 0
    size: int = 0


def results_blocks(
    chunks: Iterable[tuple[int, list[RowOutcome]]],
    urls: ShortUrls,
    tally: _Tally,
    block_bytes: int = RESULTS_BLOCK_BYTES,
    ending: str = "",
) -> Iterator[bytes]:
    """The whole results CSV as blocks of about ``block_bytes`` (the last one smaller), built as
    ``chunks`` are read, so a file of millions of rows never sits in memory. ``tally`` counts the
    rows and bytes handed out."""
    pending = [_header_line().encode()]
    pending_size = len(pending[0])
    for _, outcomes in chunks:
        data = results_lines(outcomes, urls).encode()
        tally.rows += len(outcomes)
        pending.append(data)
        pending_size += len(data)
        if pending_size >= block_bytes:
            block = b"".join(pending)
            tally.size += len(block)
            yield block
            pending, pending_size = [], 0
    pending.append(ending.encode())
    block = b"".join(pending)
    tally.size += len(block)
    yield block


# ---- the results file, written once ---------------------------------------------------------------


class ResultsRecords(Protocol):
    """What writing results needs of the jobs table (``shortener.jobs.store.JobsStore``)."""

    def get_job(self, job_id: str) -> Job | None: ...
    def iter_chunk_outcomes(
        self, job_id: str, from_chunk: int = 0
    ) -> Iterator[tuple[int, list[RowOutcome]]]: ...
    def claim_results(self, job_id: str, owner: str, *, now: int, lease_until: int) -> bool: ...
    def record_results(self, job_id: str, results: ResultsFile, usage: JobUsage) -> bool: ...


class FileWriter(Protocol):
    """What writing results needs of S3 (``shortener.jobs.bucket.BulkFiles``)."""

    def write(
        self, bucket: str, key: str, blocks: Iterable[bytes], *, content_type: str, file_name: str
    ) -> int: ...


class IncompleteResultsError(Exception):
    """A complete job's chunks hold fewer outcomes than its rows (an operational fault)."""


class ResultsWriter:
    """Writes a complete job's results CSV to S3 once: whoever sees the job complete may ask, a
    lease on the job lets one writer work at a time, the file's key is fixed by the job id (a
    second writer rewrites the same bytes), and the job records the file with a conditional write."""

    def __init__(
        self,
        jobs: ResultsRecords,
        files: FileWriter,
        *,
        lease_seconds: int = 900,
        metering: Metering = null_metering,
        epoch_seconds: Callable[[], int] = clock.epoch_seconds,
        on_ended: Callable[[Job], None] | None = None,
    ) -> None:
        self._jobs = jobs
        # Told of each job whose results file this writer recorded (the job-ended event).
        self._on_ended = on_ended
        self._files = files
        self._lease_seconds = lease_seconds
        self._metering = metering
        self._epoch_seconds = epoch_seconds

    def write(self, job_id: str, owner: str) -> ResultsFile | None:
        """The job's results file: written now, or the one written before. None when the job is
        unknown or not complete, or another writer holds the lease."""
        with self._metering() as meter:
            job = self._jobs.get_job(job_id)
            # A job with no bucket (from before results files existed) keeps its inline results.
            if job is None or not job.complete or not job.bucket:
                return None
            if job.results is not None:
                return job.results
            now = self._epoch_seconds()
            if not self._jobs.claim_results(job_id, owner, now=now, lease_until=now + self._lease_seconds):
                return None
            tally = _Tally()
            key = results_key(job_id)
            blocks = results_blocks(
                self._jobs.iter_chunk_outcomes(job_id), job.short_urls(), tally, ending=ending_line(job)
            )
            self._files.write(
                job.bucket,
                key,
                blocks,
                content_type=RESULTS_CONTENT_TYPE,
                file_name=f"{job_id}.csv",
            )
            if tally.rows != job.total:
                raise IncompleteResultsError(f"job {job_id}: {tally.rows} outcomes for {job.total} rows")
            results = ResultsFile(key=key, size=tally.size, rows=tally.rows, written_at=clock.now())
            # The recording write itself is the last request of this work.
            usage = meter.take() + JobUsage(dynamodb_requests=1, write_units=1)
            if self._jobs.record_results(job_id, results, usage) and self._on_ended is not None:
                self._on_ended(job.model_copy(update={"results": results}))
            return results
