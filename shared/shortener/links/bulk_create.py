"""``POST /links/bulk``: up to 1,000 links shortened in the call, each as ``POST /`` would, with
the bulk path's batched writes (generated codes: one batched read, BatchWriteItem of 25, claims
100 a transaction; custom codes: a conditional write each, in parallel)."""

import json
import uuid
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import ValidationError

from shortener import clock
from shortener.access.blocklist import HostGuard
from shortener.access.model import Caller
from shortener.exceptions import (
    BlockedHostError,
    InvalidFieldsError,
    PayloadTooLargeError,
    ShortenerError,
)
from shortener.jobs.metering import map_in_context
from shortener.jobs.quotas import DailyQuota
from shortener.links.bulk_create_model import (
    MAX_BULK_BYTES,
    MAX_BULK_LINKS,
    BulkLinkItem,
    BulkLinkOutcome,
    BulkLinksEnvelope,
)
from shortener.links.bulk_writes import GeneratedLinks, GeneratedLinkWriter
from shortener.links.codes import CodeGenerator
from shortener.links.domains import ShortUrls
from shortener.links.model import Link, link_fields
from shortener.links.rules_model import with_normalised_rules
from shortener.links.shortening import IdPool, LinkService, check_rule_hosts
from shortener.links.urls import UrlPolicy, normalise_url
from shortener.request_model import invalid_fields, problems

# A message names what is wrong, not the whole (up to 32 KB) URL again.
_MESSAGE_CHARS = 300


def read_bulk_request(raw: bytes, fields_of: Any) -> list[Any]:
    """The links of a ``POST /links/bulk`` body (each still to be read), or PayloadTooLargeError
    above 1 MB or 1,000 links. ``fields_of`` parses the body (``shortener.http.web.parse_fields``)."""
    if len(raw) > MAX_BULK_BYTES:
        raise PayloadTooLargeError(
            f"The body is {len(raw):,} bytes; POST /links/bulk takes up to {MAX_BULK_BYTES:,} "
            "(split the links into several calls, or upload a CSV file to POST /bulk/uploads)."
        )
    fields = fields_of(raw)
    links = fields.get("links")
    if isinstance(links, list) and len(links) > MAX_BULK_LINKS:
        raise PayloadTooLargeError(
            f"{len(links):,} links; POST /links/bulk takes up to {MAX_BULK_LINKS:,} a call "
            "(split them, or upload a CSV file to POST /bulk)."
        )
    try:
        return BulkLinksEnvelope.model_validate(fields).links
    except ValidationError as exc:
        raise InvalidFieldsError(
            f'Send {{"links": [{{"url": ...}}, ...]}} with 1 to 1,000 links ({problems(exc)}).'
        ) from exc


class BulkCreate:
    """Shortens a list of links in the call. One instance per container (it keeps a pool of ids
    and of writer threads)."""

    def __init__(
        self,
        links: GeneratedLinks,
        link_service: LinkService,
        generator: CodeGenerator,
        *,
        strategy: str = "counter",
        find_if_exists: bool = True,
        threads: int = 8,
        quota: DailyQuota | None = None,
    ) -> None:
        self._link_service = link_service
        # Each owner's daily rows: every link of a call counts (docs/security.md).
        self._quota = quota
        self._generator = generator
        self._strategy = strategy
        self._find_if_exists = find_if_exists
        # One counter write per block of up to a call's worth of ids.
        self._ids = IdPool(links, MAX_BULK_LINKS, generator.fingerprint)
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bulk-json-writer")
        self._writer = GeneratedLinkWriter(links, self._ids, generator, self._pool)

    def shorten(
        self, items: Sequence[Any], policy: UrlPolicy, urls: ShortUrls, *, caller: Caller
    ) -> list[BulkLinkOutcome]:
        """One outcome per item, in input order; QuotaExceededError (429, nothing written) when
        the call's links do not fit the caller's daily quota of rows. An item on a domain the
        caller may not use is that item's 403 outcome."""
        owner = caller.owner_id
        if self._quota is not None:
            self._quota.require(owner, rows=len(items), size=0, what="These links")
        # The links of one call sharing a password share its hash (shortener.links.passwords).
        scope = uuid.uuid4().hex
        outcomes: list[BulkLinkOutcome | None] = [None] * len(items)
        requests: dict[int, BulkLinkItem] = {}
        targets: dict[int, str] = {}
        for index, item in enumerate(items):
            try:
                request = with_normalised_rules(_read_item(item), policy)
                request = request.model_copy(update={"domain": urls.for_caller(request.domain, caller)})
                targets[index] = normalise_url(request.url, policy)
                requests[index] = request
            except ShortenerError as exc:
                outcomes[index] = _failed(exc)
        guard = self._link_service.guard
        blocked = guard.blocked(targets.values()) if guard is not None else {}
        generated: list[int] = []
        conditional: list[int] = []
        for index, request in requests.items():
            if targets[index] in blocked:
                outcomes[index] = _failed(BlockedHostError(blocked[targets[index]]))
            elif (refused := _blocked_rule(guard, request)) is not None:
                outcomes[index] = _failed(refused)
            elif request.code or self._strategy == "hash":
                conditional.append(index)
            else:
                generated.append(index)
        if generated:
            links = [
                self._link(requests[index], targets[index], owner, link_id, scope)
                for index, link_id in zip(generated, self._ids.take(len(generated)), strict=True)
            ]
            written = self._writer.write(links, find_if_exists=self._find_if_exists)
            for index, outcome in zip(generated, written, strict=True):
                outcomes[index] = BulkLinkOutcome(
                    status=201 if outcome.created else 200,
                    code=outcome.code,
                    short_url=urls.short_url(requests[index].domain, outcome.code),
                    domain=urls.name_of(requests[index].domain),
                    url=targets[index],
                )
        for index, outcome in self._write_conditional(
            conditional, requests, policy, urls, owner, scope=scope
        ):
            outcomes[index] = outcome
        return [outcome for outcome in outcomes if outcome is not None]

    def _link(self, request: BulkLinkItem, url: str, owner: str | None, link_id: int, scope: str) -> Link:
        return Link(
            code=self._generator.encode(link_id),
            url=url,
            created_at=clock.now(),
            owner=owner,
            # Campaign links (docs/campaign-links.md): a link with limits is one of its own, never
            # found by its URL (shortener.links.bulk_writes).
            **link_fields(request, scope=scope),
        )

    def _write_conditional(
        self,
        indexes: list[int],
        requests: dict[int, BulkLinkItem],
        policy: UrlPolicy,
        urls: ShortUrls,
        owner: str | None,
        *,
        scope: str,
    ) -> list[tuple[int, BulkLinkOutcome]]:
        """Custom codes (and every link under the hash strategy): a conditional write each, as
        ``POST /`` makes it. Links asking for the same code run in input order: the first wins."""
        by_code: dict[str, list[int]] = defaultdict(list)
        for index in indexes:
            by_code[requests[index].code or f"#{index}"].append(index)

        def shorten_one(index: int) -> BulkLinkOutcome:
            try:
                result = self._link_service.shorten(
                    requests[index], policy, urls, owner=owner, screen=False, counted=True, scope=scope
                )
            except ShortenerError as exc:
                return _failed(exc)
            return BulkLinkOutcome(
                status=201 if result.created else 200,
                code=result.code,
                short_url=result.short_url,
                domain=result.domain,
                url=result.url,
            )

        def shorten_group(group: list[int]) -> list[tuple[int, BulkLinkOutcome]]:
            return [(index, shorten_one(index)) for index in group]

        return [
            pair for pairs in map_in_context(self._pool, shorten_group, by_code.values()) for pair in pairs
        ]


def _blocked_rule(guard: HostGuard | None, request: BulkLinkItem) -> BlockedHostError | None:
    # Only links with rules read the blocklist again (a plain call keeps its one batched read).
    if guard is None or not request.has_rule_urls:
        return None
    try:
        check_rule_hosts(guard, link_fields(request))
    except BlockedHostError as exc:
        return exc
    return None


def _read_item(item: Any) -> BulkLinkItem:
    if not isinstance(item, dict):
        raise InvalidFieldsError(
            f'A link is an object such as {{"url": "https://example.com/"}}, not {_kind(item)}.'
        )
    try:
        return BulkLinkItem.model_validate(item)
    except ValidationError as exc:
        raise invalid_fields(exc) from exc


def _kind(item: Any) -> str:
    return json.dumps(item)[:40] if not isinstance(item, list) else "a list"


def _failed(error: ShortenerError) -> BulkLinkOutcome:
    message = (
        error.message if len(error.message) <= _MESSAGE_CHARS else error.message[: _MESSAGE_CHARS - 1] + "…"
    )
    return BulkLinkOutcome(status=error.status_code, error=error.error, message=message)
