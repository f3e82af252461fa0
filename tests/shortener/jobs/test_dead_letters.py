"""Settling dead letters over fakes: an idle run costs one depth read, a dead letter is first sent
back for a last attempt, one that had it gets its rows failed with the reason and counted before its
message is deleted, and one bad message holds up no other."""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from shortener.jobs.dead_letters import DeadLetterSettler, dead_letter_error
from shortener.jobs.message_model import ChunkMessage
from shortener.jobs.model import Job, RecordedChunk, RowOutcome
from shortener.loops.scaling_model import DeadLetterTarget, LoopTarget, QueueDepth

TARGET = LoopTarget(queue_name="bulk", queue_url="https://sqs/1/bulk", function_name="poller")
DLQ = DeadLetterTarget(queue_url="https://sqs/1/bulk-dlq", max_receive_count=5)


class Jobs:
    """Chunk records and counts in memory, with the once-only semantics of JobsStore."""

    def __init__(
        self, failing_jobs: frozenset[str] = frozenset(), totals: dict[str, int] | None = None
    ) -> None:
        self.chunks: dict[tuple[str, int], list[RowOutcome]] = {}
        self.counted: dict[tuple[str, int], tuple[int, int]] = {}
        self.failing_jobs = failing_jobs
        # Rows of each job (a job not named here has more rows than any test settles).
        self.totals = totals or {}

    def record_outcomes(
        self,
        job_id: str,
        chunk: int,
        *,
        first_row: int,
        outcomes: Sequence[RowOutcome],
        now: int,
        expires_at: int,
        dead_letter: bool = False,
    ) -> RecordedChunk:
        assert dead_letter
        if job_id in self.failing_jobs:
            raise ConnectionError("DynamoDB is unreachable")
        self.chunks.setdefault((job_id, chunk), list(outcomes))
        return RecordedChunk(succeeded=0, failed=len(outcomes), dead_letter=True)

    def count_chunk(
        self, job_id: str, chunk: int, *, succeeded: int, failed: int, now: datetime
    ) -> Job | None:
        if (job_id, chunk) in self.counted:
            return None
        self.counted[(job_id, chunk)] = (succeeded, failed)
        return self.get_job(job_id)

    def get_job(self, job_id: str) -> Job | None:
        counts = [count for (job, _), count in self.counted.items() if job == job_id]
        return Job(
            job_id=job_id,
            total=self.totals.get(job_id, 1_000_000),
            chunks=len(counts),
            succeeded=sum(succeeded for succeeded, _ in counts),
            failed=sum(failed for _, failed in counts),
            created_at=datetime(2025, 1, 1, tzinfo=UTC),
        )


class Files:
    """The jobs worker: the jobs whose results file was asked for, in order."""

    def __init__(self) -> None:
        self.requested: list[str] = []

    def request_results(self, job_id: str) -> None:
        self.requested.append(job_id)


class DeadLetters:
    """A dead-letter queue in memory that counts the requests made to it."""

    def __init__(self, bodies: Sequence[str] = ()) -> None:
        self.messages = {f"r{n}": body for n, body in enumerate(bodies)}
        self.requests: list[str] = []
        self.sent: list[tuple[str, str, int]] = []

    def depth(self, queue_url: str, region: str | None = None) -> QueueDepth:
        self.requests.append("GetQueueAttributes")
        return QueueDepth(visible=len(self.messages))

    def dead_letter_target(self, queue_url: str, region: str | None = None) -> DeadLetterTarget | None:
        self.requests.append("GetQueueAttributes(RedrivePolicy)")
        return DLQ

    def receive(
        self, queue_url: str, *, max_messages: int = 10, wait_seconds: int = 20
    ) -> list[dict[str, Any]]:
        self.requests.append("ReceiveMessage")
        handles = list(self.messages)[:max_messages] if "ReceiveMessage" not in self.requests[:-1] else []
        return [
            {"MessageId": handle, "ReceiptHandle": handle, "Body": self.messages[handle]}
            for handle in handles
        ]

    def delete(self, queue_url: str, receipt_handles: Sequence[str]) -> int:
        self.requests.append("DeleteMessageBatch")
        for handle in receipt_handles:
            del self.messages[handle]
        return 0

    def send(self, queue_url: str, body: str, *, delay_seconds: int = 0) -> None:
        self.requests.append("SendMessage")
        self.sent.append((queue_url, body, delay_seconds))


def chunk(job_id: str, number: int, rows: int = 3, *, last_attempt: bool = True) -> str:
    """A dead-lettered chunk; by default one that already had its last attempt."""
    message = ChunkMessage(
        job_id=job_id,
        chunk=number,
        first_row=1 + number * rows,
        rows=[(f"https://x.example/{n}", "") for n in range(rows)],
        last_attempt=last_attempt,
    )
    return message.model_dump_json()


def test_an_empty_dead_letter_queue_costs_one_depth_read_per_run() -> None:
    # Given an empty dead-letter queue whose redrive policy was read before
    queue = DeadLetters()
    settler = DeadLetterSettler(Jobs(), queue, queue)
    settler.settle(TARGET)
    queue.requests.clear()
    # When the restarter settles it again
    report = settler.settle(TARGET)
    # Then it only read the depth
    assert queue.requests == ["GetQueueAttributes"]
    assert report.settled == 0


def test_each_row_of_a_dead_letter_is_failed_with_the_reason_then_the_message_deleted() -> None:
    # Given two dead-lettered chunks of one job
    jobs, queue = Jobs(), DeadLetters([chunk("j1", 0), chunk("j1", 1)])
    # When they are settled
    report = DeadLetterSettler(jobs, queue, queue).settle(TARGET)
    # Then every row has the dead-letter error, in order, each chunk counted once, then deleted
    assert [outcome.row for outcome in jobs.chunks[("j1", 1)]] == [4, 5, 6]
    assert {outcome.error for rows in jobs.chunks.values() for outcome in rows} == {dead_letter_error(5)}
    assert jobs.counted == {("j1", 0): (0, 3), ("j1", 1): (0, 3)}
    assert queue.messages == {}
    assert queue.requests.index("DeleteMessageBatch") > queue.requests.index("ReceiveMessage")
    assert (report.settled, report.rows_failed) == (2, 6)


def test_a_message_that_cannot_be_recorded_stays_and_the_others_are_settled() -> None:
    # Given a dead letter whose job's table cannot be written, between two others, and one that
    # is not a bulk chunk at all
    jobs = Jobs(failing_jobs=frozenset({"bad"}))
    queue = DeadLetters([chunk("j1", 0), chunk("bad", 0), '{"not": "a chunk"}', chunk("j2", 0)])
    # When they are settled
    report = DeadLetterSettler(jobs, queue, queue).settle(TARGET)
    # Then only the failing one is left for a later run, the foreign one is removed, and the
    # others are recorded
    assert list(queue.messages) == ["r1"]
    assert set(jobs.counted) == {("j1", 0), ("j2", 0)}
    assert (report.settled, report.unreadable, report.errors) == (2, 1, 1)


def test_a_queue_without_a_redrive_policy_has_nothing_to_settle() -> None:
    # Given a loop queue with no dead-letter queue
    class NoRedrive(DeadLetters):
        def dead_letter_target(self, queue_url: str, region: str | None = None) -> DeadLetterTarget | None:
            return None

    queue = NoRedrive([chunk("j1", 0)])
    # When the restarter settles it
    report = DeadLetterSettler(Jobs(), queue, queue).settle(TARGET)
    # Then nothing is read or changed
    assert queue.requests == []
    assert report.settled == 0


def test_a_settlement_that_completes_a_job_asks_for_its_results_file() -> None:
    # Given a job of two 3-row chunks whose first chunk a delivery counted, and whose second
    # chunk's message went to the dead-letter queue
    jobs, files = Jobs(totals={"j1": 6}), Files()
    jobs.counted[("j1", 0)] = (3, 0)
    queue = DeadLetters([chunk("j1", 1)])
    # When the restarter settles it
    DeadLetterSettler(jobs, queue, queue, results=files).settle(TARGET)
    # Then the job is complete and its results file is asked for, once, as a delivery would
    assert jobs.get_job("j1") is not None and jobs.get_job("j1").complete  # type: ignore[union-attr]
    assert files.requested == ["j1"]


def test_a_settlement_that_leaves_rows_outstanding_asks_for_no_results_file() -> None:
    # Given a job of three chunks of which only the dead-lettered one is done
    jobs, files = Jobs(totals={"j1": 9}), Files()
    queue = DeadLetters([chunk("j1", 1)])
    # When the restarter settles it
    DeadLetterSettler(jobs, queue, queue, results=files).settle(TARGET)
    # Then nothing is asked of the jobs worker
    assert files.requested == []


def test_a_settlement_counted_before_still_asks_for_the_results_of_its_complete_job() -> None:
    # Given a complete job whose dead-lettered chunk was counted by a run that died before asking
    # for its results file (the message is still in the dead-letter queue)
    jobs, files = Jobs(totals={"j1": 3}), Files()
    jobs.counted[("j1", 0)] = (0, 3)
    queue = DeadLetters([chunk("j1", 0)])
    # When a later run settles the message again
    report = DeadLetterSettler(jobs, queue, queue, results=files).settle(TARGET)
    # Then the count is not repeated but the results file is asked for
    assert (report.settled, files.requested) == (1, ["j1"])


def test_a_first_time_dead_letter_is_sent_back_for_a_last_attempt_and_no_row_fails() -> None:
    # Given a chunk that reached the dead-letter queue for the first time
    jobs, queue = Jobs(), DeadLetters([chunk("j1", 0, last_attempt=False)])
    # When the restarter settles it
    report = DeadLetterSettler(jobs, queue, queue, last_attempt_delay_seconds=45).settle(TARGET)
    # Then it is sent to its own queue, marked and delayed, before it leaves the dead-letter queue
    [(queue_url, body, delay)] = queue.sent
    sent = ChunkMessage.model_validate_json(body)
    assert (queue_url, delay, sent.last_attempt) == (TARGET.queue_url, 45, True)
    assert sent.model_copy(update={"last_attempt": False}).model_dump_json() == chunk(
        "j1", 0, last_attempt=False
    )
    assert queue.requests.index("SendMessage") < queue.requests.index("DeleteMessageBatch")
    assert queue.messages == {}
    # And no row is failed or counted
    assert (jobs.chunks, jobs.counted) == ({}, {})
    assert (report.retried, report.settled, report.rows_failed) == (1, 0, 0)


def test_a_dead_letter_whose_send_back_fails_stays_for_the_next_run() -> None:
    # Given a first-time dead letter that cannot be sent back (SQS throttles the restarter)
    class Throttled(DeadLetters):
        def send(self, queue_url: str, body: str, *, delay_seconds: int = 0) -> None:
            raise ConnectionError("throttled")

    queue = Throttled([chunk("j1", 0, last_attempt=False)])
    # When the restarter settles it
    report = DeadLetterSettler(Jobs(), queue, queue).settle(TARGET)
    # Then it is neither deleted nor failed
    assert list(queue.messages) == ["r0"]
    assert (report.retried, report.settled, report.errors) == (0, 0, 1)
