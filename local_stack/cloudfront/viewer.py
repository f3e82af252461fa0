"""The viewer headers CloudFront derives and adds to origin requests when the origin request policy
names them ("Add CloudFront request headers",
https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/adding-cloudfront-headers.html):
the device headers from the User-Agent, the viewer's country, and X-Forwarded-For.

CloudFront's device detection is its own; here ua-parser (pinned for the collector) stands in.
``CloudFront-Is-Mobile-Viewer`` is true for phones and tablets alike, as AWS documents it, and
``Desktop`` for neither. The country comes from a setting (``--edge-country``, default US):
loopback has no geolocation, and CloudFront reads it from the viewer's address."""

from collections.abc import Mapping
from functools import lru_cache

import ua_parser

DEVICE_HEADERS = (
    "CloudFront-Is-IOS-Viewer",
    "CloudFront-Is-Android-Viewer",
    "CloudFront-Is-Mobile-Viewer",
    "CloudFront-Is-Tablet-Viewer",
    "CloudFront-Is-SmartTV-Viewer",
    "CloudFront-Is-Desktop-Viewer",
)
COUNTRY_HEADER = "CloudFront-Viewer-Country"
_TABLET = ("iPad", "Tablet", "Kindle", "Silk/", "PlayBook")
_SMART_TV = (
    "SmartTV",
    "SMART-TV",
    "Smart-TV",
    "GoogleTV",
    "AppleTV",
    "Roku",
    "BRAVIA",
    "Tizen",
    "webOS",
    "HbbTV",
)


@lru_cache(maxsize=4096)
def device_headers(user_agent: str) -> tuple[tuple[str, str], ...]:
    """The six device headers, "true" or "false", for a user agent."""
    parsed = ua_parser.parse(user_agent) if user_agent else None
    os_family = parsed.os.family if parsed is not None and parsed.os else ""
    ios = os_family == "iOS"
    android = os_family == "Android"
    smart_tv = any(mark in user_agent for mark in _SMART_TV)
    tablet = not smart_tv and (
        any(mark in user_agent for mark in _TABLET) or (android and "Mobile" not in user_agent)
    )
    mobile = not smart_tv and (tablet or ios or android or "Mobile" in user_agent)
    desktop = not (mobile or smart_tv)
    flags = (ios, android, mobile, tablet, smart_tv, desktop)
    return tuple(
        (name, "true" if flag else "false") for name, flag in zip(DEVICE_HEADERS, flags, strict=True)
    )


def viewer_headers(
    headers: Mapping[str, str], viewer_address: str, country: str, forwarded: frozenset[str]
) -> dict[str, str]:
    """The CloudFront headers of an origin request: those of ``forwarded`` (the origin request
    policy's names, lower-cased) it derives, and X-Forwarded-For (always sent)."""
    derived = dict(device_headers(headers.get("User-Agent", "")))
    derived[COUNTRY_HEADER] = country
    added = {name: value for name, value in derived.items() if name.lower() in forwarded}
    earlier = headers.get("X-Forwarded-For")
    added["X-Forwarded-For"] = f"{earlier}, {viewer_address}" if earlier else viewer_address
    return added
