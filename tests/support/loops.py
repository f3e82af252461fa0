"""Fakes for the loops' data access: an in-memory tokens table with the same conditional-write
semantics as LoopsStore (the fenced heartbeat among them), a starter that records the loops it
starts, and a gauge of queue depth."""

import threading
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import freezegun
import freezegun.api

from shortener import clock
from shortener.loops.model import LoopInvocation, LoopToken
from shortener.loops.scaling_model import QueueDepth

QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/shortener-BulkQueue-QWERTY123456"
FUNCTION_NAME = "shortener-poller"


class FakeTokens:
    """The tokens table in memory; claim and take_over are atomic like conditional writes."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], LoopToken] = {}
        self._lock = threading.Lock()

    def add(self, token: LoopToken) -> LoopToken:
        self.rows[(token.queue_url, token.token)] = token
        return token

    def tokens(self, queue_url: str = QUEUE_URL) -> list[str]:
        return sorted(token for url, token in self.rows if url == queue_url)

    def claim(self, queue_url: str, token: str) -> LoopToken | None:
        with self._lock:
            if (queue_url, token) in self.rows:
                return None
            now = clock.epoch_seconds()
            return self.add(
                LoopToken(
                    queue_url=queue_url, token=token, loop_id=uuid.uuid4().hex, started_at=now, last_used=now
                )
            )

    def delete(self, queue_url: str, token: str) -> None:
        with self._lock:
            self.rows.pop((queue_url, token), None)

    def list_for_queue(self, queue_url: str) -> list[LoopToken]:
        return [row for (url, _), row in sorted(self.rows.items()) if url == queue_url]

    def scan(self, page_size: int | None = None) -> Iterator[LoopToken]:
        yield from list(self.rows.values())

    def take_over(self, token: LoopToken, stale_before: int) -> LoopToken | None:
        with self._lock:
            current = self.rows.get((token.queue_url, token.token))
            if current is None or current.loop_id != token.loop_id:
                return None
            if current.last_used is not None and current.last_used >= stale_before:
                return None
            now = clock.epoch_seconds()
            revived = current.model_copy(
                update={
                    "loop_id": uuid.uuid4().hex,
                    "last_used": now,
                    "started_at": now,
                    "seq": 0,
                    "holder": None,
                }
            )
            return self.add(revived)

    def heartbeat(self, loop: LoopInvocation, holder: str) -> bool:
        """LoopsStore.heartbeat: claim ``loop.seq`` from ``loop.seq - 1``, or refresh it as its holder."""
        with self._lock:
            current = self.rows.get((loop.queue_url, loop.token))
            if current is None or current.loop_id != loop.loop_id:
                return False
            claims = current.seq == loop.seq - 1
            refreshes = current.seq == loop.seq and current.holder == holder
            if not (claims or refreshes):
                return False
            self.add(
                current.model_copy(
                    update={"seq": loop.seq, "holder": holder, "last_used": clock.epoch_seconds()}
                )
            )
            return True

    def release(self, loop: LoopInvocation, holder: str) -> bool:
        with self._lock:
            current = self.rows.get((loop.queue_url, loop.token))
            if current is None or (current.loop_id, current.seq, current.holder) != (
                loop.loop_id,
                loop.seq,
                holder,
            ):
                return False
            self.add(current.model_copy(update={"last_used": None}))
            return True

    def mark_unstarted(self, token: LoopToken) -> bool:
        with self._lock:
            current = self.rows.get((token.queue_url, token.token))
            if current is None or current.loop_id != token.loop_id or current.seq != 0 or current.holder:
                return False
            self.add(current.model_copy(update={"last_used": None}))
            return True


class RecordingStarter:
    """Records each loop it is asked to start instead of invoking a function; ``failures`` makes
    the next starts raise, as a throttled or refused Invoke would."""

    def __init__(self, failures: int = 0) -> None:
        self.started: list[tuple[str, LoopInvocation]] = []
        self.failures = failures
        self.attempts = 0
        self._lock = threading.Lock()

    def start(self, function_name: str, loop: LoopInvocation) -> None:
        with self._lock:
            self.attempts += 1
            if self.failures:
                self.failures -= 1
                raise ConnectionError("Lambda refused the invoke (TooManyRequestsException)")
            self.started.append((function_name, loop))

    @property
    def tokens(self) -> list[str]:
        return [loop.token for _, loop in self.started]


class FakeQueues:
    """Queue URLs by name and a settable depth; remembers how each URL was asked for."""

    def __init__(self, depth: int = 0, queue_url: str = QUEUE_URL) -> None:
        self.current = QueueDepth(visible=depth)
        self.queue_url_value = queue_url
        self.lookups: list[tuple[str, str | None, str | None]] = []

    def set_depth(self, visible: int, in_flight: int = 0) -> None:
        self.current = QueueDepth(visible=visible, in_flight=in_flight)

    def queue_url(self, queue_name: str, account_id: str | None = None, region: str | None = None) -> str:
        self.lookups.append((queue_name, account_id, region))
        return self.queue_url_value

    def depth(self, queue_url: str, region: str | None = None) -> QueueDepth:
        return self.current


class LambdaContext:
    """The bits of a Lambda context the Powertools decorators read."""

    def __init__(self, function_name: str) -> None:
        self.function_name = function_name
        self.memory_limit_in_mb = 512
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self.aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def frozen(moment: "datetime | str", **options: Any) -> "freezegun.api._freeze_time":
    """freeze_time, skipping Powertools' parser models: freezegun reads every module's attributes
    when it starts, which makes that package build its lazily-defined pydantic models (with
    datetime fields) while datetime is faked, and pydantic rejects FakeDatetime."""
    return freezegun.freeze_time(moment, ignore=["aws_lambda_powertools.utilities.parser"], **options)
