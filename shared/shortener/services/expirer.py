"""The expirer's services, one per container: the links table's expiry index and the stage cache."""

from datetime import datetime
from functools import lru_cache

from shortener import clock
from shortener.links.expiry import ExpiryReport, enforce_expiries
from shortener.links.stage_cache import StageCache
from shortener.links.store_expiry import ExpiryIndex
from shortener.settings import expirer_settings


@lru_cache(maxsize=1)
def expiry_index() -> ExpiryIndex:
    return ExpiryIndex(expirer_settings().LINKS_TABLE)


def enforce_due_expiries(now: datetime | None = None) -> ExpiryReport:
    """One run of the expirer: every expiry that has come, refreshed on the stage cache."""
    settings = expirer_settings()
    base_url = settings.stage_base_url()
    if not base_url:
        # No stage cache (Stage=dev): the function enforces every expiry itself.
        return ExpiryReport()
    cache = StageCache(base_url, settings.AWS_REGION)
    return enforce_expiries(
        expiry_index(), cache.invalidate, now or clock.now(), seconds=settings.EXPIRER_RUN_SECONDS
    )
