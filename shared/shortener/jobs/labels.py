"""A job's QR labels: one image per shortened row, in one ZIP written to S3 as a file, built by
the jobs worker on request, whatever the job's size.

Memory stays flat: each image is drawn and added as the job's outcomes are read page by page;
the archive's bytes go to S3's multipart upload in parts (``part_bytes``), and its central
directory, which a ZIP writes after the last entry, is spilled to S3 objects of about a
megabyte (``directory_bytes``) as it grows and streamed back into the last parts at the end
(shortener.jobs.zip_stream: ZIP64 where counts or offsets need it).

Any size works: one invocation at a time holds the job's labels lease, and saves where its build
stands (``LabelsBuild``: the upload id, the parts sent, the next outcome, the archive's counters,
the directory segments and the bytes since the last part, kept in a ``carry`` object) with the
same conditional write that extends its lease: after every part, and before its time runs out,
when it hands the lease to a new invocation that continues from there (as a split continues).
An invocation that dies leaves its last saved state: a retry, or the next request once the
lease has run out, resumes from it (the parts sent after it are sent again, with the same
numbers). The ZIP appears only when its upload is completed, never half-written; a build whose
upload is gone starts again, and an upload left behind is aborted by the bucket's lifecycle
rule (template.yaml, labels/).

Entries are named ``<row zero-padded to the job's width>-<code>.<ext>`` and dated 1980-01-01, so
the same job gives the same bytes every time."""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Protocol

from shortener import clock
from shortener.exceptions import MultipartUploadGoneError
from shortener.jobs.model import Job, RowOutcome
from shortener.jobs.tasks_model import LabelsRequest
from shortener.jobs.zip_stream import ZipLimits, ZipStreamWriter
from shortener.links.qr import qr_image
from shortener.links.qr_model import DEFAULT_QR_SIZE, LabelsBuild, QrFormat

# The API answers 202 while a builder wrote its marker within this long (one invocation's
# longest run): a builder that died is asked for again after it, and resumes.
BUILD_LEASE = timedelta(minutes=15)
# S3 takes at most 10,000 parts, of at least 5 MiB but the last: 8 MiB parts hold 80 GB of labels
# (about 120 million PNGs at 512 px).
PART_BYTES = 8 * 1024 * 1024
DIRECTORY_SEGMENT_BYTES = 1024 * 1024
_ZIP_CONTENT_TYPE = "application/zip"

LabelsState = Literal["ready", "building", "absent"]
LabelsOutcome = Literal["written", "continued", "already_written", "busy", "taken_over", "unknown_job"]


def labels_key(job_id: str, image_format: QrFormat) -> str:
    return f"labels/{job_id}-{image_format}.zip"


def building_key(job_id: str, image_format: QrFormat) -> str:
    """The marker each invocation of a build writes when it starts (its time tells whether the
    build is still at work)."""
    return f"labels/{job_id}-{image_format}.building"


def carry_key(job_id: str, image_format: QrFormat) -> str:
    return f"labels/{job_id}-{image_format}.build/carry"


def segment_key(job_id: str, image_format: QrFormat, segment: int) -> str:
    return f"labels/{job_id}-{image_format}.build/directory-{segment:05d}"


def label_name(row: int, width: int, code: str, image_format: QrFormat) -> str:
    return f"{row:0{width}d}-{code}.{image_format}"


def row_width(total: int) -> int:
    """Digits of the job's last row number: every name of a job has as many."""
    return len(str(max(total, 1)))


class LabelRecords(Protocol):
    """What building labels needs of the jobs table (``shortener.jobs.store.JobsStore``)."""

    def get_job(self, job_id: str) -> Job | None: ...
    def iter_chunk_outcomes(
        self, job_id: str, from_chunk: int = 0
    ) -> Iterator[tuple[int, list[RowOutcome]]]: ...
    def claim_labels(
        self,
        job_id: str,
        image_format: QrFormat,
        owner: str,
        *,
        handed: str | None,
        now: int,
        lease_until: int,
    ) -> "LabelsClaimed | None": ...
    def save_labels(
        self, job_id: str, image_format: QrFormat, owner: str, build: LabelsBuild, *, lease_until: int
    ) -> bool: ...
    def release_labels(self, job_id: str, image_format: QrFormat, owner: str, *, finished: bool) -> None: ...


class LabelsClaimed(Protocol):
    """A claimed lease (``shortener.jobs.store.labels_lease.LabelsClaim``)."""

    @property
    def build(self) -> LabelsBuild | None: ...


class LabelFiles(Protocol):
    """What building and serving labels needs of S3 (``shortener.jobs.bucket.BulkFiles``)."""

    def write(
        self, bucket: str, key: str, blocks: Iterable[bytes], *, content_type: str, file_name: str
    ) -> int: ...
    def modified_at(self, bucket: str, key: str) -> datetime | None: ...
    def start_upload(self, bucket: str, key: str, *, content_type: str, file_name: str) -> str: ...
    def upload_part(self, bucket: str, key: str, upload_id: str, number: int, body: bytes) -> None: ...
    def complete_upload(self, bucket: str, key: str, upload_id: str, parts: int) -> None: ...
    def abort_upload(self, bucket: str, key: str, upload_id: str) -> None: ...
    def read_all(self, bucket: str, key: str) -> Iterator[bytes]: ...
    def put(self, bucket: str, key: str, body: bytes) -> None: ...
    def delete(self, bucket: str, keys: list[str]) -> None: ...


class LabelsSuccessor(Protocol):
    """Starts the invocation that continues a build (``shortener.jobs.invoke.JobsWorker``)."""

    def request_labels(self, request: LabelsRequest) -> None: ...


@dataclass(frozen=True, slots=True)
class LabelsOptions:
    """Sizes and timing of a build (tests make them small)."""

    part_bytes: int = PART_BYTES
    directory_bytes: int = DIRECTORY_SEGMENT_BYTES
    # Stop drawing and hand over when less than this remains of the invocation: enough to send a
    # part, save the state and start the successor.
    handover_seconds: float = 120
    # How long a lease outlives its invocation's deadline, and how long a successor has to start.
    lease_grace_seconds: int = 60
    image_size: int = DEFAULT_QR_SIZE
    zip_limits: ZipLimits = field(default_factory=ZipLimits)
    # Draws one label: (short URL, format, size) -> image bytes.
    draw: Callable[[str, QrFormat, int], bytes] = qr_image


@dataclass(slots=True)
class LabelsReport:
    """What one invocation of a build did."""

    outcome: LabelsOutcome
    key: str | None = None
    labels: int = 0  # labels drawn by this invocation
    parts: int = 0  # parts sent by this invocation


class LabelsWriter:
    """Builds a done job's labels archive (see the module docstring)."""

    def __init__(
        self,
        jobs: LabelRecords,
        files: LabelFiles,
        successor: LabelsSuccessor,
        options: LabelsOptions | None = None,
    ) -> None:
        self._jobs = jobs
        self._files = files
        self._successor = successor
        self._options = options or LabelsOptions()

    def write(self, request: LabelsRequest, owner: str, seconds_left: Callable[[], float]) -> LabelsReport:
        """Build (or go on building) ``request``'s archive as ``owner`` (the invocation; a
        continuation's request names the holder that handed the lease over)."""
        job = self._jobs.get_job(request.job_id)
        if job is None or not job.complete or not job.bucket:
            return LabelsReport("unknown_job")
        image_format = request.format
        key = labels_key(job.job_id, image_format)
        now = clock.epoch_seconds()
        claim = self._jobs.claim_labels(
            job.job_id,
            image_format,
            owner,
            handed=request.owner,
            now=now,
            lease_until=now + int(seconds_left()) + self._options.lease_grace_seconds,
        )
        if claim is None:
            return LabelsReport("busy")
        build = _Build(self, job, image_format, owner, seconds_left)
        try:
            if self._files.modified_at(job.bucket, key) is not None:
                # Written before (a duplicate request, or a builder that died right after).
                build.clean_up(claim.build)
                return LabelsReport("already_written", key)
            self._files.write(
                job.bucket,
                building_key(job.job_id, image_format),
                [clock.now().isoformat().encode()],
                content_type="text/plain",
                file_name="building.txt",
            )
            try:
                return build.run(claim.build)
            except MultipartUploadGoneError:
                # Its upload was aborted (the lifecycle rule, or by hand): start again.
                return _Build(self, job, image_format, owner, seconds_left).run(None)
        except Exception:
            # Let a retry of this invocation take the build over at once, from its saved state.
            self._jobs.release_labels(job.job_id, image_format, owner, finished=False)
            raise


class _Build:
    """One invocation's share of a build."""

    def __init__(
        self,
        writer: LabelsWriter,
        job: Job,
        image_format: QrFormat,
        owner: str,
        seconds_left: Callable[[], float],
    ) -> None:
        self.w = writer
        self.job = job
        self.format: QrFormat = image_format
        self.owner = owner
        self.seconds_left = seconds_left
        self.key = labels_key(job.job_id, image_format)
        self.pending = bytearray()  # archive bytes not yet in a part
        self.directory = bytearray()  # central directory records not yet in a segment
        self.report = LabelsReport("written", self.key)

    def run(self, saved: LabelsBuild | None) -> LabelsReport:
        files, options, job = self.w._files, self.w._options, self.job
        if saved is None:
            upload_id = files.start_upload(
                job.bucket,
                self.key,
                content_type=_ZIP_CONTENT_TYPE,
                file_name=f"{job.job_id}-qr-{self.format}.zip",
            )
            saved = LabelsBuild(upload_id=upload_id)
            if not self._save(saved):
                files.abort_upload(job.bucket, self.key, upload_id)
                return LabelsReport("taken_over")
        elif saved.carry:
            for block in files.read_all(job.bucket, carry_key(job.job_id, self.format)):
                self.pending += block
        self.state = saved
        self.zip = ZipStreamWriter(offset=saved.offset, entries=saved.entries, limits=options.zip_limits)
        width = row_width(job.total)
        urls = job.short_urls()
        for chunk, outcomes in self.w._jobs.iter_chunk_outcomes(job.job_id, saved.chunk):
            skip = saved.skip if chunk == saved.chunk else 0
            for index in range(skip, len(outcomes)):
                outcome = outcomes[index]
                self.state.chunk, self.state.skip = chunk, index + 1
                if not outcome.code:
                    continue
                short_url = urls.short_url(outcome.domain, outcome.code)
                image = options.draw(short_url, self.format, options.image_size)
                entry = self.zip.add(
                    label_name(outcome.row, width, outcome.code, self.format),
                    image,
                    deflate=self.format == "svg",
                )
                self.pending += entry.data
                self.directory += entry.directory_record
                self.state.directory_bytes += len(entry.directory_record)
                self.report.labels += 1
                if len(self.directory) >= options.directory_bytes:
                    self._spill_directory()
                if len(self.pending) >= options.part_bytes:
                    self._send_part()
                    if not self._checkpoint():
                        return self._outcome("taken_over")
                if self.seconds_left() < options.handover_seconds:
                    return self._hand_over()
        return self._finish()

    # ---- parts, segments, saved state ---------------------------------------------------------

    def _send_part(self) -> None:
        self.state.parts += 1
        self.w._files.upload_part(
            self.job.bucket, self.key, self.state.upload_id, self.state.parts, bytes(self.pending)
        )
        self.pending.clear()
        self.report.parts += 1

    def _spill_directory(self) -> None:
        if self.directory:
            self.w._files.put(
                self.job.bucket,
                segment_key(self.job.job_id, self.format, self.state.segments),
                bytes(self.directory),
            )
            self.state.segments += 1
            self.directory.clear()

    def _checkpoint(self, *, lease_until: int | None = None) -> bool:
        """Save the state after putting aside what memory holds (the directory records and the
        bytes since the last part), so a successor or a retry resumes exactly here."""
        self._spill_directory()
        if self.pending:
            self.w._files.put(self.job.bucket, carry_key(self.job.job_id, self.format), bytes(self.pending))
        self.state.carry = len(self.pending)
        self.state.offset, self.state.entries = self.zip.offset, self.zip.entries
        return self._save(self.state, lease_until=lease_until)

    def _save(self, build: LabelsBuild, *, lease_until: int | None = None) -> bool:
        lease = (
            lease_until
            or clock.epoch_seconds() + int(self.seconds_left()) + self.w._options.lease_grace_seconds
        )
        return self.w._jobs.save_labels(self.job.job_id, self.format, self.owner, build, lease_until=lease)

    def _hand_over(self) -> LabelsReport:
        """Save the state, keep the lease for the successor a little while, and start it. Each
        invocation draws at least one label, so a build always moves on."""
        handover_lease = clock.epoch_seconds() + self.w._options.lease_grace_seconds
        if not self._checkpoint(lease_until=handover_lease):
            return self._outcome("taken_over")
        self.w._successor.request_labels(
            LabelsRequest(job_id=self.job.job_id, format=self.format, owner=self.owner)
        )
        return self._outcome("continued")

    def _finish(self) -> LabelsReport:
        """Append the central directory (its spilled segments, then what memory holds) and the end
        records, send the last parts and complete the upload: the ZIP appears whole."""
        files, bucket = self.w._files, self.job.bucket
        self.state.offset, self.state.entries = self.zip.offset, self.zip.entries
        for segment in range(self.state.segments):
            for block in files.read_all(bucket, segment_key(self.job.job_id, self.format, segment)):
                self.pending += block
                if len(self.pending) >= self.w._options.part_bytes:
                    self._send_part()
        self.pending += self.directory
        self.pending += self.zip.end(self.state.directory_bytes)
        self._send_part()
        files.complete_upload(bucket, self.key, self.state.upload_id, self.state.parts)
        self.clean_up(self.state, completed=True)
        return self.report

    def clean_up(self, build: LabelsBuild | None, *, completed: bool = False) -> None:
        """Once the archive is written: drop the build's saved objects and state, and its upload
        unless it is the one just ``completed`` (one a builder left when it died between
        completing and cleaning up, or a second build's, is aborted)."""
        job, files = self.job, self.w._files
        keys = [building_key(job.job_id, self.format), carry_key(job.job_id, self.format)]
        if build is not None:
            keys += [segment_key(job.job_id, self.format, n) for n in range(build.segments)]
            if not completed:
                files.abort_upload(job.bucket, self.key, build.upload_id)
        files.delete(job.bucket, keys)
        self.w._jobs.release_labels(job.job_id, self.format, self.owner, finished=True)

    def _outcome(self, outcome: LabelsOutcome) -> LabelsReport:
        self.report.outcome = outcome
        return self.report


def labels_state(
    files: LabelFiles, job: Job, image_format: QrFormat, now: Callable[[], datetime] = clock.now
) -> LabelsState:
    """Whether the job's archive is there, being built (an invocation of its build started within
    the lease), or neither (it is to be asked for)."""
    if files.modified_at(job.bucket, labels_key(job.job_id, image_format)) is not None:
        return "ready"
    started = files.modified_at(job.bucket, building_key(job.job_id, image_format))
    return "building" if started is not None and now() - started < BUILD_LEASE else "absent"
