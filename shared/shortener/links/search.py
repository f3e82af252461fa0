"""What ``GET /links`` filters by: the words of a search (``q``), a tag, a bulk job and a status.

A link's words are the letters-and-digits runs of its code, its URL's host and path, its title
and its tags, case-folded (``https://Shop.example/Spring-Sale`` has ``shop``, ``example``,
``spring``, ``sale``). A search matches a link when each of its own words (split the same way) is
a word of the link or the start of one, in any letter case: ``Spring sa`` finds that link,
``example.com/1`` finds ``https://example.com/12``. Pure: the store reads, this decides."""

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from shortener.links.model import Link

# What the link list shows as a link's status: disabled wins over expired.
ListedStatus = Literal["active", "disabled", "expired"]
LISTED_STATUSES: tuple[ListedStatus, ...] = ("active", "disabled", "expired")

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The case-folded letters-and-digits runs of ``text``, in order."""
    return _WORD.findall(text.casefold())


def link_words(link: Link) -> frozenset[str]:
    """Every word a search may start: of the code, the host, the path, the title and the tags."""
    return frozenset(words(" ".join((link.code, _host_and_path(link.url), link.title, *link.tags))))


def search_text(link: Link) -> str:
    """The link's words as stored on its item (``words``): each after a space, so that
    ``contains(words, " " + w)`` is true when a word starts with ``w`` (DynamoDB filters by it).
    Built for every bulk link: plain string work, no URL parser."""
    return "".join(" " + word for word in sorted(link_words(link)))


def _host_and_path(url: str) -> str:
    """``url`` without its scheme, query and fragment (a normalised URL: ``scheme://host/path?...``)."""
    rest = url.partition("://")[2] or url
    for mark in "?#":
        rest = rest.partition(mark)[0]
    return rest


def listed_status(link: Link, now: datetime) -> ListedStatus:
    """The status the link list shows: disabled, else expired (past its time or clicks), else active."""
    if link.status == "disabled":
        return "disabled"
    return "expired" if link.expired(now) else "active"


# ``LinkFilter.domain`` of the default domain, whose links store none.
DEFAULT_DOMAIN = ""


@dataclass(frozen=True, slots=True)
class LinkFilter:
    """The filters of one listing; an empty one lets every link through."""

    q: tuple[str, ...] = ()
    tag: str | None = None
    job_id: str | None = None
    status: ListedStatus | None = None
    # Only one domain's links: its stored name, or DEFAULT_DOMAIN (None: every domain's).
    domain: str | None = None

    @classmethod
    def of(
        cls,
        *,
        q: str | None = None,
        tag: str | None = None,
        job_id: str | None = None,
        status: str | None = None,
        domain: str | None = None,
    ) -> "LinkFilter":
        """The filter of a request's parameters (empty ones are absent); ``status`` already checked,
        ``domain`` as links store it (DEFAULT_DOMAIN: the default domain's)."""
        listed = next((known for known in LISTED_STATUSES if known == status), None)
        return cls(
            q=tuple(words(q or "")), tag=tag or None, job_id=job_id or None, status=listed, domain=domain
        )

    @property
    def empty(self) -> bool:
        return not (self.q or self.tag or self.job_id or self.status or self.domain is not None)

    def matches(self, link: Link, now: datetime) -> bool:
        if self.tag is not None and self.tag not in link.tags:
            return False
        if self.job_id is not None and link.job_id != self.job_id:
            return False
        if self.status is not None and listed_status(link, now) != self.status:
            return False
        if self.domain is not None and (link.domain or DEFAULT_DOMAIN) != self.domain:
            return False
        return not self.q or matches_words(self.q, link_words(link))


def matches_words(wanted: tuple[str, ...], have: frozenset[str]) -> bool:
    """Whether each wanted word is one of ``have`` or the start of one."""
    return all(word in have or any(candidate.startswith(word) for candidate in have) for word in wanted)
