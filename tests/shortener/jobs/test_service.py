"""The job service the jobs, clicks and QR routes share: one lookup that finds a caller's job or
raises the typed not-found error, and the answers built on it. Over small fakes of its ports."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shortener.access.model import Caller
from shortener.exceptions import JobNotFoundError, ServiceUnavailableError
from shortener.jobs.model import Job, ResultsFile, RowOutcome
from shortener.jobs.service import FileLink, JobQueries, NotReady
from shortener.jobs.tasks_model import LabelsRequest, SplitRequest

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
ALICE = Caller(owner_id="alice", role="member")
BOB = Caller(owner_id="bob", role="member")
ADMIN = Caller(owner_id="root", role="admin")
JOB_ID = "a" * 32


class FakeJobs:
    """The jobs table: jobs by id, counting reads."""

    def __init__(self, *jobs: Job) -> None:
        self.jobs = {job.job_id: job for job in jobs}
        self.reads: list[str] = []

    def get_job(self, job_id: str) -> Job | None:
        self.reads.append(job_id)
        return self.jobs.get(job_id)

    def list_jobs(self, owner: str, *, before: str | None, limit: int) -> tuple[list[Job], str | None]:
        return [job for job in self.jobs.values() if job.owner == owner][:limit], None

    def iter_chunk_outcomes(self, job_id: str, from_chunk: int = 0) -> Iterator[tuple[int, list[RowOutcome]]]:
        return iter([])


class FakeFiles:
    """The bulk bucket: the keys that exist."""

    def __init__(self, *keys: str) -> None:
        self.keys = set(keys)

    def download_url(
        self, bucket: str, key: str, file_name: str, expires_in: int, *, content_type: str = "text/csv"
    ) -> tuple[str, datetime]:
        return f"https://{bucket}.s3/{key}?signed", NOW + timedelta(seconds=expires_in)

    def uploaded_etag(self, bucket: str, key: str) -> str | None:
        return "etag" if key in self.keys else None

    def modified_at(self, bucket: str, key: str) -> datetime | None:
        return NOW if key in self.keys else None


class RecordingWorker:
    """The jobs worker: what it was asked for."""

    def __init__(self) -> None:
        self.asked: list[Any] = []

    def continue_split(self, request: SplitRequest) -> None:
        self.asked.append(("split", request.job_id))

    def request_results(self, job_id: str) -> None:
        self.asked.append(("results", job_id))

    def request_click_report(self, job_id: str) -> None:
        self.asked.append(("click_report", job_id))

    def request_labels(self, request: LabelsRequest) -> None:
        self.asked.append(("labels", request.job_id, request.format))


def a_job(**fields: Any) -> Job:
    values: dict[str, Any] = {
        "job_id": JOB_ID,
        "total": 10,
        "chunks": 1,
        "created_at": NOW - timedelta(minutes=5),
        "owner": "alice",
        "bucket": "bulk",
    }
    return Job(**(values | fields))


def queries(
    jobs: FakeJobs, files: FakeFiles | None = None, worker: RecordingWorker | None = None
) -> JobQueries:
    return JobQueries(jobs, files or FakeFiles(), worker, now=lambda: NOW)


def test_the_owner_finds_their_job() -> None:
    # Given alice's job
    jobs = FakeJobs(a_job())
    # When alice asks for it, then she gets it
    assert queries(jobs).find(ALICE, JOB_ID).job_id == JOB_ID


def test_another_owners_job_is_not_found_and_neither_is_no_job() -> None:
    # Given alice's job
    service = queries(FakeJobs(a_job()))
    # When bob asks for it, or anyone for an id no job has, then both are the same not-found error
    with pytest.raises(JobNotFoundError):
        service.find(BOB, JOB_ID)
    with pytest.raises(JobNotFoundError):
        service.find(ALICE, "b" * 32)


def test_an_admin_finds_any_owners_job_and_a_job_without_owner_is_admins_only() -> None:
    # Given alice's job and one from before owners existed
    ownerless = a_job(job_id="c" * 32, owner=None)
    service = queries(FakeJobs(a_job(), ownerless))
    # Then an admin finds both, and a member not the ownerless one
    assert service.find(ADMIN, JOB_ID).owner == "alice"
    assert service.find(ADMIN, ownerless.job_id).owner is None
    with pytest.raises(JobNotFoundError):
        service.find(ALICE, ownerless.job_id)


def test_a_malformed_job_id_is_not_found_without_reading_the_table() -> None:
    jobs = FakeJobs(a_job())
    with pytest.raises(JobNotFoundError):
        queries(jobs).find(ALICE, "../etc/passwd")
    assert jobs.reads == []


def test_every_route_of_a_job_checks_its_owner_first() -> None:
    # Given alice's done job, with its results file written
    written = ResultsFile(key="results/a.csv", size=1, rows=10, written_at=NOW)
    done = a_job(succeeded=10, results=written, kind="upload", split_done=True)
    worker = RecordingWorker()
    service = queries(FakeJobs(done), worker=worker)
    # When bob asks for its status, results, click report or labels, then each is not found
    for read in (
        lambda: service.status(BOB, JOB_ID, "https://s/"),
        lambda: service.results(BOB, JOB_ID, "https://s/"),
        lambda: service.click_report(BOB, JOB_ID, "https://s/"),
        lambda: service.labels(BOB, JOB_ID, "png"),
    ):
        with pytest.raises(JobNotFoundError):
            read()
    # And no work was asked for on his behalf
    assert worker.asked == []


def test_a_status_read_asks_again_for_the_results_nobody_claimed() -> None:
    # Given alice's complete upload job, last counted a minute ago, with no results file or lease
    job = a_job(succeeded=10, kind="upload", split_done=True, updated_at=NOW - timedelta(minutes=1))
    worker = RecordingWorker()
    # When its status is read
    view = queries(FakeJobs(job), worker=worker).status(ALICE, JOB_ID, "https://s/")
    # Then the results file is asked for, and the view links to the results
    assert worker.asked == [("results", JOB_ID)]
    assert view.results_url == f"https://s/jobs/{JOB_ID}/results"


def test_a_large_jobs_results_are_its_file_once_written_and_not_ready_before() -> None:
    # Given alice's running upload job and the same job once its file is written
    running = a_job(succeeded=4, kind="upload", split_done=True, updated_at=NOW)
    written = running.model_copy(
        update={"succeeded": 10, "results": ResultsFile(key="results/a.csv", size=1, rows=10, written_at=NOW)}
    )
    # Then the running one is not ready, saying how far it is, and the written one links to the file
    answer = queries(FakeJobs(running)).results(ALICE, JOB_ID, "https://s/")
    assert (
        isinstance(answer, NotReady) and answer.error == "results_not_ready" and "4 of 10" in answer.message
    )
    link = queries(FakeJobs(written)).results(ALICE, JOB_ID, "https://s/")
    assert isinstance(link, FileLink) and "results/a.csv" in link.url


def test_a_click_report_without_a_clicks_table_is_503_after_the_owner_check() -> None:
    # Given a stack that counts no clicks
    service = queries(FakeJobs(a_job()))
    # Then another owner's job is still a 404, and the owner's a 503
    with pytest.raises(JobNotFoundError):
        service.click_report(BOB, JOB_ID, "https://s/")
    with pytest.raises(ServiceUnavailableError):
        service.click_report(ALICE, JOB_ID, "https://s/")


def test_labels_wait_for_the_job_then_are_asked_for_once_absent() -> None:
    running = a_job(succeeded=4)
    done = a_job(succeeded=10, results=ResultsFile(key="results/a.csv", size=1, rows=10, written_at=NOW))
    worker = RecordingWorker()
    # A running job: not ready, and nothing is asked for
    answer = queries(FakeJobs(running), worker=worker).labels(ALICE, JOB_ID, "svg")
    assert isinstance(answer, NotReady) and answer.error == "job_not_done"
    assert worker.asked == []
    # A done job without labels: being built (None), the build asked for in the format wanted
    assert queries(FakeJobs(done), worker=worker).labels(ALICE, JOB_ID, "svg") is None
    assert worker.asked == [("labels", JOB_ID, "svg")]
