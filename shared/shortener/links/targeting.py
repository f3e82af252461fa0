"""Where a link sends one visitor: a pure decision over the link's rules and what the request says
of the visitor (no I/O; the random draw is passed in, so tests seed it).

Precedence (docs/api.md, "Link rules"): the device (``ios_url``, ``android_url``), then the
country (``geo``), then a weighted draw among ``variants`` (each request draws anew: no cookie
keeps a returning visitor's variant), then ``url``. UTM tags are merged into whatever wins (the
destination's own query kept, a ``utm_*`` given replacing the destination's own); with
``forward_query`` the short URL's own query is appended.

Checks that answer before any destination (the password page, a crawler's preview) run before
``decide`` in the redirect (shortener.links.shortening ``LinkService.follow``'s hook), never inside it.

The device comes from CloudFront's ``CloudFront-Is-IOS-Viewer`` / ``CloudFront-Is-Android-Viewer``
headers where the edge sent them, else from the user agent (ua-parser, as the clicks read it); the
country from ``CloudFront-Viewer-Country`` ("Adding CloudFront request headers",
https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/adding-cloudfront-headers.html)."""

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal
from urllib.parse import unquote_plus, urlencode, urlsplit, urlunsplit

from shortener.links.rules_model import StoredRules

Device = Literal["ios", "android", "other"]
_IOS_FAMILIES = frozenset({"iOS", "iPadOS"})


@dataclass(frozen=True, slots=True)
class Visitor:
    """What a redirect knows of who follows it."""

    device: Device = "other"
    country: str | None = None
    # The short URL's own query string (without "?"), passed on with forward_query.
    query: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    """The destination and the rule that answered (``default``, ``ios``, ``android``, ``geo:DE``,
    ``variant:2``; variants counted from 1)."""

    url: str
    rule: str


def visitor_of(headers: Mapping[str, str], query: str = "") -> Visitor:
    """The visitor a request's headers describe (header names in any case)."""
    lower = {name.lower(): value for name, value in headers.items()}
    country = (lower.get("cloudfront-viewer-country") or "").strip().upper() or None
    return Visitor(device=_device(lower), country=country, query=query)


def _device(headers: Mapping[str, str]) -> Device:
    # The edge's own answer wins: it reads the same user agent with its own, maintained list.
    if "cloudfront-is-ios-viewer" in headers or "cloudfront-is-android-viewer" in headers:
        if headers.get("cloudfront-is-ios-viewer", "").strip().lower() == "true":
            return "ios"
        if headers.get("cloudfront-is-android-viewer", "").strip().lower() == "true":
            return "android"
        return "other"
    return device_of_agent(headers.get("user-agent", ""))


@lru_cache(maxsize=4096)
def device_of_agent(user_agent: str) -> Device:
    """``ios`` for an iPhone, iPad or iPod, ``android`` for an Android device, ``other`` else."""
    if not user_agent:
        return "other"
    # Imported here: only a link with an ios_url or android_url reads the user agent, and loading
    # ua-parser's tables would add to every cold start of the API function (make bench ARGS=links).
    import ua_parser

    parsed = ua_parser.parse_os(user_agent)
    family = parsed.family if parsed else ""
    if family in _IOS_FAMILIES:
        return "ios"
    if family == "Android":
        return "android"
    return "other"


def decide(
    link: StoredRules, url: str, visitor: Visitor, draw: Callable[[], float] = random.random
) -> Decision:
    """Where ``visitor`` goes for a link whose default destination is ``url`` and whose rules are
    ``link``'s; ``draw`` gives a number in [0, 1) (the variant draw)."""
    chosen = _chosen(link, url, visitor, draw)
    return Decision(url=_with_query(chosen.url, link, visitor), rule=chosen.rule)


def _chosen(link: StoredRules, url: str, visitor: Visitor, draw: Callable[[], float]) -> Decision:
    if visitor.device == "ios" and link.ios_url:
        return Decision(link.ios_url, "ios")
    if visitor.device == "android" and link.android_url:
        return Decision(link.android_url, "android")
    if link.geo and visitor.country and (by_country := link.geo.get(visitor.country)):
        return Decision(by_country, f"geo:{visitor.country}")
    if link.variants:
        point = draw() * 100
        reached = 0
        for number, variant in enumerate(link.variants, start=1):
            reached += variant.weight
            if point < reached:
                return Decision(variant.url, f"variant:{number}")
        return Decision(link.variants[-1].url, f"variant:{len(link.variants)}")
    return Decision(url, "default")


def _with_query(destination: str, link: StoredRules, visitor: Visitor) -> str:
    tags = link.utm.tags() if link.utm is not None else {}
    forwarded = visitor.query if link.forward_query else ""
    if not tags and not forwarded:
        return destination
    parts = urlsplit(destination)
    # The destination's own parameters are kept as written (not decoded and encoded again), but
    # for a utm_* the link gives, which replaces it.
    kept = [
        part for part in parts.query.split("&") if part and unquote_plus(part.split("=", 1)[0]) not in tags
    ]
    added = [urlencode(tags)] if tags else []
    query = "&".join([*kept, *added, *([forwarded] if forwarded else [])])
    return urlunsplit(parts._replace(query=query))
