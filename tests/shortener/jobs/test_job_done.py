"""A job says done only once everything it produces can be fetched."""

from datetime import UTC, datetime

from shortener.jobs.model import Job, ResultsFile

CREATED = datetime(2026, 6, 1, tzinfo=UTC)


def test_a_job_with_a_results_file_is_done_only_once_the_file_is_written() -> None:
    # Given a job whose every row is processed but whose results file is not written yet
    job = Job(job_id="j", total=2, chunks=1, succeeded=2, created_at=CREATED, bucket="b")
    # Then it is still running, writing its results
    assert (job.status, job.phase) == ("running", "writing_results")
    # And once the file is recorded it is done
    written = ResultsFile(key="results/j.csv", size=10, rows=2, written_at=CREATED)
    assert job.model_copy(update={"results": written}).status == "done"


def test_a_job_without_a_results_file_is_done_when_every_row_is() -> None:
    job = Job(job_id="j", total=2, chunks=1, succeeded=1, failed=1, created_at=CREATED)
    assert job.status == "done"
    assert job.model_copy(update={"failed": 0}).status == "running"
