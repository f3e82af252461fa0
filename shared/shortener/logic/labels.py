"""A job's QR labels: one image per shortened row, in one ZIP written once to S3 as a file.

Built on request by the files function: the job's row outcomes are read page by page, each
image is drawn and added, and the archive goes to S3 in parts as it grows (a ZIP written to a
stream that cannot seek, with data descriptors), so memory stays flat whatever the job's size.
Entries are named ``<row zero-padded to the job's width>-<code>.<ext>`` and dated 1980-01-01, so
the same job gives the same bytes every time."""

import zipfile
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from typing import Literal, Protocol

from shortener import clock
from shortener.logic.qr import qr_image
from shortener.models.jobs import Job, RowOutcome
from shortener.models.qr import DEFAULT_QR_SIZE, QrFormat

# One files function invocation (900 s at 1,024 MB, about 0.6 vCPU) draws about 100,000 PNG labels
# at the measured 5 ms of CPU each (make bench ARGS=qr_labels): larger jobs are refused rather than
# built forever, until a build can continue in a next invocation.
MAX_LABEL_ROWS = 50_000
# A builder that started this long ago and wrote no archive has died: the next request asks again.
BUILD_LEASE = timedelta(minutes=15)
_PART_BYTES = 1024 * 1024
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)

LabelsState = Literal["ready", "building", "absent"]


def labels_key(job_id: str, image_format: QrFormat) -> str:
    return f"labels/{job_id}-{image_format}.zip"


def building_key(job_id: str, image_format: QrFormat) -> str:
    """The marker a builder writes when it starts (its time tells whether it is still at work)."""
    return f"labels/{job_id}-{image_format}.building"


def label_name(row: int, width: int, code: str, image_format: QrFormat) -> str:
    return f"{row:0{width}d}-{code}.{image_format}"


def row_width(total: int) -> int:
    """Digits of the job's last row number: every name of a job has as many."""
    return len(str(max(total, 1)))


class _Sink:
    """A write-only stream that hands out what was written since the last take (no seek: the
    ZIP is written with data descriptors)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._position = 0
        self.pending = 0

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        self._position += len(data)
        self.pending += len(data)
        return len(data)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        taken = b"".join(self._parts)
        self._parts, self.pending = [], 0
        return taken


def label_zip_blocks(
    outcomes: Iterable[RowOutcome],
    base_url: str,
    image_format: QrFormat,
    *,
    width: int,
    size: int = DEFAULT_QR_SIZE,
) -> Iterator[bytes]:
    """The ZIP of the shortened rows' QR codes, as blocks of about a megabyte (rows without a
    code have no label). PNGs are stored (already compressed), SVGs deflated."""
    sink = _Sink()
    compression = zipfile.ZIP_STORED if image_format == "png" else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(sink, "w", compression=compression) as archive:  # type: ignore[call-overload]
        for outcome in outcomes:
            if not outcome.code:
                continue
            entry = zipfile.ZipInfo(label_name(outcome.row, width, outcome.code, image_format), _ZIP_EPOCH)
            entry.compress_type = compression
            archive.writestr(entry, qr_image(base_url + outcome.code, image_format, size))
            if sink.pending >= _PART_BYTES:
                yield sink.take()
    yield sink.take()


class LabelRecords(Protocol):
    """What building labels needs of the jobs table (``shortener.dal.jobs.JobsStore``)."""

    def get_job(self, job_id: str) -> Job | None: ...
    def iter_chunk_outcomes(
        self, job_id: str, from_chunk: int = 0
    ) -> Iterator[tuple[int, list[RowOutcome]]]: ...


class LabelFiles(Protocol):
    """What building and serving labels needs of S3 (``shortener.dal.files.BulkFiles``)."""

    def write(
        self, bucket: str, key: str, blocks: Iterable[bytes], *, content_type: str, file_name: str
    ) -> int: ...
    def modified_at(self, bucket: str, key: str) -> datetime | None: ...


class LabelsWriter:
    """Writes a done job's labels archive (the same bytes whoever writes it, so a second writer
    is harmless)."""

    def __init__(self, jobs: LabelRecords, files: LabelFiles) -> None:
        self._jobs = jobs
        self._files = files

    def write(self, job_id: str, image_format: QrFormat) -> str | None:
        """The archive's key once written; None for an unknown or unfinished job."""
        job = self._jobs.get_job(job_id)
        if job is None or not job.complete or not job.bucket:
            return None
        self._files.write(
            job.bucket,
            building_key(job_id, image_format),
            [clock.now().isoformat().encode()],
            content_type="text/plain",
            file_name="building.txt",
        )
        outcomes = (outcome for _, chunk in self._jobs.iter_chunk_outcomes(job_id) for outcome in chunk)
        key = labels_key(job_id, image_format)
        self._files.write(
            job.bucket,
            key,
            label_zip_blocks(outcomes, job.base_url, image_format, width=row_width(job.total)),
            content_type="application/zip",
            file_name=f"{job_id}-qr-{image_format}.zip",
        )
        return key


def labels_state(
    files: LabelFiles, job: Job, image_format: QrFormat, now: Callable[[], datetime] = clock.now
) -> LabelsState:
    """Whether the job's archive is there, being built (a builder started within its lease), or
    neither (it is to be asked for)."""
    if files.modified_at(job.bucket, labels_key(job.job_id, image_format)) is not None:
        return "ready"
    started = files.modified_at(job.bucket, building_key(job.job_id, image_format))
    return "building" if started is not None and now() - started < BUILD_LEASE else "absent"
