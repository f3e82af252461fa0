"""The stack's domains: the default one (the edge's host, or DomainName) and the others of the
template's ``Domains`` parameter, each answering only its own links (docs/domains.md).

Codes are unique across the stack, not per domain: one mapping table keyed by the code, so the
API's own URL answers every domain's link by its code alone, a code is never given out twice,
and a link made before there were several domains belongs to the default domain unchanged
(its item has no ``domain``). No AWS calls."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Protocol

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from shortener.exceptions import DomainNotAllowedError, UnknownDomainError

# A host name as DNS spells it (letters, digits, hyphens, dots), or a loopback host and port of the
# local stack; compared in lower case.
DomainName = Annotated[
    str,
    Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$"),
    AfterValidator(str.lower),
]


@dataclass(frozen=True)
class ShortUrls:
    """Where each domain's short links answer: the default domain's base (``default_base``, the
    request's when nothing is configured) and the other domains' bases by name, each ending "/"."""

    default_base: str
    default_name: str = ""
    others: Mapping[str, str] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """Every domain's name, the default first."""
        return (self.default_name or _host_of(self.default_base), *self.others)

    def name_of(self, domain: str | None) -> str:
        """The name of a link's domain (None: the default domain)."""
        return domain if domain else self.names[0]

    def base_for(self, domain: str | None) -> str:
        """The base of short URLs on ``domain`` (None, or a domain not configured any more: the
        default domain's, where such a link still answers through the API's own URL)."""
        return self.others.get(domain, self.default_base) if domain else self.default_base

    def short_url(self, domain: str | None, code: str) -> str:
        return self.base_for(domain) + code

    def stored(self, wanted: str | None) -> str | None:
        """The ``domain`` a new link on ``wanted`` stores: None for the default domain (as every
        link made before there were several), else the name; UnknownDomainError for a name the
        stack does not serve."""
        if wanted is None or wanted.lower() == self.names[0].lower():
            return None
        name = wanted.lower()
        if name not in self.others:
            served = ", ".join(self.names)
            raise UnknownDomainError(f"This stack has no domain '{wanted[:253]}'; its domains are: {served}.")
        return name

    def for_caller(self, wanted: str | None, caller: "DomainRule") -> str | None:
        """``stored(wanted)``, when the caller may use that domain (DomainNotAllowedError if not).
        A caller who may not use the default domain gets the first domain they may use when they
        name none."""
        if wanted is None and not caller.may_use_domain(self.names[0]):
            wanted = next((name for name in self.names if caller.may_use_domain(name)), None)
        domain = self.stored(wanted)
        name = self.name_of(domain)
        if not caller.may_use_domain(name):
            usable = [other for other in self.names if caller.may_use_domain(other)]
            raise DomainNotAllowedError(
                f"You may not make links on {name}"
                + (f"; you may use {', '.join(usable)}." if usable else ".")
            )
        return domain

    def domain_of_host(self, host: str | None) -> str | None:
        """The domain a request's host names (None: the default domain, also for a host that is no
        other domain's, such as the distribution's own name)."""
        name = (host or "").strip().lower().rstrip(".")
        return name if name in self.others else None


class DomainView(BaseModel):
    """One domain as ``GET /domains`` shows it."""

    name: str
    default: bool = Field(description="Links made without a domain answer on this one.")
    short_url_base: str = Field(description="What this domain's short URLs start with.")
    allowed: bool = Field(description="Whether the caller may make links on it.")


class DomainList(BaseModel):
    """``GET /domains``: the default domain first."""

    domains: list[DomainView]


class DomainRule(Protocol):
    """What ``ShortUrls.for_caller`` asks of a caller (shortener.access.model.Caller)."""

    def may_use_domain(self, domain: str) -> bool: ...


class JobDomains(BaseModel):
    """The stack's domains and those a bulk job's submitter may use, as they were when the job was
    submitted: the loops that make its links do not know the caller, so each row's domain is
    checked against these, and its results make each row's short URL on its own domain."""

    model_config = ConfigDict(frozen=True)

    # Every domain's name, the default first.
    names: tuple[str, ...] = Field(min_length=1)
    # Where the other domains' short links answer, by name.
    others: dict[str, str] = {}
    # The names the submitter may use; None: every one.
    allowed: tuple[str, ...] | None = None

    @classmethod
    def of(cls, urls: ShortUrls, caller: DomainRule) -> "JobDomains":
        usable = tuple(name for name in urls.names if caller.may_use_domain(name))
        return cls(
            names=urls.names, others=dict(urls.others), allowed=None if usable == urls.names else usable
        )

    def may_use_domain(self, domain: str) -> bool:
        return self.allowed is None or domain.lower() in self.allowed

    def short_urls(self, default_base: str) -> ShortUrls:
        """Where each domain's short links answer, the default domain's at ``default_base``."""
        return ShortUrls(default_base, self.names[0], self.others)

    def for_row(self, wanted: str | None) -> str | None:
        """The ``domain`` a row's link on ``wanted`` stores (None: the default domain), as
        ``ShortUrls.for_caller`` judges it for the submitter."""
        return self.short_urls("").for_caller(wanted, self)


def _host_of(base: str) -> str:
    return base.split("://", 1)[-1].split("/", 1)[0].lower()


# Where nothing reads the short URL (a bulk job's rows: its results file makes them).
NO_SHORT_URLS = ShortUrls("")
