"""The splitter's memory and speed by file size: a generated file is split through the real calls
(a streamed GetObject, SendMessageBatch, checkpoint UpdateItems) against an embedded AWS in another
process, so this process's peak resident memory is the splitter's own, as in its Lambda
environment. Flat memory means the same peak whatever the number of rows.

    python -m benchmarks split_memory [--rows 100000 1000000 2000000]

Each size runs in fresh processes: one holds the embedded AWS, one generates and uploads the file,
one splits it (peak memory is a high-water mark, so the split gets a process of its own). The
queue is emptied as it fills: the messages are not processed here (bulk and e2e tests do that).
"""

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    options = parser.parse_args()
    print("rows        file      split in   rows/s    splitter peak memory (start -> peak)")
    for rows in options.rows:
        answer = subprocess.run(
            [sys.executable, "-m", "benchmarks.split_memory", "--one", str(rows)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        figures = json.loads(answer.stdout.strip().splitlines()[-1])
        print(
            f"{rows:>9,}  {figures['megabytes']:>6.1f} MB  {figures['seconds']:>7.1f} s  "
            f"{rows / figures['seconds']:>7,.0f}    {figures['start_mb']} MB -> {figures['peak_mb']} MB"
        )


def one(rows: int) -> None:
    """An embedded AWS, a file of ``rows`` rows uploaded to it, then split; the figures as JSON."""
    from local_stack.embedded.server import EmbeddedAws
    from local_stack.patches import install_moto_fixes

    install_moto_fixes()  # the services' moto patches, as the stack runs with

    aws = EmbeddedAws(0)
    aws.start()
    try:
        prepared = _step("--prepare", aws.url, str(rows))
        split = _step("--split", aws.url, json.dumps(prepared))
        print(json.dumps({**prepared, **split}))
    finally:
        aws.stop()


def _step(*arguments: str) -> dict[str, Any]:
    answer = subprocess.run(
        [sys.executable, "-m", "benchmarks.split_memory", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(answer.stdout.strip().splitlines()[-1]))


def _use(endpoint: str) -> None:
    os.environ.update(
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="local",
        AWS_SECRET_ACCESS_KEY="local",
        AWS_DEFAULT_REGION="us-east-1",
    )


def prepare(endpoint: str, rows: int) -> dict[str, Any]:
    """The table, bucket and queue, a job waiting for its file, and the generated file uploaded."""
    _use(endpoint)
    import boto3

    from local_stack.cloudformation.template import create_table_arguments
    from shortener.jobs.bucket import BulkFiles
    from shortener.jobs.bulk import BulkOptions, JobOrigin, create_upload_job
    from shortener.jobs.store import JobsStore
    from shortener.jobs.tasks_model import SplitRequest
    from shortener.jobs.view_model import DirectUploadRequest

    boto3.client("dynamodb").create_table(**create_table_arguments("JobsTable", "jobs"))
    boto3.client("s3").create_bucket(Bucket="bulk")
    queue_url = boto3.client("sqs").create_queue(QueueName="bulk")["QueueUrl"]
    jobs = JobsStore("jobs")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "catalogue.csv"
        with path.open("w", encoding="utf-8") as out:
            out.write("url\n")
            for number in range(rows):
                out.write(f"https://shop.example.com/catalogue/{number}?utm_source=bench\n")
        size = path.stat().st_size
        job, _ = create_upload_job(
            DirectUploadRequest(file_name=path.name, size=size),
            jobs=jobs,
            files=BulkFiles(),
            origin=JobOrigin(bucket="bulk"),
            options=BulkOptions(),
            url_seconds=600,
        )
        assert job.upload is not None
        with path.open("rb") as body:
            etag = boto3.client("s3").put_object(Bucket="bulk", Key=job.upload.key, Body=body)["ETag"]
    return {
        "rows": rows,
        "megabytes": size / 1e6,
        "queue_url": queue_url,
        "request": SplitRequest(
            job_id=job.job_id, bucket="bulk", key=job.upload.key, etag=etag.strip('"')
        ).model_dump(),
    }


def split(endpoint: str, prepared: dict[str, Any]) -> dict[str, Any]:
    """Split the prepared file in this (fresh) process: its time and this process's peak memory."""
    _use(endpoint)
    import boto3

    from shortener.jobs.bucket import BulkFiles
    from shortener.jobs.split import Splitter
    from shortener.jobs.store import JobsStore
    from shortener.jobs.tasks_model import SplitRequest
    from shortener.loops.queue import BulkQueue

    sqs = boto3.client("sqs")
    start_mb = _peak_mb()

    class Emptied(BulkQueue):
        """Sends, and empties the queue now and then (PurgeQueue works once a minute)."""

        def send_all(self, queue_url: str, bodies: list[str]) -> int:  # type: ignore[override]
            calls = super().send_all(queue_url, bodies)
            with contextlib.suppress(sqs.exceptions.PurgeQueueInProgress):
                sqs.purge_queue(QueueUrl=queue_url)
            return calls

    class NoSuccessor:
        def continue_split(self, request: SplitRequest) -> None:
            raise AssertionError("one invocation is enough here")

        def request_results(self, job_id: str) -> None:
            pass

    started = time.monotonic()
    request = SplitRequest.model_validate(prepared["request"])
    report = Splitter(JobsStore("jobs"), BulkFiles(), Emptied(), prepared["queue_url"], NoSuccessor()).split(
        request, "benchmark", lambda: 86_400.0
    )
    assert report.outcome == "split" and report.rows == prepared["rows"], report
    return {
        "seconds": time.monotonic() - started,
        "start_mb": start_mb,
        "peak_mb": _peak_mb(),
    }


def _peak_mb() -> int:
    """This process's own peak resident memory (VmHWM): not ru_maxrss, which on Linux keeps the
    high-water mark of the spawning process (here the one holding the embedded AWS and the file)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        one(int(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "--prepare":
        print(json.dumps(prepare(sys.argv[2], int(sys.argv[3]))))
    elif len(sys.argv) == 4 and sys.argv[1] == "--split":
        print(json.dumps(split(sys.argv[2], json.loads(sys.argv[3]))))
    else:
        main()
