"""Each owner's daily quota of bulk rows and bytes, shared by the API (a job accepted) and the files
function (a file split)."""

from shortener.jobs.quotas import DailyQuota
from shortener.jobs.store.quotas import DailyQuotaStore
from shortener.settings import ApiSettings, WorkerSettings


def daily_quota(settings: ApiSettings | WorkerSettings) -> DailyQuota | None:
    """The quota over the counters in the jobs table (None without one)."""
    if not settings.JOBS_TABLE:
        return None
    return DailyQuota(
        DailyQuotaStore(settings.JOBS_TABLE),
        settings.OWNER_DAILY_ROWS,
        settings.OWNER_DAILY_BYTES,
        anonymous_rows=settings.ANONYMOUS_DAILY_ROWS or None,
    )
