"""Who a user agent is: a bot (crawler, scanner or link-preview fetcher) or a person's browser, and
the device class, browser and OS it names. Read by the click collector for every click and by the
redirect for a click-limited link (a preview fetcher never uses up a limit), so it stays light: no
table beyond the two lists it imports."""

import re
from functools import lru_cache

from shortener.clicks.model import MAX_VALUE_LENGTH, UNKNOWN, DeviceClass

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# HTTP libraries' own user agents, which the crawler list counts as bots.
_HTTP_LIBRARY = re.compile(
    r"(curl|wget|python-requests|python-urllib|python-httpx|aiohttp|go-http-client|okhttp|java|"
    r"apache-httpclient|node-fetch|axios|undici|libwww-perl|php|ruby|httpie|powershell)\b",
    re.IGNORECASE,
)
# Tablets announce themselves in a few ways that ua-parser's device family does not always carry.
_TABLET = re.compile(r"iPad|Tablet|Kindle|Silk/|PlayBook|Nexus (7|9|10)\b|SM-T\d", re.IGNORECASE)
_DESKTOP_OS = ("Windows", "Mac OS X", "Linux", "Ubuntu", "Fedora", "Chrome OS", "FreeBSD", "OpenBSD")
_MOBILE_OS = ("iOS", "Android", "Windows Phone", "BlackBerry OS", "KaiOS", "HarmonyOS")


@lru_cache(maxsize=4096)
def classify_agent(user_agent: str) -> tuple[bool, DeviceClass, str, str]:
    """(bot, device class, browser family, OS family) of a user agent. Bots are what the maintained
    crawler list (crawler-user-agents) or ua-parser names a spider: search engines, scanners and
    link-preview fetchers (Slack, X, Facebook, WhatsApp, iMessage, Mastodon, LinkedIn)."""
    if not user_agent.strip():
        return True, "bot", UNKNOWN, UNKNOWN  # browsers always send one
    # Imported here: the API function imports this module (click reports) but asks it only of a
    # click-limited, password or preview link; loading both lists at import time would add to every
    # cold start, a plain link's included (make bench ARGS=links). Imported once, then a lookup.
    import crawleruseragents
    import ua_parser

    parsed = ua_parser.parse(user_agent)
    browser = _value(parsed.user_agent.family if parsed.user_agent else None)
    os_family = _value(parsed.os.family if parsed.os else None)
    device_family = parsed.device.family if parsed.device else ""
    if device_family == "Spider" or crawleruseragents.is_crawler(user_agent):
        return True, "bot", browser, os_family
    return False, _device_class(user_agent, device_family or "", os_family), browser, os_family


def _device_class(user_agent: str, device_family: str, os_family: str) -> DeviceClass:
    if _TABLET.search(user_agent) or _TABLET.search(device_family):
        return "tablet"
    if os_family == "Android" and "Mobile" not in user_agent:
        return "tablet"  # Android tablets' browsers leave "Mobile" out
    if os_family in _MOBILE_OS:
        return "mobile"
    if os_family in _DESKTOP_OS:
        return "desktop"
    return "other"


def _value(text: str | None) -> str:
    if not text or text == "Other":
        return UNKNOWN
    return _CONTROL.sub("", text)[:MAX_VALUE_LENGTH] or UNKNOWN


def is_crawler(user_agent: str) -> bool:
    """Whether ``user_agent`` names a crawler, scanner or link-preview fetcher. No user agent at all
    is counted as a bot's click, but names nobody; nor does an HTTP library's default (curl,
    python-requests, okhttp ...: the crawler list names them too, but scripts and apps send them on
    a person's behalf). Neither may follow a click-limited link without using up a click."""
    text = user_agent.strip()
    return bool(text) and not _HTTP_LIBRARY.match(text) and classify_agent(user_agent)[0]
