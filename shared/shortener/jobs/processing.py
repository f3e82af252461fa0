"""Bulk rows in messages: packing consecutive rows into SQS messages, and processing one message
(idempotently) into links and row outcomes counted on its job."""

import functools
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from pydantic import ValidationError

from shortener import clock
from shortener.exceptions import (
    AnswersEachVisitorError,
    InvalidUrlError,
    ShortenerError,
    StorageThrottledError,
)
from shortener.jobs.chunk_outcomes import (
    ChunkOutcomes,
    ResultsRequester,
    expiry,
    fail_chunk,
    request_results_if_complete,
)
from shortener.jobs.message_model import ChunkMessage, ChunkResult
from shortener.jobs.metering import Meter, Metering, map_in_context, null_metering
from shortener.jobs.model import ChunkIds, JobUsage, RowOutcome
from shortener.links.bulk_writes import GeneratedLinks, GeneratedLinkWriter
from shortener.links.codes import CodeGenerator
from shortener.links.domains import NO_SHORT_URLS, JobDomains
from shortener.links.model import Link, LinkAttributes, ShortenRequest, attributes_of, link_fields
from shortener.links.rules_model import rule_urls, with_normalised_rules
from shortener.links.shortening import IdPool, LinkService
from shortener.links.urls import UrlPolicy, normalise_url
from shortener.request_model import problems

# A message from before jobs had domains: every row on the stack's default domain, which it
# names as "" (ShortUrls.stored maps no name to it).
_ONE_DOMAIN = JobDomains(names=("",))
# Eight chunks of the loop's 250 rows: a container that ends mid-block leaves at most this many
# ids unused.
_ID_BLOCK = 2_000


class ChunkLinks(GeneratedLinks, Protocol):
    """What chunk processing needs of the links table (``shortener.links.store.LinksStore``)."""


class ChunkRecords(ChunkOutcomes, Protocol):
    """What chunk processing needs of the jobs table (``shortener.jobs.store.JobsStore``)."""

    def fix_chunk_ids(self, job_id: str, chunk: int, proposed: ChunkIds, expires_at: int) -> ChunkIds: ...


@dataclass(frozen=True, slots=True)
class _GeneratedRow:
    index: int
    url: str  # normalised
    attributes: LinkAttributes | None = None
    domain: str | None = None  # as the link stores it (None: the default domain)


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
        # A chunk takes its ids from the container's pool: one counter write (and one read of the
        # custom codes' reservations) per block of up to _ID_BLOCK ids instead of per chunk.
        self._ids = IdPool(links, _ID_BLOCK, generator.fingerprint)
        # Writes of one chunk go out in parallel: each request waits on the network, not the CPU.
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="chunk-writer")
        self._writer = GeneratedLinkWriter(links, self._ids, generator, self._pool)
        self._results = results
        self._metering = metering

    def check_ready(self) -> None:
        """CodeKeyChangedError when codes must not be written (the code key changed): the loop
        then leaves the queued rows alone."""
        self._link_service.check_code_key()

    def process(self, message: ChunkMessage) -> ChunkResult:
        """Shorten every row of ``message`` and record the outcomes on its job; the count that
        completes the job asks for its results file."""
        with self._metering() as meter:
            return self._process(message, meter)

    def fail(self, message: ChunkMessage, error: str) -> ChunkResult:
        """Fail every row of ``message`` with ``error`` (its last attempt failed), unless a delivery
        recorded the chunk first, and count it once, as a dead-letter settlement does."""
        recorded = fail_chunk(
            self._jobs, message, error, retention_days=self._retention_days, results=self._results
        )
        return ChunkResult(succeeded=recorded.succeeded, failed=recorded.failed, counted=recorded.dead_letter)

    def _process(self, message: ChunkMessage, meter: Meter) -> ChunkResult:
        now = clock.now()
        expires_at = expiry(now, self._retention_days)
        job_domains = message.domains or _ONE_DOMAIN
        # The rows of a message name few domains: each is judged once (a refusal is not kept).
        domain_for = functools.cache(job_domains.for_row)
        # A link to one of the stack's short domains would lead back to the shortener.
        policy = self._policy.with_own_host(message.own_host, *message.own_hosts, *job_domains.names)
        outcomes: list[RowOutcome | None] = [None] * len(message.rows)
        generated: list[_GeneratedRow] = []
        conditional: list[int] = []
        attributes: dict[int, LinkAttributes] = {}
        # Each row's domain, as its link stores it (checked for the uploader: a row error if not).
        domains: dict[int, str | None] = {}
        for index, (url, code) in enumerate(message.rows):
            if message.refused:
                outcomes[index] = RowOutcome(row=message.row_number(index), url=url, error=message.refused)
                continue
            if index in message.problems:
                # A line of the file that could not be read: its row error says why.
                outcomes[index] = RowOutcome(
                    row=message.row_number(index), url=url, error=f"invalid_row: {message.problems[index]}"
                )
                continue
            read = _read_row(message, index, url, domain_for)
            if isinstance(read, RowOutcome):
                outcomes[index] = read
                continue
            found, domains[index] = read
            if found is not None:
                attributes[index] = found
            if code or self._strategy == "hash":
                conditional.append(index)
                continue
            try:
                generated.append(_generated_row(index, url, attributes, domains[index], policy))
            except (InvalidUrlError, AnswersEachVisitorError) as exc:
                outcomes[index] = _row_error(message, index, url, exc)
        for index, error in self._screen(message, generated, conditional, policy, attributes).items():
            outcomes[index] = RowOutcome(
                row=message.row_number(index), url=message.rows[index][0], error=f"blocked_host: {error}"
            )
        generated = [row for row in generated if outcomes[row.index] is None]
        conditional = [index for index in conditional if outcomes[index] is None]

        if generated:
            chunk_ids = self._fix_ids(message, len(generated), now, expires_at)
            if chunk_ids.done:
                # Recorded before; counting may not have happened if that delivery died just then.
                return self._count(
                    message, succeeded=chunk_ids.succeeded, failed=chunk_ids.failed, meter=meter
                )
            codes = self._write_generated(message, generated, chunk_ids)
            for row, code in zip(generated, codes, strict=True):
                outcomes[row.index] = RowOutcome(
                    row=message.row_number(row.index), url=row.url, code=code, domain=row.domain
                )
        for index, outcome in self._write_conditional(message, conditional, policy, attributes, domains):
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
        return self._count(message, succeeded=recorded.succeeded, failed=recorded.failed, meter=meter)

    def _count(self, message: ChunkMessage, *, succeeded: int, failed: int, meter: Meter) -> ChunkResult:
        # The counting write carries the usage of this chunk's work, its own request included.
        usage = meter.take() + JobUsage(dynamodb_requests=1, write_units=1)
        job = self._jobs.count_chunk(
            message.job_id, message.chunk, succeeded=succeeded, failed=failed, now=clock.now(), usage=usage
        )
        request_results_if_complete(self._jobs, message.job_id, job, self._results)
        return ChunkResult(succeeded=succeeded, failed=failed, counted=job is not None)

    def _screen(
        self,
        message: ChunkMessage,
        generated: list[_GeneratedRow],
        conditional: list[int],
        policy: UrlPolicy,
        attributes: dict[int, LinkAttributes],
    ) -> dict[int, str]:
        """The rows whose host (or a rule's) is blocked (one batched read for the whole chunk),
        with why."""
        guard = self._link_service.guard
        if guard is None:
            return {}
        urls = {row.index: row.url for row in generated}
        for index in conditional:
            try:
                urls[index] = normalise_url(message.rows[index][0], policy)
            except InvalidUrlError:
                continue  # reported when the row is shortened
        # Rule URLs: the generated rows' are normalised already; a conditional row's are screened
        # again when it is shortened.
        rules = {
            index: rule_urls(link_fields(attributes[row.index]))
            for row in generated
            if (index := row.index) in attributes
        }
        blocked = guard.blocked([*urls.values(), *(url for found in rules.values() for _, url in found)])
        refused = {index: blocked[url] for index, url in urls.items() if url in blocked}
        for index, found in rules.items():
            for name, url in found:
                if url in blocked and index not in refused:
                    refused[index] = f"{name}: {blocked[url]}"
        return refused

    def _fix_ids(self, message: ChunkMessage, count: int, now: datetime, expires_at: int) -> ChunkIds:
        proposed = ChunkIds(ids=self._ids.take(count), created_at=now)
        fixed = self._jobs.fix_chunk_ids(message.job_id, message.chunk, proposed, expires_at)
        if fixed.ids != proposed.ids:
            # A redelivery: the chunk keeps the ids its first delivery fixed.
            self._ids.give_back(proposed.ids)
        if len(fixed.ids) < count and not fixed.done:
            # Only when the settings changed between deliveries so that more rows need ids now.
            fixed = fixed.model_copy(update={"ids": fixed.ids + self._ids.take(count - len(fixed.ids))})
        return fixed

    def _write_generated(
        self, message: ChunkMessage, rows: list[_GeneratedRow], chunk_ids: ChunkIds
    ) -> list[str]:
        links = [
            _with_attributes(
                Link(
                    code=self._generator.encode(link_id),
                    url=row.url,
                    created_at=chunk_ids.created_at,
                    owner=message.owner,
                    job_id=message.job_id,
                    row=message.row_number(row.index),
                ),
                row.attributes,
                message.job_id,
                row.domain,
            )
            for row, link_id in zip(rows, chunk_ids.ids[: len(rows)], strict=True)
        ]
        return [written.code for written in self._writer.write(links, find_if_exists=self._find_if_exists)]

    def _write_conditional(
        self,
        message: ChunkMessage,
        indexes: list[int],
        policy: UrlPolicy,
        attributes: dict[int, LinkAttributes],
        domains: dict[int, str | None],
    ) -> list[tuple[int, RowOutcome]]:
        """Rows with a custom code (and every row under the hash strategy): a conditional write
        each. Rows asking for the same code run in input order, so the first one wins."""
        by_code: dict[str, list[int]] = defaultdict(list)
        for index in indexes:
            _, code = message.rows[index]
            by_code[code or f"#row{index}"].append(index)

        def shorten_group(group: list[int]) -> list[tuple[int, RowOutcome]]:
            return [
                (index, self._shorten_one(message, index, policy, attributes.get(index), domains[index]))
                for index in group
            ]

        return [
            pair for pairs in map_in_context(self._pool, shorten_group, by_code.values()) for pair in pairs
        ]

    def _shorten_one(
        self,
        message: ChunkMessage,
        index: int,
        policy: UrlPolicy,
        attributes: LinkAttributes | None,
        domain: str | None,
    ) -> RowOutcome:
        url, code = message.rows[index]
        try:
            if not url:
                raise InvalidUrlError("The URL is empty.")
            request = ShortenRequest(url=url, code=code or None)
            if attributes is not None:
                # Validated already (the future of expires_at included): copied, not checked again.
                request = request.model_copy(update={**dict(attributes), "preview": attributes.preview})
            request = request.model_copy(update={"domain": domain})
            # The chunk was screened against the blocklist already.
            result = self._link_service.shorten(
                request,
                policy,
                NO_SHORT_URLS,
                owner=message.owner,
                screen=False,
                counted=True,
                scope=message.job_id,
                row=message.row_number(index),
            )
        except StorageThrottledError:
            # Not the row's outcome: the message fails and comes back after its visibility timeout.
            raise
        except ShortenerError as exc:
            return _row_error(message, index, url, exc)
        except ValidationError as exc:
            problem = problems(exc, fields=False)
            return RowOutcome(row=message.row_number(index), url=url, error=f"invalid_request: {problem}")
        return RowOutcome(row=message.row_number(index), url=result.url, code=result.code, domain=domain)


def _generated_row(
    index: int, url: str, attributes: dict[int, LinkAttributes], domain: str | None, policy: UrlPolicy
) -> _GeneratedRow:
    """The row with its URL and its rules' URLs normalised (InvalidUrlError naming the field;
    AnswersEachVisitorError where the stage caches redirects by path)."""
    if index in attributes:
        attributes[index] = with_normalised_rules(attributes[index], policy)
    return _GeneratedRow(index, normalise_url(url, policy), attributes.get(index), domain)


def _read_row(
    message: ChunkMessage, index: int, url: str, domain_for: Callable[[str | None], str | None]
) -> RowOutcome | tuple[LinkAttributes | None, str | None]:
    """The row's attributes and the domain its link stores, or its row error: an invalid cell, or
    a domain the stack does not serve or the uploader may not use."""
    try:
        found = _attributes(message, index)
        return found, domain_for(found.domain if found is not None else None)
    except ValidationError as exc:
        return _invalid_row(message, index, url, exc)
    except ShortenerError as exc:
        return _row_error(message, index, url, exc)


def _attributes(message: ChunkMessage, index: int) -> LinkAttributes | None:
    if not message.defaults and not message.attributes:
        return None
    return attributes_of(message.defaults, message.attributes.get(index))


def _invalid_row(message: ChunkMessage, index: int, url: str, error: ValidationError) -> RowOutcome:
    return RowOutcome(row=message.row_number(index), url=url, error=f"invalid_request: {problems(error)}.")


def _with_attributes(link: Link, attributes: LinkAttributes | None, job_id: str, domain: str | None) -> Link:
    if attributes is None:
        return link.model_copy(update={"domain": domain}) if domain else link
    # Rows of one job sharing a password share its hash (shortener.links.passwords); the domain
    # as checked, not as the cell wrote it.
    return link.model_copy(update=link_fields(attributes, scope=job_id) | {"domain": domain})


def _row_error(message: ChunkMessage, index: int, url: str, error: ShortenerError) -> RowOutcome:
    return RowOutcome(row=message.row_number(index), url=url, error=f"{error.error}: {error.message}")
