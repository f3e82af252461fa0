"""A job's QR labels ZIP: one decodable image per shortened row, named by row and code, written
as a stream of parts with its central directory spilled as it grows, the same bytes every time.
Against small fakes of the jobs table and the bucket (the moto ones are in
tests/shortener/jobs/test_labels_build.py)."""

import io
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import zxingcpp
from PIL import Image

from shortener import clock
from shortener.exceptions import MultipartUploadGoneError
from shortener.jobs.labels import (
    BUILD_LEASE,
    LabelsOptions,
    LabelsWriter,
    building_key,
    carry_key,
    labels_key,
    labels_state,
    row_width,
    segment_key,
)
from shortener.jobs.model import Job, RowOutcome
from shortener.jobs.tasks_model import LabelsRequest
from shortener.links.qr_model import LabelsBuild, QrFormat

JOB_ID = "f" * 32
BUCKET = "bulk"


def outcomes(count: int) -> list[RowOutcome]:
    """Rows 1..count; every fifth has no code (an error), so it gets no label."""
    return [
        RowOutcome(
            row=n,
            url=f"https://example.com/{n}",
            code=f"c{n:03d}" if n % 5 else "",
            error="" if n % 5 else "x",
        )
        for n in range(1, count + 1)
    ]


@dataclass
class Claim:
    build: LabelsBuild | None


@dataclass
class FakeJobs:
    """The jobs table's part that a build uses: the job, its chunks, the labels lease."""

    job: Job
    chunks: list[list[RowOutcome]]
    owner: str | None = None
    lease: int = 0
    saved: LabelsBuild | None = None

    def get_job(self, job_id: str) -> Job | None:
        return self.job if job_id == self.job.job_id else None

    def iter_chunk_outcomes(self, job_id: str, from_chunk: int = 0) -> Iterator[tuple[int, list[RowOutcome]]]:
        for number, chunk in enumerate(self.chunks):
            if number >= from_chunk:
                yield number, list(chunk)

    def claim_labels(
        self,
        job_id: str,
        image_format: QrFormat,
        owner: str,
        *,
        handed: str | None,
        now: int,
        lease_until: int,
    ) -> Claim | None:
        if self.owner not in (None, owner, handed) and self.lease >= now:
            return None
        self.owner, self.lease = owner, lease_until
        return Claim(self.saved.model_copy() if self.saved else None)

    def save_labels(
        self, job_id: str, image_format: QrFormat, owner: str, build: LabelsBuild, *, lease_until: int
    ) -> bool:
        if self.owner != owner:
            return False
        self.saved, self.lease = build.model_copy(), lease_until
        return True

    def release_labels(self, job_id: str, image_format: QrFormat, owner: str, *, finished: bool) -> None:
        if self.owner == owner:
            self.owner, self.lease = None, 0
            if finished:
                self.saved = None


@dataclass
class FakeFiles:
    """The bucket: objects, and multipart uploads whose parts (but the last) must be at least
    ``min_part`` bytes when completed, as S3's are (5 MiB there)."""

    min_part: int
    objects: dict[str, bytes] = field(default_factory=dict)
    uploads: dict[str, dict[int, bytes]] = field(default_factory=dict)
    aborted: list[str] = field(default_factory=list)
    parts_sent: int = 0

    def write(
        self, bucket: str, key: str, blocks: Iterable[bytes], *, content_type: str, file_name: str
    ) -> int:
        self.objects[key] = b"".join(blocks)
        return len(self.objects[key])

    def modified_at(self, bucket: str, key: str) -> datetime | None:
        return clock.now() if key in self.objects else None

    def start_upload(self, bucket: str, key: str, *, content_type: str, file_name: str) -> str:
        upload_id = f"upload-{len(self.uploads) + 1}"
        self.uploads[upload_id] = {}
        return upload_id

    def upload_part(self, bucket: str, key: str, upload_id: str, number: int, body: bytes) -> None:
        if upload_id not in self.uploads:
            raise MultipartUploadGoneError(upload_id)
        self.uploads[upload_id][number] = body
        self.parts_sent += 1

    def complete_upload(self, bucket: str, key: str, upload_id: str, parts: int) -> None:
        sent = self.uploads.pop(upload_id)
        numbers = sorted(number for number in sent if number <= parts)
        assert numbers == list(range(1, parts + 1))
        assert all(len(sent[number]) >= self.min_part for number in numbers[:-1])
        self.objects[key] = b"".join(sent[number] for number in numbers)

    def abort_upload(self, bucket: str, key: str, upload_id: str) -> None:
        self.uploads.pop(upload_id, None)
        self.aborted.append(upload_id)

    def read_all(self, bucket: str, key: str) -> Iterator[bytes]:
        data = self.objects[key]
        return iter([data[:7], data[7:]])

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self.objects[key] = body

    def delete(self, bucket: str, keys: list[str]) -> None:
        for key in keys:
            self.objects.pop(key, None)


@dataclass
class Successor:
    asked: list[LabelsRequest] = field(default_factory=list)

    def request_labels(self, request: LabelsRequest) -> None:
        self.asked.append(request)


def job(total: int) -> Job:
    return Job(
        job_id=JOB_ID,
        total=total,
        chunks=1,
        succeeded=total,
        created_at=clock.now(),
        bucket=BUCKET,
        base_url="https://sho.rt/",
    )


def world(
    rows: int, chunk_rows: int = 10, **options: Any
) -> tuple[LabelsWriter, FakeJobs, FakeFiles, Successor]:
    every = outcomes(rows)
    jobs = FakeJobs(job(rows), [every[n : n + chunk_rows] for n in range(0, rows, chunk_rows)])
    settings = LabelsOptions(image_size=64, **options)
    files = FakeFiles(min_part=settings.part_bytes)
    successor = Successor()
    return LabelsWriter(jobs, files, successor, settings), jobs, files, successor


def plenty() -> float:
    return 900.0


def test_one_image_per_shortened_row_named_by_zero_padded_row_and_code() -> None:
    writer, _, files, _ = world(12)
    report = writer.write(LabelsRequest(job_id=JOB_ID), "invocation-1", plenty)
    assert (report.outcome, report.key, report.labels) == ("written", labels_key(JOB_ID, "png"), 10)
    archive = zipfile.ZipFile(io.BytesIO(files.objects[labels_key(JOB_ID, "png")]))
    names = archive.namelist()
    assert names == [f"{n:02d}-c{n:03d}.png" for n in range(1, 13) if n % 5]
    for name in names:
        image = Image.open(io.BytesIO(archive.read(name)))
        code = name.split("-", 1)[1].removesuffix(".png")
        assert [found.text for found in zxingcpp.read_barcodes(image)] == [f"https://sho.rt/{code}"]
    assert archive.testzip() is None


def test_many_labels_go_out_in_parts_with_the_directory_spilled_and_nothing_left_behind() -> None:
    # Given parts of 2 kB and directory segments of 300 bytes (the same rules, cheaper to reach)
    writer, jobs, files, _ = world(300, chunk_rows=7, part_bytes=2000, directory_bytes=300)
    report = writer.write(LabelsRequest(job_id=JOB_ID, format="svg"), "invocation-1", plenty)
    # Then the archive came in many parts and holds every label, deflated, in row order
    assert report.outcome == "written" and report.parts > 10
    archive = zipfile.ZipFile(io.BytesIO(files.objects[labels_key(JOB_ID, "svg")]))
    assert [info.filename for info in archive.infolist()] == [
        f"{n:03d}-c{n:03d}.svg" for n in range(1, 301) if n % 5
    ]
    assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_DEFLATED}
    assert archive.testzip() is None
    # And the build's objects, its state and its lease are gone
    assert set(files.objects) == {labels_key(JOB_ID, "svg")}
    assert (jobs.owner, jobs.saved, files.uploads) == (None, None, {})


def test_the_same_job_gives_the_same_bytes_whoever_builds_it() -> None:
    first_writer, _, first, _ = world(20, part_bytes=3000, directory_bytes=200)
    again_writer, _, again, _ = world(20)
    first_writer.write(LabelsRequest(job_id=JOB_ID, format="svg"), "one", plenty)
    again_writer.write(LabelsRequest(job_id=JOB_ID, format="svg"), "two", plenty)
    assert first.objects[labels_key(JOB_ID, "svg")] == again.objects[labels_key(JOB_ID, "svg")]


def test_a_build_out_of_time_hands_over_and_its_successor_finishes_the_same_zip() -> None:
    # Given a clock that says time is short after every label (handover at 120 s, 100 s left)
    writer, jobs, files, successor = world(40, chunk_rows=6, part_bytes=1500, directory_bytes=250)
    report = writer.write(LabelsRequest(job_id=JOB_ID), "invocation-1", lambda: 100.0)
    # Then one label was drawn, the state saved, and the successor asked for with the lease's owner
    assert (report.outcome, report.labels) == ("continued", 1)
    assert successor.asked == [LabelsRequest(job_id=JOB_ID, format="png", owner="invocation-1")]
    assert jobs.saved is not None and jobs.saved.carry > 0 and jobs.saved.entries == 1
    # When each successor runs out of time in turn until the build is done
    invocations = 1
    while successor.asked:
        request = successor.asked.pop()
        report = writer.write(request, f"invocation-{invocations + 1}", lambda: 100.0)
        invocations += 1
    # Then 32 labels took 32 invocations, one more wrote the directory, and the ZIP equals one
    # built in one go
    assert (invocations, report.outcome) == (33, "written")
    one_go, _, at_once, _ = world(40, chunk_rows=6, part_bytes=1500, directory_bytes=250)
    one_go.write(LabelsRequest(job_id=JOB_ID), "once", plenty)
    assert files.objects[labels_key(JOB_ID, "png")] == at_once.objects[labels_key(JOB_ID, "png")]
    assert zipfile.ZipFile(io.BytesIO(files.objects[labels_key(JOB_ID, "png")])).testzip() is None


def test_a_second_builder_waits_while_the_lease_is_held() -> None:
    writer, jobs, files, _ = world(10)
    jobs.owner, jobs.lease = "other", clock.epoch_seconds() + 600
    assert writer.write(LabelsRequest(job_id=JOB_ID), "invocation-2", plenty).outcome == "busy"
    assert labels_key(JOB_ID, "png") not in files.objects and files.uploads == {}


def test_a_builder_that_died_is_resumed_from_its_last_saved_state_once_its_lease_ran_out() -> None:
    # Given a build that saved its state after some parts, then died (its lease ran out)
    writer, jobs, files, _ = world(60, chunk_rows=8, part_bytes=1500, directory_bytes=250)

    class Died(Exception):
        pass

    left = iter([900.0] * 30)

    def dies_after_a_while() -> float:
        try:
            return next(left)
        except StopIteration:
            raise Died from None

    with pytest.raises(Died):
        writer.write(LabelsRequest(job_id=JOB_ID), "invocation-1", dies_after_a_while)
    saved = jobs.saved
    assert saved is not None and saved.parts > 0
    assert jobs.owner is None  # released for a retry
    # When the next request's invocation takes the build over
    report = writer.write(LabelsRequest(job_id=JOB_ID), "invocation-2", plenty)
    # Then it went on from the saved state (not from the start) and the ZIP is whole
    assert report.outcome == "written" and report.labels < 48
    archive = zipfile.ZipFile(io.BytesIO(files.objects[labels_key(JOB_ID, "png")]))
    assert len(archive.namelist()) == 48 and archive.testzip() is None


def test_a_build_whose_upload_is_gone_starts_again_and_a_written_zip_is_not_built_twice() -> None:
    writer, jobs, files, _ = world(10)
    jobs.saved = LabelsBuild(upload_id="expired-upload", parts=1, chunk=0, skip=3, offset=5000, entries=2)
    report = writer.write(LabelsRequest(job_id=JOB_ID), "invocation-1", plenty)
    assert (report.outcome, report.labels) == ("written", 8)
    assert zipfile.ZipFile(io.BytesIO(files.objects[labels_key(JOB_ID, "png")])).testzip() is None
    # A duplicate request finds it written, and a state left by a builder that died is cleaned up
    jobs.saved = LabelsBuild(upload_id="left-behind", segments=1)
    files.objects[segment_key(JOB_ID, "png", 0)] = files.objects[carry_key(JOB_ID, "png")] = b"x"
    assert writer.write(LabelsRequest(job_id=JOB_ID), "invocation-2", plenty).outcome == "already_written"
    assert files.aborted == ["left-behind"] and jobs.saved is None
    assert set(files.objects) == {labels_key(JOB_ID, "png")}


def test_an_unknown_or_unfinished_job_builds_nothing() -> None:
    writer, jobs, files, _ = world(10)
    assert writer.write(LabelsRequest(job_id="e" * 32), "x", plenty).outcome == "unknown_job"
    jobs.job = jobs.job.model_copy(update={"succeeded": 3})
    assert writer.write(LabelsRequest(job_id=JOB_ID), "x", plenty).outcome == "unknown_job"
    assert files.objects == {}


def test_the_width_is_the_digits_of_the_last_row() -> None:
    assert [row_width(n) for n in (0, 9, 10, 999, 1000, 100_000)] == [1, 1, 2, 3, 4, 6]


@dataclass
class MarkedFiles:
    """A bucket that knows when its objects were written."""

    written: dict[str, datetime] = field(default_factory=dict)

    def modified_at(self, bucket: str, key: str) -> datetime | None:
        return self.written.get(key)


def test_a_build_is_building_while_its_marker_is_fresh_and_asked_for_again_once_stale() -> None:
    # Given a job whose build's last invocation started its marker at noon
    noon = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    files = MarkedFiles({building_key(JOB_ID, "png"): noon})
    done = job(10)
    # Then the API says building within the lease, and absent after it (a builder that died is
    # asked for again, so no 202 lasts forever)
    assert (
        labels_state(files, done, "png", now=lambda: noon + BUILD_LEASE - timedelta(seconds=1)) == "building"
    )  # type: ignore[arg-type]
    assert labels_state(files, done, "png", now=lambda: noon + BUILD_LEASE) == "absent"  # type: ignore[arg-type]
    assert labels_state(files, done, "svg", now=lambda: noon) == "absent"  # type: ignore[arg-type]
    files.written[labels_key(JOB_ID, "png")] = noon
    assert labels_state(files, done, "png", now=lambda: noon + timedelta(days=1)) == "ready"  # type: ignore[arg-type]


def test_every_invocation_of_a_build_writes_its_marker_again() -> None:
    # Given a build that hands over after each label
    writer, _, files, successor = world(3)
    markers = []
    writer.write(LabelsRequest(job_id=JOB_ID), "invocation-1", lambda: 100.0)
    markers.append(files.objects.pop(building_key(JOB_ID, "png")))
    while successor.asked:
        writer.write(successor.asked.pop(), "next", lambda: 100.0)
        if successor.asked:
            markers.append(files.objects.pop(building_key(JOB_ID, "png")))
    # Then each continuing invocation wrote the marker again (the build's heartbeat)
    assert len(markers) == 3
    assert building_key(JOB_ID, "png") not in files.objects  # the finished build removed it
