"""Bulk rows in messages: packing consecutive rows into SQS messages, and processing one message
(idempotently) into links and row outcomes counted on its job."""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from pydantic import ValidationError

from shortener import clock
from shortener.logic.bulk.metering import Meter, Metering, map_in_context, null_metering
from shortener.logic.bulk.results import ResultsRequester
from shortener.logic.bulk.submit import expiry
from shortener.logic.codes import CodeGenerator
from shortener.logic.links import LinkService
from shortener.logic.urls import UrlPolicy, normalise_url, url_key
from shortener.models.exceptions import InvalidUrlError, ShortenerError
from shortener.models.jobs import ChunkIds, ChunkMessage, ChunkResult, Job, JobUsage, RowOutcome
from shortener.models.links import Link, ShortenRequest

_LINKS_PER_BATCH_WRITE = 25


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
    def count_chunk(
        self,
        job_id: str,
        chunk: int,
        *,
        succeeded: int,
        failed: int,
        now: datetime,
        usage: JobUsage | None = None,
    ) -> Job | None: ...
    def get_job(self, job_id: str) -> Job | None: ...


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
        results: ResultsRequester | None = None,
        metering: Metering = null_metering,
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
        self._results = results
        self._metering = metering

    def process(self, message: ChunkMessage) -> ChunkResult:
        """Shorten every row of ``message`` and record the outcomes on its job; the count that
        completes the job asks for its results file."""
        with self._metering() as meter:
            return self._process(message, meter)

    def _process(self, message: ChunkMessage, meter: Meter) -> ChunkResult:
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
                return self._count(
                    message, succeeded=chunk_ids.succeeded, failed=chunk_ids.failed, meter=meter
                )
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
        return self._count(message, succeeded=succeeded, failed=failed, meter=meter)

    def _count(self, message: ChunkMessage, *, succeeded: int, failed: int, meter: Meter) -> ChunkResult:
        # The counting write carries the usage of this chunk's work, its own request included.
        usage = meter.take() + JobUsage(dynamodb_requests=1, write_units=1)
        job = self._jobs.count_chunk(
            message.job_id, message.chunk, succeeded=succeeded, failed=failed, now=clock.now(), usage=usage
        )
        counted = job is not None
        if job is None:
            # Counted before, by a delivery that may have died before asking for the results.
            job = self._jobs.get_job(message.job_id)
        if job is not None and job.complete and job.results is None and self._results is not None:
            self._results.request_results(message.job_id)
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
        for _ in map_in_context(self._pool, self._links.put_generated_batch, batches):
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

        return [
            pair for pairs in map_in_context(self._pool, shorten_group, by_code.values()) for pair in pairs
        ]

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
