"""The click collector's services: counting over the clicks table, with the links table to learn
whose link each clicked code is."""

from collections.abc import Sequence
from functools import lru_cache

from shortener.dal.clicks import ClicksStore
from shortener.dal.links import LinksStore
from shortener.logic.clicks import ClickCollector
from shortener.models.access import ANONYMOUS_OWNER
from shortener.settings import collector_settings


@lru_cache(maxsize=1)
def click_collector() -> ClickCollector:
    """The collector container's click counting, over the clicks table."""
    settings = collector_settings()
    links = LinksStore(settings.LINKS_TABLE) if settings.LINKS_TABLE else None

    def owners(codes: Sequence[str]) -> dict[str, str | None]:
        # Links made without a key (Access=open) have no top list of their own.
        found = links.get_many(codes) if links else {}
        return {code: link.owner for code, link in found.items() if link.owner != ANONYMOUS_OWNER}

    return ClickCollector(ClicksStore(settings.CLICKS_TABLE, settings.CLICK_RETENTION_DAYS), owners)
