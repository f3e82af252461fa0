"""What the scaler and the restarter see and decide: queue depth, loop targets and outcomes."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# "work": loops started by new work itself (a job accepted or a file being split).
ScalingTrigger = Literal["alarm", "reconcile", "work"]
ScalingAction = Literal["added", "removed", "reconciled", "unchanged", "ignored", "unknown_queue"]


class QueueDepth(BaseModel):
    """A queue's approximate backlog, in messages."""

    model_config = ConfigDict(frozen=True)

    visible: int = Field(default=0, ge=0)
    in_flight: int = Field(default=0, ge=0)
    delayed: int = Field(default=0, ge=0)

    @property
    def total(self) -> int:
        """Every message not yet deleted: waiting, being processed, or delayed."""
        return self.visible + self.in_flight + self.delayed


class LoopTarget(BaseModel):
    """A queue whose loops are managed, and the function that drains it."""

    model_config = ConfigDict(frozen=True)

    queue_name: str
    queue_url: str
    function_name: str
    region: str | None = None  # None: the function's own region


class DeadLetterTarget(BaseModel):
    """A queue's dead-letter queue, and the receives after which SQS moves a message there."""

    model_config = ConfigDict(frozen=True)

    queue_url: str
    max_receive_count: int
    region: str | None = None


class ScalingOutcome(BaseModel):
    """What one scaling step did to one queue's loops."""

    queue_name: str | None
    trigger: ScalingTrigger
    action: ScalingAction
    reason: str
    loops_before: int | None = None
    loops_after: int | None = None
    started: list[str] = Field(default_factory=list)  # tokens given a new loop
    stopped: list[str] = Field(default_factory=list)  # tokens deleted (their loops stop)
    failed: list[str] = Field(default_factory=list)  # tokens whose loop could not be started


class DeadLetterReport(BaseModel):
    """What settling a dead-letter queue did: chunks whose rows were failed, chunks a delivery had
    recorded first, messages that were no bulk chunk at all, and messages left for the next run."""

    queue_name: str
    settled: int = 0
    rows_failed: int = 0
    # Sent back to their queue for a last, isolated attempt (their rows are not failed yet).
    retried: int = 0
    already_recorded: int = 0
    unreadable: int = 0
    errors: int = 0


class RestarterReport(BaseModel):
    """One run of the restarter: every queue reconciled, stale loops revived, dead letters
    settled. ``failed`` names tokens whose loop could not be started (left for the next run);
    ``errors`` names the steps that raised (each step runs whatever the others did)."""

    revived: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)  # stale tokens of queues with no function
    failed: list[str] = Field(default_factory=list)
    reconciled: list[ScalingOutcome] = Field(default_factory=list)
    dead_letters: list[DeadLetterReport] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
