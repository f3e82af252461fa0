"""Writing many generated links at once: BatchWriteItem of 25 links a request after one batched
read that makes sure no code is taken, and find-if-exists claims up to 100 a transaction. Used by
the bulk jobs' chunks and by ``POST /links/bulk``."""

from collections.abc import Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Protocol

from shortener.jobs.metering import map_in_context
from shortener.links.codes import CodeGenerator
from shortener.links.model import Link
from shortener.links.shortening import IdPool
from shortener.links.urls import url_key

LINKS_PER_BATCH_WRITE = 25


class GeneratedLinks(Protocol):
    """What writing generated links needs of the links table (``shortener.links.store.LinksStore``)."""

    def allocate_ids(self, count: int, key_fingerprint: str) -> list[int]: ...
    def get_many(self, codes: Sequence[str]) -> dict[str, Link]: ...
    def put_generated_batch(self, links: Iterable[Link]) -> None: ...
    def find_claims(self, keys: Sequence[str]) -> dict[str, Link]: ...
    def claim_urls(self, claims: Sequence[tuple[str, Link]]) -> dict[str, Link]: ...


@dataclass(frozen=True, slots=True)
class Written:
    """The code a link got, and whether it is the link written here (False: an existing link of
    the same owner and URL, find-if-exists)."""

    code: str
    created: bool


class GeneratedLinkWriter:
    """Writes links whose codes come from the id counter, in batches, never overwriting one."""

    def __init__(self, links: GeneratedLinks, ids: IdPool, generator: CodeGenerator, pool: Executor) -> None:
        self._links = links
        self._ids = ids
        self._generator = generator
        self._pool = pool

    def write(self, links: list[Link], *, find_if_exists: bool) -> list[Written]:
        """Write ``links`` (codes made from their ids); the code each one ends with, in order."""
        limited = [position for position, link in enumerate(links) if link.one_of_its_own]
        if not find_if_exists or len(limited) == len(links):
            self._put_batches(self.settle(links))
            return [Written(link.code, created=True) for link in links]
        if not limited:
            return self._write_claimed(links)
        # A link with limits (expires_at, max_clicks) is a link of its own, as with POST /: never
        # claimed for its URL, nor found by it.
        unlimited = [position for position, link in enumerate(links) if not link.one_of_its_own]
        written: list[Written] = [Written("", created=False)] * len(links)
        own = [links[position] for position in limited]
        self._put_batches(self.settle(own))
        for position, link in zip(limited, own, strict=True):
            links[position] = link
            written[position] = Written(link.code, created=True)
        claimed = self._write_claimed([links[position] for position in unlimited])
        for position, result in zip(unlimited, claimed, strict=True):
            written[position] = result
        return written

    def _write_claimed(self, links: list[Link]) -> list[Written]:
        """Find-if-exists: a URL that already has a link of the owner keeps its code. Each new URL
        (once per call) gets its first link written in a batch, then claimed, up to 100 claims a
        transaction; where another writer claimed the URL first, its code wins (and the link
        written here stays, unreferenced but valid)."""
        keys = [url_key(link.url, link.owner) for link in links]
        found = {key: link.code for key, link in self._links.find_claims(keys).items()}
        first_of_key: dict[str, int] = {}
        for position, key in enumerate(keys):
            if key not in found:
                first_of_key.setdefault(key, position)
        new_links = [links[position] for position in first_of_key.values()]
        self._put_batches(self.settle(new_links))
        new = list(zip(first_of_key, new_links, strict=True))
        won = {key: link.code for key, link in self._links.claim_urls(new).items()}
        found.update(won)
        created = {first_of_key[key] for key, link in new if won.get(key) == link.code}
        return [Written(found[key], position in created) for position, key in enumerate(keys)]

    def settle(self, links: list[Link]) -> list[Link]:
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
                if _same_link(stored, links[position]):
                    written_before.add(position)
                else:
                    taken.append(position)
            for position, link_id in zip(taken, self._ids.take(len(taken)), strict=True):
                links[position] = links[position].model_copy(update={"code": self._generator.encode(link_id)})
            pending = taken
        return [link for position, link in enumerate(links) if position not in written_before]

    def _put_batches(self, links: list[Link]) -> None:
        batches = [
            links[start : start + LINKS_PER_BATCH_WRITE]
            for start in range(0, len(links), LINKS_PER_BATCH_WRITE)
        ]
        for _ in map_in_context(self._pool, self._links.put_generated_batch, batches):
            pass


def _same_link(stored: Link, link: Link) -> bool:
    """Whether ``stored`` is ``link`` written by an earlier delivery (clicks it got since aside;
    its password hashed by another container, so with another salt)."""
    if stored.password_hash is not None and link.password_hash is not None:
        stored = stored.model_copy(update={"password_hash": link.password_hash})
    return stored == link or (stored.click_limited and stored.model_copy(update={"clicks": 0}) == link)
