"""Loops: self-recursing poller invocations, each guarded by a token row.

Fencing: every invocation of a loop carries a sequence number. A token row records the last
sequence number an invocation claimed (``seq``) and which invocation holds it (``holder``, a nonce
the invocation drew for itself). Invocation n claims the token only while the row still says n - 1,
so a duplicated or retried delivery of an event that already ran stops at its first heartbeat, and
at most one invocation runs per token at any time. A new token, or one the restarter took over,
starts again at ``seq`` 0 with a new loop id; its first invocation is number 1.
"""

from pydantic import BaseModel, ConfigDict, Field


class LoopInvocation(BaseModel):
    """The payload a loop is started with and re-invokes itself with."""

    model_config = ConfigDict(extra="ignore")

    queue_url: str = Field(min_length=1)
    token: str = Field(min_length=1)
    loop_id: str = Field(min_length=1)
    # 0 only in an event from before fencing existed: no row ever holds -1, so such an invocation
    # stops at its first heartbeat and the restarter revives the token with a numbered loop.
    seq: int = Field(default=0, ge=0)

    def successor(self) -> "LoopInvocation":
        """The event of the next invocation of this loop (what it re-invokes itself with)."""
        return self.model_copy(update={"seq": self.seq + 1})


class LoopToken(BaseModel):
    """A row of the tokens table: the loop that currently owns ``token`` on ``queue_url``."""

    queue_url: str
    token: str
    loop_id: str
    started_at: int
    last_used: int | None = None  # epoch seconds of the last heartbeat
    seq: int = 0  # the last sequence number an invocation claimed; 0 before the first claim
    holder: str | None = None  # the nonce of the invocation that claimed ``seq``
    # Epoch seconds when the table last throttled this loop's writes (its heartbeat says so).
    throttled_at: int | None = None

    def invocation(self) -> LoopInvocation:
        """The event of the invocation that may claim this token next."""
        return LoopInvocation(
            queue_url=self.queue_url, token=self.token, loop_id=self.loop_id, seq=self.seq + 1
        )
