"""Loops: self-recursing poller invocations, each guarded by a token row."""

from pydantic import BaseModel, ConfigDict, Field


class LoopInvocation(BaseModel):
    """The payload a loop is started with and re-invokes itself with."""

    model_config = ConfigDict(extra="ignore")

    queue_url: str = Field(min_length=1)
    token: str = Field(min_length=1)
    loop_id: str = Field(min_length=1)


class LoopToken(BaseModel):
    """A row of the tokens table: the loop that currently owns ``token`` on ``queue_url``."""

    queue_url: str
    token: str
    loop_id: str
    started_at: int
    last_used: int | None = None  # epoch seconds of the last heartbeat

    def invocation(self) -> LoopInvocation:
        return LoopInvocation(queue_url=self.queue_url, token=self.token, loop_id=self.loop_id)
