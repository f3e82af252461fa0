"""Bulk shortening: reading an uploaded CSV, packing its rows into messages, processing one message
(idempotently), and writing the results CSV."""

import csv
import io
import re
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.parser import BytesParser
from email.policy import HTTP
from typing import Protocol

from pydantic import ValidationError

from shortener import clock
from shortener.logic.codes import CodeGenerator
from shortener.logic.links import LinkService
from shortener.logic.urls import UrlPolicy, normalise_url, url_key
from shortener.models.exceptions import (
    InvalidCsvError,
    InvalidUrlError,
    PayloadTooLargeError,
    ShortenerError,
    UnsupportedMediaTypeError,
)
from shortener.models.jobs import (
    BulkRow,
    ChunkIds,
    ChunkMessage,
    ChunkResult,
    Job,
    QueueUnavailableError,
    RowOutcome,
)
from shortener.models.links import Link, ShortenRequest

JOB_ID_PATTERN = re.compile(r"[0-9a-f]{32}")
RESULTS_HEADER = ("row", "url", "code", "short_url", "error")
# Media types a CSV file arrives with from browsers, spreadsheets and scripts.
_CSV_MEDIA_TYPES = frozenset(
    {"", "text/csv", "application/csv", "text/plain", "application/vnd.ms-excel", "application/octet-stream"}
)
# Cells longer than any URL the settings allow are errors anyway; capping them keeps every message
# and chunk item far below the SQS and DynamoDB size limits.
_MAX_URL_CELL = 33_000
_MAX_CODE_CELL = 300
# A spreadsheet runs a cell starting with one of these as a formula.
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_LINKS_PER_BATCH_WRITE = 25
# A form upload carries the file and perhaps a few fields; nothing legitimate has more parts.
MAX_MULTIPART_PARTS = 16
_MULTIPART_BOUNDARY = re.compile(
    r'boundary=(?:"(?P<quoted>[^"]{1,200})"|(?P<plain>[^\s;]{1,200}))', re.IGNORECASE
)


# ---- upload -> rows -----------------------------------------------------------------------------


def read_upload(raw: bytes, content_type: str, *, max_bytes: int, max_rows: int) -> list[BulkRow]:
    """The data rows of an uploaded CSV (a ``text/csv`` body or a file field of a multipart form).
    PayloadTooLargeError above ``max_bytes`` or ``max_rows``; InvalidCsvError for undecodable
    text, a header without a ``url`` column, or no rows."""
    if len(raw) > max_bytes:
        raise PayloadTooLargeError(f"The upload is larger than {max_bytes:,} bytes; split it into several.")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == "multipart/form-data":
        raw = _file_from_multipart(raw, content_type)
    elif media_type not in _CSV_MEDIA_TYPES:
        raise UnsupportedMediaTypeError(
            f"Content type '{media_type}' is not accepted; send text/csv or a multipart/form-data upload."
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidCsvError(f"The file is not UTF-8 text (byte {exc.start} cannot be decoded).") from exc
    return parse_csv(text, max_rows=max_rows)


def parse_csv(text: str, *, max_rows: int) -> list[BulkRow]:
    """The rows of CSV text whose header has a ``url`` column (any case) and, optionally, a
    ``code`` column. Other columns are ignored; blank lines are skipped."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise InvalidCsvError("The file is empty; it needs a header row with a 'url' column.")
        names = [name.strip().lower() for name in header]
        if "url" not in names:
            raise InvalidCsvError("The header row has no 'url' column.")
        url_column = names.index("url")
        code_column = names.index("code") if "code" in names else None
        rows: list[BulkRow] = []
        for record in reader:
            if not any(cell.strip() for cell in record):
                continue
            if len(rows) == max_rows:
                raise PayloadTooLargeError(
                    f"The file has more than {max_rows:,} rows; split it into several."
                )
            url = record[url_column] if url_column < len(record) else ""
            code = record[code_column] if code_column is not None and code_column < len(record) else ""
            rows.append(BulkRow(url=url.strip()[:_MAX_URL_CELL], code=code.strip()[:_MAX_CODE_CELL]))
    except csv.Error as exc:
        raise InvalidCsvError(f"The file is not valid CSV (line {reader.line_num}): {exc}.") from exc
    if not rows:
        raise InvalidCsvError("The file has a header but no rows.")
    return rows


def _file_from_multipart(raw: bytes, content_type: str) -> bytes:
    boundary = _MULTIPART_BOUNDARY.search(content_type)
    if boundary is None:
        raise InvalidCsvError("The multipart upload has no boundary in its Content-Type.")
    # The email parser spends CPU on every part (seconds for tens of thousands of tiny ones, all
    # within the size limit): count the delimiters first, which costs one pass over the bytes.
    delimiter = b"--" + (boundary["quoted"] or boundary["plain"]).encode("latin-1", "replace")
    if raw.count(delimiter) > MAX_MULTIPART_PARTS + 1:
        raise InvalidCsvError(
            f"The multipart upload has more than {MAX_MULTIPART_PARTS} parts; send the CSV as one file field."
        )
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1", "replace") + b"\r\n\r\n" + raw
    )
    if not message.is_multipart():
        raise InvalidCsvError("The multipart upload could not be read (is its boundary right?).")
    parts = list(message.iter_parts())
    chosen = next((part for part in parts if part.get_filename()), None) or next(
        (part for part in parts if part.get_param("name", header="content-disposition") in ("file", "csv")),
        None,
    )
    if chosen is None:
        raise InvalidCsvError("The upload has no file field.")
    payload = chosen.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


# ---- rows -> messages ---------------------------------------------------------------------------


def pack_rows(
    job_id: str, rows: Sequence[BulkRow], *, own_host: str | None, max_rows: int, max_bytes: int
) -> list[ChunkMessage]:
    """Consecutive rows packed into messages of at most ``max_rows`` rows and about ``max_bytes``
    of row text (a single longer row gets a message of its own)."""
    messages: list[ChunkMessage] = []
    batch: list[tuple[str, str]] = []
    size = 0
    first_row = 1
    for number, row in enumerate(rows, start=1):
        # The row's share of the JSON body: two quoted strings, brackets and commas.
        row_size = len(row.url.encode()) + len(row.code.encode()) + 8
        if batch and (len(batch) == max_rows or size + row_size > max_bytes):
            messages.append(_message(job_id, len(messages), first_row, batch, own_host))
            batch, size, first_row = [], 0, number
        batch.append((row.url, row.code))
        size += row_size
    if batch:
        messages.append(_message(job_id, len(messages), first_row, batch, own_host))
    return messages


def _message(
    job_id: str, chunk: int, first_row: int, rows: list[tuple[str, str]], own_host: str | None
) -> ChunkMessage:
    return ChunkMessage(job_id=job_id, chunk=chunk, first_row=first_row, rows=rows, own_host=own_host)


class JobRecords(Protocol):
    """What job submission and status need of storage (``shortener.dal.jobs.JobsStore``)."""

    def create_job(self, job: Job, expires_at: int) -> None: ...
    def delete_job(self, job_id: str) -> None: ...
    def get_job(self, job_id: str) -> Job | None: ...


class MessageSender(Protocol):
    """What job submission needs of the queue (``shortener.dal.queue.BulkQueue``)."""

    def send_all(self, queue_url: str, bodies: Sequence[str]) -> int: ...


@dataclass(frozen=True, slots=True)
class BulkOptions:
    """How uploads are packed and how long jobs are kept."""

    rows_per_message: int = 250
    message_bytes: int = 64_000
    retention_days: int = 30


def submit_job(
    rows: Sequence[BulkRow],
    *,
    jobs: JobRecords,
    queue: MessageSender,
    queue_url: str,
    own_host: str | None,
    options: BulkOptions,
) -> Job:
    """Create a job for ``rows``: the job record first (so progress always has a total to count
    towards), then the rows packed into messages and sent in batches."""
    job_id = uuid.uuid4().hex
    messages = pack_rows(
        job_id, rows, own_host=own_host, max_rows=options.rows_per_message, max_bytes=options.message_bytes
    )
    job = Job(job_id=job_id, total=len(rows), chunks=len(messages), created_at=clock.now())
    jobs.create_job(job, expires_at=expiry(job.created_at, options.retention_days))
    try:
        queue.send_all(queue_url, [message.model_dump_json() for message in messages])
    except Exception as exc:
        # A job whose rows are not all queued would never be done: withdraw it. Rows already
        # sent are processed, but their counts find no job and are dropped.
        jobs.delete_job(job_id)
        raise QueueUnavailableError("The rows could not be queued; please upload the file again.") from exc
    return job


def expiry(start: datetime, retention_days: int) -> int:
    """The TTL (epoch seconds) of job items created at ``start``."""
    return int((start + timedelta(days=retention_days)).timestamp())


def is_job_id(text: str) -> bool:
    """Whether ``text`` could be a job id (a malformed one is a 404 with no database call)."""
    return JOB_ID_PATTERN.fullmatch(text) is not None


# ---- processing one message ---------------------------------------------------------------------


class ChunkLinks(Protocol):
    """What chunk processing needs of the links table (``shortener.dal.links.LinksStore``)."""

    def allocate_ids(self, count: int) -> list[int]: ...
    def put_generated_batch(self, links: Iterable[Link]) -> None: ...
    def find_claims(self, keys: Sequence[str]) -> dict[str, Link]: ...
    def claim_urls(self, claims: Sequence[tuple[str, Link]]) -> dict[str, Link]: ...


class ChunkRecords(Protocol):
    """What chunk processing needs of the jobs table (``shortener.dal.jobs.JobsStore``)."""

    def fix_chunk_ids(self, job_id: str, chunk: int, proposed: ChunkIds, expires_at: int) -> ChunkIds: ...
    def record_outcomes(
        self,
        job_id: str,
        chunk: int,
        *,
        first_row: int,
        outcomes: Sequence[RowOutcome],
        now: int,
        expires_at: int,
    ) -> None: ...
    def count_chunk(self, job_id: str, chunk: int, *, succeeded: int, failed: int) -> bool: ...


@dataclass(frozen=True, slots=True)
class _GeneratedRow:
    index: int
    url: str  # normalised


class ChunkProcessor:
    """Shortens the rows of one message. Idempotent: a redelivered message gets the same codes
    (its ids were fixed on the chunk item by the first delivery, generated links are rewritten
    byte for byte, conditional writes find their own earlier link) and is counted once (the job
    records which chunks it has counted, in the same conditional write that adds the counts)."""

    def __init__(
        self,
        links: ChunkLinks,
        jobs: ChunkRecords,
        link_service: LinkService,
        generator: CodeGenerator,
        policy: UrlPolicy,
        *,
        strategy: str = "counter",
        find_if_exists: bool = False,
        retention_days: int = 30,
        threads: int = 8,
    ) -> None:
        self._links = links
        self._jobs = jobs
        self._link_service = link_service
        self._generator = generator
        self._policy = policy
        self._strategy = strategy
        self._find_if_exists = find_if_exists
        self._retention_days = retention_days
        # Writes of one chunk go out in parallel: each request waits on the network, not the CPU.
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="chunk-writer")

    def process(self, message: ChunkMessage) -> ChunkResult:
        """Shorten every row of ``message`` and record the outcomes on its job."""
        now = clock.now()
        expires_at = expiry(now, self._retention_days)
        policy = self._policy.with_own_host(message.own_host)
        outcomes: list[RowOutcome | None] = [None] * len(message.rows)
        generated: list[_GeneratedRow] = []
        conditional: list[int] = []
        for index, (url, code) in enumerate(message.rows):
            if code or self._strategy == "hash":
                conditional.append(index)
                continue
            try:
                generated.append(_GeneratedRow(index, normalise_url(url, policy)))
            except InvalidUrlError as exc:
                outcomes[index] = _row_error(message, index, url, exc)

        if generated:
            chunk_ids = self._fix_ids(message, len(generated), now, expires_at)
            if chunk_ids.done:
                # Recorded before; counting may not have happened if that delivery died just then.
                counted = self._jobs.count_chunk(
                    message.job_id, message.chunk, succeeded=chunk_ids.succeeded, failed=chunk_ids.failed
                )
                return ChunkResult(succeeded=chunk_ids.succeeded, failed=chunk_ids.failed, counted=counted)
            codes = self._write_generated(generated, chunk_ids)
            for row, code in zip(generated, codes, strict=True):
                outcomes[row.index] = RowOutcome(row=message.first_row + row.index, url=row.url, code=code)
        for index, outcome in self._write_conditional(message, conditional, policy):
            outcomes[index] = outcome

        final = [outcome for outcome in outcomes if outcome is not None]
        succeeded = sum(1 for outcome in final if outcome.succeeded)
        failed = len(final) - succeeded
        # Outcomes first: a chunk is counted only once its results can be read.
        self._jobs.record_outcomes(
            message.job_id,
            message.chunk,
            first_row=message.first_row,
            outcomes=final,
            now=int(now.timestamp()),
            expires_at=expires_at,
        )
        counted = self._jobs.count_chunk(message.job_id, message.chunk, succeeded=succeeded, failed=failed)
        return ChunkResult(succeeded=succeeded, failed=failed, counted=counted)

    def _fix_ids(self, message: ChunkMessage, count: int, now: datetime, expires_at: int) -> ChunkIds:
        proposed = ChunkIds(ids=self._allocate(count), created_at=now)
        fixed = self._jobs.fix_chunk_ids(message.job_id, message.chunk, proposed, expires_at)
        if len(fixed.ids) < count and not fixed.done:
            # Only when the settings changed between deliveries so that more rows need ids now.
            fixed = fixed.model_copy(update={"ids": fixed.ids + self._allocate(count - len(fixed.ids))})
        return fixed

    def _allocate(self, count: int) -> list[int]:
        ids: list[int] = []
        while len(ids) < count:
            # allocate_ids skips ids that custom codes reserved, so it can return fewer.
            ids.extend(self._links.allocate_ids(count - len(ids)))
        return ids

    def _write_generated(self, rows: list[_GeneratedRow], chunk_ids: ChunkIds) -> list[str]:
        codes = [self._generator.encode(link_id) for link_id in chunk_ids.ids[: len(rows)]]
        if self._find_if_exists:
            return self._write_claimed(rows, codes, chunk_ids.created_at)
        self._put_batches(
            [
                Link(code=code, url=row.url, created_at=chunk_ids.created_at)
                for row, code in zip(rows, codes, strict=True)
            ]
        )
        return codes

    def _write_claimed(self, rows: list[_GeneratedRow], codes: list[str], created_at: datetime) -> list[str]:
        """Find-if-exists: a URL that already has a link keeps its code. Each new URL (once per
        chunk) gets its row's link written in a batch, then claimed, up to 100 claims a
        transaction; where another writer claimed the URL first, its code wins (and the link
        written here stays, unreferenced but valid)."""
        keys = [url_key(row.url) for row in rows]
        found = {key: link.code for key, link in self._links.find_claims(keys).items()}
        first_of_key: dict[str, int] = {}
        for position, key in enumerate(keys):
            if key not in found:
                first_of_key.setdefault(key, position)
        new = [
            (key, Link(code=codes[position], url=rows[position].url, created_at=created_at))
            for key, position in first_of_key.items()
        ]
        self._put_batches([link for _, link in new])
        found.update({key: link.code for key, link in self._links.claim_urls(new).items()})
        return [found[key] for key in keys]

    def _put_batches(self, links: list[Link]) -> None:
        batches = [
            links[start : start + _LINKS_PER_BATCH_WRITE]
            for start in range(0, len(links), _LINKS_PER_BATCH_WRITE)
        ]
        for _ in self._pool.map(self._links.put_generated_batch, batches):
            pass

    def _write_conditional(
        self, message: ChunkMessage, indexes: list[int], policy: UrlPolicy
    ) -> list[tuple[int, RowOutcome]]:
        """Rows with a custom code (and every row under the hash strategy): a conditional write
        each. Rows asking for the same code run in input order, so the first one wins."""
        by_code: dict[str, list[int]] = defaultdict(list)
        for index in indexes:
            _, code = message.rows[index]
            by_code[code or f"#row{index}"].append(index)

        def shorten_group(group: list[int]) -> list[tuple[int, RowOutcome]]:
            return [(index, self._shorten_one(message, index, policy)) for index in group]

        return [pair for pairs in self._pool.map(shorten_group, by_code.values()) for pair in pairs]

    def _shorten_one(self, message: ChunkMessage, index: int, policy: UrlPolicy) -> RowOutcome:
        url, code = message.rows[index]
        try:
            if not url:
                raise InvalidUrlError("The URL is empty.")
            request = ShortenRequest(url=url, code=code or None)
            result = self._link_service.shorten(request, policy, base_url="")
        except ShortenerError as exc:
            return _row_error(message, index, url, exc)
        except ValidationError as exc:
            problem = "; ".join(str(error["msg"]) for error in exc.errors())
            return RowOutcome(row=message.first_row + index, url=url, error=f"invalid_request: {problem}")
        return RowOutcome(row=message.first_row + index, url=result.url, code=result.code)


def _row_error(message: ChunkMessage, index: int, url: str, error: ShortenerError) -> RowOutcome:
    return RowOutcome(row=message.first_row + index, url=url, error=f"{error.error}: {error.message}")


# ---- results ------------------------------------------------------------------------------------


def neutralise(cell: str) -> str:
    """``cell`` made safe to open in a spreadsheet: a leading formula character is quoted."""
    return "'" + cell if cell.startswith(_FORMULA_PREFIXES) else cell


def results_csv(outcomes: Iterable[RowOutcome], base_url: str) -> str:
    """The results CSV (``row,url,code,short_url,error``), one line per outcome, every cell
    spreadsheet-safe."""
    page = results_page(((0, list(outcomes)),), base_url, max_bytes=None)
    return page.text


@dataclass(frozen=True, slots=True)
class ResultsPage:
    """A results CSV, and the chunk the next page starts at when it stopped at the size limit."""

    text: str
    next_chunk: int | None = None


def results_page(
    chunks: Iterable[tuple[int, list[RowOutcome]]], base_url: str, *, max_bytes: int | None
) -> ResultsPage:
    """The results CSV of ``chunks`` (in order), stopping before the chunk that would take it past
    ``max_bytes`` (a Lambda response is at most 6 MB): ``next_chunk`` then says where to go on."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(RESULTS_HEADER)
    size = buffer.tell()
    empty = True
    for chunk, outcomes in chunks:
        lines = io.StringIO()
        chunk_writer = csv.writer(lines)
        for outcome in outcomes:
            short_url = base_url + outcome.code if outcome.code else ""
            chunk_writer.writerow(
                [
                    str(outcome.row),
                    neutralise(outcome.url),
                    neutralise(outcome.code),
                    neutralise(short_url),
                    neutralise(outcome.error),
                ]
            )
        text = lines.getvalue()
        # Bytes, not characters: the limit is on the response. A page has at least one chunk.
        added = len(text.encode())
        if max_bytes is not None and not empty and size + added > max_bytes:
            return ResultsPage(buffer.getvalue(), next_chunk=chunk)
        buffer.write(text)
        size += added
        empty = False
    return ResultsPage(buffer.getvalue())
