"""A job's QR labels ZIP: time, size and peak memory of building it for a job of N rows, through
the builder's own code (shortener.jobs.labels.LabelsWriter: an image drawn per row, the archive
sent in 8 MiB parts, its central directory spilled in 1 MiB segments and streamed back at the
end). The jobs table is a generator of outcomes (none held in memory) and the bucket a folder on
disk, so the process's memory is the build's own; the parts are appended to one file there,
which `unzip -t` checks once the peak is taken.

    python -m benchmarks qr_labels [--rows 10000 100000] [--format png|svg] [--drawn 1000]

Each size runs in a fresh process, so its peak resident memory is the build's own; flat memory
means the same peak whatever the number of rows. Drawing is about 5 ms of CPU a PNG label, so on
a busy machine large sizes take hours: ``--drawn N`` draws the first N labels and gives every
later row one of those images again (its own name and code, so the archive, its parts and its
central directory are those of the full job), which measures the archive's memory at any size
in minutes; the CPU and time figures are then not a build's."""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from shortener import clock
from shortener.jobs.labels import LabelsOptions, LabelsWriter
from shortener.jobs.model import Job, RowOutcome
from shortener.jobs.tasks_model import LabelsRequest
from shortener.links.qr import qr_image
from shortener.links.qr_model import LabelsBuild, QrFormat

ROOT = Path(__file__).resolve().parent.parent
JOB_ID = "b" * 32
# Rows per chunk record, as a job's messages carry them (BULK_ROWS_PER_MESSAGE).
CHUNK_ROWS = 250


def rows(first: int, last: int) -> list[RowOutcome]:
    """A job's outcomes as its chunks give them: four-character codes, every 50th row an error."""
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return [
        RowOutcome(
            row=n,
            url=f"https://shop.example/{n}",
            code="" if n % 50 == 0 else "".join(alphabet[(n * 7919 // 62**i) % 62] for i in range(4)),
        )
        for n in range(first, last + 1)
    ]


class Claim:
    def __init__(self, build: LabelsBuild | None) -> None:
        self.build = build


class GeneratedJob:
    """The jobs table's part a build reads: one done job whose chunks are made as they are read."""

    def __init__(self, count: int) -> None:
        self.job = Job(
            job_id=JOB_ID,
            total=count,
            chunks=(count + CHUNK_ROWS - 1) // CHUNK_ROWS,
            succeeded=count,
            created_at=clock.now(),
            bucket="bench",
            base_url="https://sho.rt/",
        )

    def get_job(self, job_id: str) -> Job | None:
        return self.job

    def iter_chunk_outcomes(self, job_id: str, from_chunk: int = 0) -> Iterator[tuple[int, list[RowOutcome]]]:
        for chunk in range(from_chunk, self.job.chunks):
            first = chunk * CHUNK_ROWS + 1
            yield chunk, rows(first, min(first + CHUNK_ROWS - 1, self.job.total))

    def claim_labels(self, job_id: str, image_format: QrFormat, owner: str, **_: int | str | None) -> Claim:
        return Claim(None)

    def save_labels(
        self, job_id: str, image_format: QrFormat, owner: str, build: LabelsBuild, **_: int
    ) -> bool:
        return True

    def release_labels(self, job_id: str, image_format: QrFormat, owner: str, *, finished: bool) -> None:
        pass


class FolderBucket:
    """The bucket as a folder: objects are files, an upload's parts are appended to one file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.archive = folder / "labels.zip"
        self.parts = 0

    def _path(self, key: str) -> Path:
        return self.folder / key.replace("/", "_")

    def write(self, bucket: str, key: str, blocks: Iterable[bytes], **_: str) -> int:
        data = b"".join(blocks)
        self._path(key).write_bytes(data)
        return len(data)

    def modified_at(self, bucket: str, key: str) -> datetime | None:
        return None

    def start_upload(self, bucket: str, key: str, **_: str) -> str:
        self.archive.write_bytes(b"")
        return "upload"

    def upload_part(self, bucket: str, key: str, upload_id: str, number: int, body: bytes) -> None:
        assert number == self.parts + 1
        with self.archive.open("ab") as archive:
            archive.write(body)
        self.parts = number

    def complete_upload(self, bucket: str, key: str, upload_id: str, parts: int) -> None:
        assert parts == self.parts

    def abort_upload(self, bucket: str, key: str, upload_id: str) -> None:
        pass

    def read_all(self, bucket: str, key: str) -> Iterator[bytes]:
        with self._path(key).open("rb") as stored:
            while block := stored.read(1024 * 1024):
                yield block

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self._path(key).write_bytes(body)

    def delete(self, bucket: str, keys: list[str]) -> None:
        for key in keys:
            self._path(key).unlink(missing_ok=True)


class NoSuccessor:
    def request_labels(self, request: LabelsRequest) -> None:
        raise AssertionError("a benchmark build runs in one go")


class FirstDrawn:
    """Draws the first ``count`` labels; later ones get those images again, in turn."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.images: list[bytes] = []

    def __call__(self, text: str, image_format: QrFormat, size: int) -> bytes:
        if len(self.images) < self.count:
            self.images.append(qr_image(text, image_format, size))
            return self.images[-1]
        self.images.append(self.images.pop(0))
        return self.images[-1]


def one(count: int, image_format: QrFormat, drawn: int | None) -> dict[str, Any]:
    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryDirectory(prefix="qr-labels-") as folder:
        bucket = FolderBucket(Path(folder))
        options = LabelsOptions(draw=FirstDrawn(drawn)) if drawn else LabelsOptions()
        writer = LabelsWriter(GeneratedJob(count), bucket, NoSuccessor(), options)
        started, cpu_started = time.perf_counter(), time.process_time()
        report = writer.write(LabelsRequest(job_id=JOB_ID, format=image_format), "bench", lambda: 1e9)
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        checked = subprocess.run(
            ["unzip", "-tq", str(bucket.archive)], capture_output=True, text=True, check=False
        )
        return {
            "rows": count,
            "labels": report.labels,
            "parts": bucket.parts,
            "bytes": bucket.archive.stat().st_size,
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
            "start_mb": start_rss / 1024,
            "peak_mb": peak / 1024,
            # -q prints one line: "No errors detected in compressed data of <file>."
            "unzip": "ok" if checked.returncode == 0 else (checked.stdout + checked.stderr).strip(),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--format", choices=("png", "svg"), default="png")
    parser.add_argument("--drawn", type=int, help="draw this many labels, reuse their images after")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        print(json.dumps(one(options.one, options.format, options.drawn)))
        return
    # CPU seconds say what the build costs whatever else the machine runs; wall seconds, what it took.
    print(
        f"rows       ZIP ({options.format})   parts   CPU s   wall s   rows/CPU s   "
        "peak memory (start -> peak)   unzip -t"
    )
    for count in options.rows:
        answer = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks",
                "qr_labels",
                "--one",
                str(count),
                "--format",
                options.format,
                *(("--drawn", str(options.drawn)) if options.drawn else ()),
            ],
            cwd=ROOT,
            # As the files function runs (template.yaml: MALLOC_MMAP_THRESHOLD_).
            env={**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"},
            capture_output=True,
            text=True,
            check=True,
        )
        found = json.loads(answer.stdout.strip().splitlines()[-1])
        print(
            f"{count:>9,}  {found['bytes'] / 1e6:>7.1f} MB  {found['parts']:>5}  "
            f"{found['cpu_seconds']:>6.0f}  "
            f"{found['seconds']:>7.0f}  {count / found['cpu_seconds']:>10,.0f}   "
            f"{found['start_mb']:.0f} -> {found['peak_mb']:.0f} MB   {found['unzip']}",
            flush=True,
        )
