"""The click collector's services: counting over the clicks table, with the links table to learn
whose link each clicked code is and, on a cached stage, to count click limits; the click events'
delivery stream, where the stack has one."""

from collections.abc import Mapping
from functools import lru_cache

from shortener.clicks.counting import ClickCollector, ClickLimits
from shortener.clicks.event_stream import ClickEventStream
from shortener.clicks.limits import count_limited_clicks
from shortener.clicks.model import LimitOutcome
from shortener.clicks.store import ClicksStore
from shortener.clicks.store_limits import ClickLimitStore
from shortener.clicks.visitor_keys import VisitorKeys
from shortener.links.model import Link
from shortener.links.stage_cache import StageCache
from shortener.links.store import LinksStore
from shortener.services.webhooks import webhook_announcer
from shortener.settings import collector_settings


@lru_cache(maxsize=1)
def click_collector() -> ClickCollector:
    """The collector container's click counting, over the clicks table."""
    settings = collector_settings()
    links = LinksStore(settings.LINKS_TABLE) if settings.LINKS_TABLE else None
    stream = ClickEventStream(settings.CLICK_EVENTS_STREAM) if settings.CLICK_EVENTS_STREAM else None
    answers = ClickEventStream(settings.CLICK_ANSWERS_STREAM) if settings.CLICK_ANSWERS_STREAM else None
    announcer = webhook_announcer(settings)
    return ClickCollector(
        ClicksStore(settings.CLICKS_TABLE, settings.CLICK_RETENTION_DAYS, counters=settings.CLICK_COUNTERS),
        links.get_many if links else None,
        _click_limits(),
        events=stream.put if stream else None,
        visitor_key=VisitorKeys(settings.CLICKS_TABLE).key,
        answers=answers.put if answers else None,
        clicked=announcer.announce_clicks if announcer else None,
    )


def _click_limits() -> ClickLimits | None:
    """Where the stage caches redirects: the batch's redirects counted on click-limited links."""
    settings = collector_settings()
    base_url = settings.stage_base_url()
    if not base_url or not settings.LINKS_TABLE:
        # No stage cache: the function counts every redirect of a click-limited link itself.
        return None
    store = ClickLimitStore(settings.LINKS_TABLE)
    cache = StageCache(base_url, settings.AWS_REGION)

    def limits(clicks: Mapping[str, int], limited: Mapping[str, Link]) -> LimitOutcome:
        return count_limited_clicks(store, cache.invalidate, clicks, limited)

    return limits
