"""A job's QR labels ZIP built under moto (the jobs table from template.yaml, S3's multipart
upload): a build given a tiny budget per invocation spans several, each handing the lease and its
saved state to the next, and the ZIP they make is whole and correct; a duplicated event while
the lease is held does nothing."""

import io
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import boto3
import pytest
import zxingcpp
from PIL import Image

from shortener import clock
from shortener.jobs.bucket import BulkFiles
from shortener.jobs.labels import LabelsOptions, LabelsWriter, labels_key
from shortener.jobs.model import Job, RowOutcome
from shortener.jobs.store import JobsStore
from shortener.jobs.tasks_model import LabelsRequest
from tests.support.bulk import create_bulk_bucket

pytestmark = pytest.mark.integration

JOB_ID = "c" * 32
ROWS, CHUNK_ROWS = 23, 5


@dataclass
class Successor:
    """The jobs worker's next invocations, as the events it would be sent."""

    asked: list[LabelsRequest] = field(default_factory=list)

    def request_labels(self, request: LabelsRequest) -> None:
        self.asked.append(request)


def labels_per_invocation(count: int) -> Callable[[], float]:
    """An invocation's remaining time that runs short after ``count`` asks (the builder asks when
    it claims, when it saves, and after each label)."""
    asks = iter(range(1_000_000))
    return lambda: 900.0 if next(asks) < count else 100.0


@pytest.fixture
def done_job(tables: dict[str, str]) -> tuple[JobsStore, str]:
    """A done job of 23 rows in chunks of 5, every fourth row failed (no code, no label)."""
    bucket = create_bulk_bucket()
    jobs = JobsStore(tables["JOBS_TABLE"])
    chunks = (ROWS + CHUNK_ROWS - 1) // CHUNK_ROWS
    job = Job(
        job_id=JOB_ID,
        total=ROWS,
        chunks=chunks,
        created_at=clock.now(),
        bucket=bucket,
        base_url="https://sho.rt/",
        owner="alice",
    )
    expires = clock.epoch_seconds() + int(timedelta(days=1).total_seconds())
    jobs.create_job(job, expires)
    for chunk in range(chunks):
        first = chunk * CHUNK_ROWS + 1
        outcomes = [
            RowOutcome(
                row=n,
                url=f"https://example.com/{n}",
                code="" if n % 4 == 0 else f"L{n:03d}",
                error="x" * (n % 4 == 0),
            )
            for n in range(first, min(first + CHUNK_ROWS, ROWS + 1))
        ]
        jobs.record_outcomes(
            JOB_ID, chunk, first_row=first, outcomes=outcomes, now=clock.epoch_seconds(), expires_at=expires
        )
        failed = sum(1 for outcome in outcomes if not outcome.code)
        jobs.count_chunk(JOB_ID, chunk, succeeded=len(outcomes) - failed, failed=failed, now=clock.now())
    stored = jobs.get_job(JOB_ID)
    assert stored is not None and stored.complete
    return jobs, bucket


def test_a_build_with_a_tiny_budget_spans_invocations_and_makes_a_whole_zip(
    done_job: tuple[JobsStore, str], tmp_path: Path
) -> None:
    jobs, bucket = done_job
    successor = Successor()
    # Directory segments of 150 bytes: several are spilled to S3 and streamed back at the end
    writer = LabelsWriter(jobs, BulkFiles(), successor, LabelsOptions(image_size=64, directory_bytes=150))
    # Given invocations that each have time for 3 labels
    report = writer.write(
        LabelsRequest(job_id=JOB_ID, format="png"), "invocation-1", labels_per_invocation(3)
    )
    assert report.outcome == "continued" and 1 <= report.labels <= 3
    # While the first hands over, a duplicated event of another invocation finds the lease held
    duplicate = writer.write(
        LabelsRequest(job_id=JOB_ID, format="png"), "invocation-x", labels_per_invocation(99)
    )
    assert duplicate.outcome == "busy"
    # When every successor runs with the lease it was handed
    invocations = [report]
    while successor.asked:
        request = successor.asked.pop()
        assert request.owner == f"invocation-{len(invocations)}"  # the holder that handed over
        invocations.append(
            writer.write(request, f"invocation-{len(invocations) + 1}", labels_per_invocation(3))
        )
        if len(invocations) == 2:
            # A duplicate of that event, once the successor took the lease, finds it held
            twin = writer.write(request, "invocation-twin", labels_per_invocation(3))
            assert twin.outcome == "busy"
    # Then the 18 labels took several invocations, each drawing its share once, the last wrote the ZIP
    outcomes = [answer.outcome for answer in invocations]
    assert len(outcomes) >= 6 and outcomes == ["continued"] * (len(outcomes) - 1) + ["written"]
    assert sum(answer.labels for answer in invocations) == 18
    body = boto3.client("s3").get_object(Bucket=bucket, Key=labels_key(JOB_ID, "png"))["Body"].read()
    archive = zipfile.ZipFile(io.BytesIO(body))
    expected = [f"{n:02d}-L{n:03d}.png" for n in range(1, ROWS + 1) if n % 4]
    assert archive.namelist() == expected
    assert archive.testzip() is None
    for name in expected[::5]:
        image = Image.open(io.BytesIO(archive.read(name)))
        assert [found.text for found in zxingcpp.read_barcodes(image)] == [f"https://sho.rt/{name[3:7]}"]
    if shutil.which("unzip"):
        (tmp_path / "labels.zip").write_bytes(body)
        checked = subprocess.run(
            ["unzip", "-t", str(tmp_path / "labels.zip")], capture_output=True, text=True, check=False
        )
        assert checked.returncode == 0, checked.stdout
    # And nothing of the build is left: no other objects under labels/, no open upload, no state
    listed = boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix="labels/").get("Contents", [])
    assert [item["Key"] for item in listed] == [labels_key(JOB_ID, "png")]
    assert boto3.client("s3").list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    item = (
        boto3.client("dynamodb")
        .get_item(TableName=jobs.table_name, Key={"job_id": {"S": JOB_ID}, "sk": {"S": "job"}})
        .get("Item", {})
    )
    assert not [name for name in item if name.startswith("labels_")]
    # And a request after it finds the ZIP written
    again = writer.write(
        LabelsRequest(job_id=JOB_ID, format="png"), "invocation-late", labels_per_invocation(3)
    )
    assert again.outcome == "already_written"
