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
from datetime import datetime
from email.parser import BytesParser
from email.policy import HTTP
from typing import Protocol

from pydantic import ValidationError

from shortener import clock
from shortener.dal.links import CounterKeyMismatchError
from shortener.logic.chunks import ChunkOutcomes, expiry
from shortener.logic.codes import CodeGenerator
from shortener.logic.links import LinkService, key_changed_error
from shortener.logic.urls import UrlPolicy, normalise_url, url_key
from shortener.models.access import Caller
from shortener.models.exceptions import (
    InvalidCsvError,
    InvalidUrlError,
    JobNotFoundError,
    PayloadTooLargeError,
    ShortenerError,
    StorageThrottledError,
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
    job_id: str,
    rows: Sequence[BulkRow],
    *,
    own_host: str | None,
    max_rows: int,
    max_bytes: int,
    owner: str | None = None,
    own_hosts: Sequence[str] = (),
) -> list[ChunkMessage]:
    """Consecutive rows packed into messages of at most ``max_rows`` rows and about ``max_bytes``
    of row text (a single longer row gets a message of its own)."""

    def _message(chunk: int, first_row: int, batch: list[tuple[str, str]]) -> ChunkMessage:
        return ChunkMessage(
            job_id=job_id,
            chunk=chunk,
            first_row=first_row,
            rows=batch,
            own_host=own_host,
            own_hosts=list(own_hosts),
            owner=owner,
        )

    messages: list[ChunkMessage] = []
    batch: list[tuple[str, str]] = []
    size = 0
    first_row = 1
    for number, row in enumerate(rows, start=1):
        # The row's share of the JSON body: two quoted strings, brackets and commas.
        row_size = len(row.url.encode()) + len(row.code.encode()) + 8
        if batch and (len(batch) == max_rows or size + row_size > max_bytes):
            messages.append(_message(len(messages), first_row, batch))
            batch, size, first_row = [], 0, number
        batch.append((row.url, row.code))
        size += row_size
    if batch:
        messages.append(_message(len(messages), first_row, batch))
    return messages


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
    owner: str | None = None,
    own_hosts: Sequence[str] = (),
) -> Job:
    """Create ``owner``'s job for ``rows``: the job record first (so progress always has a total
    to count towards), then the rows packed into messages and sent in batches."""
    job_id = uuid.uuid4().hex
    messages = pack_rows(
        job_id,
        rows,
        own_host=own_host,
        max_rows=options.rows_per_message,
        max_bytes=options.message_bytes,
        owner=owner,
        own_hosts=own_hosts,
    )
    job = Job(job_id=job_id, total=len(rows), chunks=len(messages), created_at=clock.now(), owner=owner)
    jobs.create_job(job, expires_at=expiry(job.created_at, options.retention_days))
    try:
        queue.send_all(queue_url, [message.model_dump_json() for message in messages])
    except Exception as exc:
        # A job whose rows are not all queued would never be done: withdraw it. Rows already
        # sent are processed, but their counts find no job and are dropped.
        jobs.delete_job(job_id)
        raise QueueUnavailableError("The rows could not be queued; please upload the file again.") from exc
    return job


def job_for(caller: Caller, job: Job | None, job_id: str) -> Job:
    """``job`` if ``caller`` may see it (its owner, or an admin; a job from before owners existed
    is for admins only), else JobNotFoundError: another owner's job is indistinguishable from no
    job at all. Without a key every caller is the anonymous owner: its jobs are found by their
    unguessable ids, as before keys existed."""
    if job is None or not (caller.is_admin or (job.owner is not None and job.owner == caller.owner_id)):
        raise JobNotFoundError(f"No job has the id '{job_id[:64]}'.")
    return job


def is_job_id(text: str) -> bool:
    """Whether ``text`` could be a job id (a malformed one is a 404 with no database call)."""
    return JOB_ID_PATTERN.fullmatch(text) is not None


# ---- processing one message ---------------------------------------------------------------------


class ChunkLinks(Protocol):
    """What chunk processing needs of the links table (``shortener.dal.links.LinksStore``)."""

    def allocate_ids(self, count: int, key_fingerprint: str) -> list[int]: ...
    def get_many(self, codes: Sequence[str]) -> dict[str, Link]: ...
    def put_generated_batch(self, links: Iterable[Link]) -> None: ...
    def find_claims(self, keys: Sequence[str]) -> dict[str, Link]: ...
    def claim_urls(self, claims: Sequence[tuple[str, Link]]) -> dict[str, Link]: ...


class ChunkRecords(ChunkOutcomes, Protocol):
    """What chunk processing needs of the jobs table (``shortener.dal.jobs.JobsStore``)."""

    def fix_chunk_ids(self, job_id: str, chunk: int, proposed: ChunkIds, expires_at: int) -> ChunkIds: ...


@dataclass(frozen=True, slots=True)
class _GeneratedRow:
    index: int
    url: str  # normalised


class ChunkProcessor:
    """Shortens the rows of one message. Idempotent: a redelivered message gets the same codes
    (its ids were fixed on the chunk item by the first delivery; links that delivery wrote are
    found and kept, conditional writes find their own earlier link) and is counted once (the job
    records which chunks it has counted, in the same conditional write that adds the counts).

    Generated links go in with BatchWriteItem, which cannot be conditional: their codes are read
    first, and a code that exists with other content (a link made under an earlier code key, a
    tombstone) gets a fresh id instead, so nothing is ever overwritten."""

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

    def check_ready(self) -> None:
        """CodeKeyChangedError when codes must not be written (the code key changed): the loop
        then leaves the queued rows alone."""
        self._link_service.check_code_key()

    def process(self, message: ChunkMessage) -> ChunkResult:
        """Shorten every row of ``message`` and record the outcomes on its job."""
        now = clock.now()
        expires_at = expiry(now, self._retention_days)
        policy = self._policy.with_own_host(message.own_host, *message.own_hosts)
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
        for index, error in self._screen(message, generated, conditional, policy).items():
            outcomes[index] = RowOutcome(
                row=message.first_row + index, url=message.rows[index][0], error=f"blocked_host: {error}"
            )
        generated = [row for row in generated if outcomes[row.index] is None]
        conditional = [index for index in conditional if outcomes[index] is None]

        if generated:
            chunk_ids = self._fix_ids(message, len(generated), now, expires_at)
            if chunk_ids.done:
                # Recorded before; counting may not have happened if that delivery died just then.
                counted = self._jobs.count_chunk(
                    message.job_id,
                    message.chunk,
                    succeeded=chunk_ids.succeeded,
                    failed=chunk_ids.failed,
                    now=now,
                )
                return ChunkResult(succeeded=chunk_ids.succeeded, failed=chunk_ids.failed, counted=counted)
            codes = self._write_generated(message, generated, chunk_ids)
            for row, code in zip(generated, codes, strict=True):
                outcomes[row.index] = RowOutcome(row=message.first_row + row.index, url=row.url, code=code)
        for index, outcome in self._write_conditional(message, conditional, policy):
            outcomes[index] = outcome

        final = [outcome for outcome in outcomes if outcome is not None]
        # Outcomes first: a chunk is counted only once its results can be read. What stands may
        # be a dead-letter settlement that got there first (this delivery came too late).
        recorded = self._jobs.record_outcomes(
            message.job_id,
            message.chunk,
            first_row=message.first_row,
            outcomes=final,
            now=int(now.timestamp()),
            expires_at=expires_at,
        )
        counted = self._jobs.count_chunk(
            message.job_id, message.chunk, succeeded=recorded.succeeded, failed=recorded.failed, now=now
        )
        return ChunkResult(succeeded=recorded.succeeded, failed=recorded.failed, counted=counted)

    def _screen(
        self, message: ChunkMessage, generated: list[_GeneratedRow], conditional: list[int], policy: UrlPolicy
    ) -> dict[int, str]:
        """The rows whose host is blocked (one batched read for the whole chunk), with why."""
        guard = self._link_service.guard
        if guard is None:
            return {}
        urls = {row.index: row.url for row in generated}
        for index in conditional:
            try:
                urls[index] = normalise_url(message.rows[index][0], policy)
            except InvalidUrlError:
                continue  # reported when the row is shortened
        blocked = guard.blocked(urls.values())
        return {index: blocked[url] for index, url in urls.items() if url in blocked}

    def _fix_ids(self, message: ChunkMessage, count: int, now: datetime, expires_at: int) -> ChunkIds:
        proposed = ChunkIds(ids=self._allocate(count), created_at=now)
        fixed = self._jobs.fix_chunk_ids(message.job_id, message.chunk, proposed, expires_at)
        if len(fixed.ids) < count and not fixed.done:
            # Only when the settings changed between deliveries so that more rows need ids now.
            fixed = fixed.model_copy(update={"ids": fixed.ids + self._allocate(count - len(fixed.ids))})
        return fixed

    def _allocate(self, count: int) -> list[int]:
        ids: list[int] = []
        fingerprint = self._generator.fingerprint
        while len(ids) < count:
            # allocate_ids skips ids that custom codes reserved, so it can return fewer.
            try:
                ids.extend(self._links.allocate_ids(count - len(ids), fingerprint))
            except CounterKeyMismatchError as exc:
                raise key_changed_error(exc.stored, fingerprint) from exc
        return ids

    def _write_generated(
        self, message: ChunkMessage, rows: list[_GeneratedRow], chunk_ids: ChunkIds
    ) -> list[str]:
        links = [
            Link(
                code=self._generator.encode(link_id),
                url=row.url,
                created_at=chunk_ids.created_at,
                owner=message.owner,
                job_id=message.job_id,
            )
            for row, link_id in zip(rows, chunk_ids.ids[: len(rows)], strict=True)
        ]
        if self._find_if_exists:
            return self._write_claimed(message, links)
        self._put_batches(self._settle(links))
        return [link.code for link in links]

    def _write_claimed(self, message: ChunkMessage, links: list[Link]) -> list[str]:
        """Find-if-exists: a URL that already has a link of the owner keeps its code. Each new URL
        (once per chunk) gets its row's link written in a batch, then claimed, up to 100 claims a
        transaction; where another writer claimed the URL first, its code wins (and the link
        written here stays, unreferenced but valid)."""
        keys = [url_key(link.url, message.owner) for link in links]
        found = {key: link.code for key, link in self._links.find_claims(keys).items()}
        first_of_key: dict[str, int] = {}
        for position, key in enumerate(keys):
            if key not in found:
                first_of_key.setdefault(key, position)
        new_links = [links[position] for position in first_of_key.values()]
        self._put_batches(self._settle(new_links))
        new = list(zip(first_of_key, new_links, strict=True))
        found.update({key: link.code for key, link in self._links.claim_urls(new).items()})
        return [found[key] for key in keys]

    def _settle(self, links: list[Link]) -> list[Link]:
        """Make every code in ``links`` one that is free (or already this very link, written by an
        earlier delivery): a code held by anything else gets the code of a fresh id. ``links`` is
        updated in place; returns the links still to be written."""
        pending = list(range(len(links)))
        written_before: set[int] = set()
        while pending:
            existing = self._links.get_many([links[position].code for position in pending])
            taken = []
            for position in pending:
                stored = existing.get(links[position].code)
                if stored is None:
                    continue
                if stored == links[position]:
                    written_before.add(position)
                else:
                    taken.append(position)
            for position, link_id in zip(taken, self._allocate(len(taken)), strict=True):
                links[position] = links[position].model_copy(update={"code": self._generator.encode(link_id)})
            pending = taken
        return [link for position, link in enumerate(links) if position not in written_before]

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
            # The chunk was screened against the blocklist already.
            result = self._link_service.shorten(
                request, policy, base_url="", owner=message.owner, screen=False
            )
        except StorageThrottledError:
            # Not the row's outcome: the message fails and comes back after its visibility timeout.
            raise
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
