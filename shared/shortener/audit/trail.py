"""The audit log's rules (docs/audit.md): every change is recorded before it is answered, with who
made it (the caller's key id; ``anonymous`` on an open stack), when, what and from where; only
admins read the log, newest first, filtered by range, actor, target and action."""

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from shortener import clock
from shortener.access.model import Caller
from shortener.audit.model import AUDIT_ACTIONS, AuditAction, AuditEntry, AuditPage
from shortener.audit.store import AuditSelection
from shortener.clicks.counting import parse_instant
from shortener.exceptions import ForbiddenError, InvalidRequestError
from shortener.http.paging import decode_cursor, encode_cursor, page_size

DEFAULT_DAYS = 30
DEFAULT_PAGE = 100


class AuditEntries(Protocol):
    """``shortener.audit.store.AuditStore``."""

    def put(self, entry: AuditEntry, expires_at: datetime) -> None: ...
    def page(self, selection: AuditSelection, limit: int) -> tuple[list[AuditEntry], str | None]: ...


def actor_of(caller: Caller) -> str:
    """Who a caller is in the log: its key's id, or its owner where it has no key."""
    return caller.key_id or caller.owner_id


class AuditTrail:
    """Records changes and reads them back for admins."""

    def __init__(
        self, entries: AuditEntries, retention_days: int, now: Callable[[], datetime] = clock.now
    ) -> None:
        self._entries = entries
        self._retention = timedelta(days=retention_days)
        self._now = now

    def record(
        self,
        actor: str,
        action: AuditAction,
        target: str,
        *,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
        source_ip: str | None = None,
    ) -> AuditEntry:
        moment = self._now()
        entry = AuditEntry(
            time=moment,
            actor=actor,
            action=action,
            target=target,
            before=dict(before) if before is not None else None,
            after=dict(after) if after is not None else None,
            source_ip=source_ip,
        )
        self._entries.put(entry, moment + self._retention)
        return entry

    def read(self, caller: Caller, query: Mapping[str, str | None]) -> AuditPage:
        """GET /audit: ``from``/``to`` (ISO 8601; the last 30 days by default), ``actor``,
        ``code`` (or ``target``), ``action``, ``limit`` (1 to 100), ``cursor``."""
        if not caller.is_admin:
            raise ForbiddenError("Only an admin can read the audit log.")
        now = self._now()
        asked_end = _moment(query.get("to"), "to")
        asked_begin = _moment(query.get("from"), "from")
        if asked_begin is not None and asked_end is not None and asked_begin > asked_end:
            raise InvalidRequestError("from must not be after to.")
        # Nothing is older than the retention or newer than now: the range is read within them.
        floor = now - self._retention - timedelta(days=1)
        end = min(max(asked_end or now, floor), now)
        begin = max(asked_begin or end - timedelta(days=DEFAULT_DAYS), floor)
        action = query.get("action")
        if action is not None and action not in AUDIT_ACTIONS:
            raise InvalidRequestError(f"action must be one of {', '.join(AUDIT_ACTIONS)}.")
        text = query.get("limit") or str(DEFAULT_PAGE)
        if not text.isdigit():
            raise InvalidRequestError("limit must be a whole number from 1 to 100.")
        limit = page_size(int(text))
        selection = AuditSelection(
            begin=begin,
            end=end,
            actor=query.get("actor") or None,
            target=query.get("code") or query.get("target") or None,
            action=action,
            before=decode_cursor(query.get("cursor")),
        )
        entries, last = self._entries.page(selection, limit)
        return AuditPage(entries=entries, next_cursor=encode_cursor(last) if last else None)


def _moment(text: str | None, name: str) -> datetime | None:
    return parse_instant(text, name) if text else None
