"""Expiries on a cached stage. API Gateway answers a cached redirect for the rest of its entry's
TTL without asking the function, so a link past its ``expires_at`` would go on redirecting. The
expirer runs every minute: it reads the links whose expiry has come and is not yet enforced (the
sparse ByExpiry index) and refreshes each one's cache entry, so the function answers it (410) and
that answer is what the cache holds from then on. A link leaves the index once its entry holds
the 410; a refresh that failed stays for the next run.

Why a scheduled sweep and not one EventBridge Scheduler schedule per expiry: see
docs/campaign-links.md, "The bound on a cached stage"."""

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from http import HTTPStatus
from itertools import islice
from typing import Protocol

from pydantic import BaseModel

# Refreshes at once: each is a request through API Gateway to the API function (tens of ms).
REFRESH_WORKERS = 8
# Answers that mean the entry no longer redirects: expired (410), or a code that is gone.
_ENFORCED = {HTTPStatus.GONE, HTTPStatus.NOT_FOUND}
_CODES_LOGGED = 20


class ExpiryIndexPort(Protocol):
    def due(self, now: datetime) -> Iterator[tuple[str, str]]: ...

    def settle(self, code: str, position: str) -> bool: ...


# Refreshes one code's entry: the status the function answered, or None when it could not ask.
Refresh = Callable[[str], int | None]


class ExpiryReport(BaseModel):
    """One run: how many expiries were due, enforced, and left for the next run."""

    due: int = 0
    enforced: int = 0
    # Refreshes that did not give the 410 (retried next run); the first few codes, for the log.
    failed: int = 0
    failed_codes: list[str] = []
    # Stopped at the run's deadline: the rest are read again by the next run.
    stopped_early: bool = False


def enforce_expiries(
    index: ExpiryIndexPort,
    refresh: Refresh,
    now: datetime,
    *,
    seconds: float,
    monotonic: Callable[[], float] = time.monotonic,
) -> ExpiryReport:
    """Refresh the stage cache entry of every link whose expiry has come (as of ``now``), for at
    most about ``seconds``."""
    report = ExpiryReport()
    deadline = monotonic() + seconds
    due = index.due(now)

    def enforce(entry: tuple[str, str]) -> tuple[str, bool]:
        code, position = entry
        status = refresh(code)
        if status not in _ENFORCED:
            return code, False
        index.settle(code, position)
        return code, True

    with ThreadPoolExecutor(REFRESH_WORKERS) as pool:
        # One refresh per worker a round, so a run ends at most one round (a refresh's timeout)
        # after its time.
        while batch := list(islice(due, REFRESH_WORKERS)):
            report.due += len(batch)
            for code, enforced in pool.map(enforce, batch):
                if enforced:
                    report.enforced += 1
                else:
                    report.failed += 1
                    if len(report.failed_codes) < _CODES_LOGGED:
                        report.failed_codes.append(code)
            if monotonic() >= deadline:
                report.stopped_early = True
                break
    return report
