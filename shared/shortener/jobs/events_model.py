"""The event put on the account's default EventBridge bus when a bulk job ends (its results are
ready): a rule on ``source`` and ``detail-type`` routes it to a queue, a function, or a webhook
through an API destination."""

from datetime import datetime

from pydantic import BaseModel

from shortener.jobs.model import JobError

SOURCE = "shortener.jobs"
DETAIL_TYPE = "Bulk job ended"


class JobResultsLocation(BaseModel):
    """Where a job's results are: the API's results URL (a key is needed; larger jobs answer it
    with a redirect to the file) and the file in S3."""

    results_url: str
    bucket: str
    key: str
    rows: int
    size: int


class JobEndedDetail(BaseModel):
    """The ``detail`` of a job-ended event. Put at least once: a consumer dedupes on ``job_id``."""

    job_id: str
    owner: str | None
    status: str
    total: int
    succeeded: int
    failed: int
    created_at: datetime
    ended_at: datetime
    status_url: str
    results: JobResultsLocation
    # Set when the job ended early (an unreadable line, a replaced file): the rows before it are done.
    error: JobError | None = None


class JobEventNotPutError(Exception):
    """EventBridge did not take a job event (or could not be reached)."""
