"""The jobs worker's tasks: each kind is one typed task, told apart by its ``task`` field; what the
invoker sends is what the worker reads; and the keyed shape older versions sent still parses, so an
event queued across an update is not lost."""

import json
from typing import Any

import pytest
from pydantic import ValidationError

from shortener.jobs.invoke import JobsWorker
from shortener.jobs.tasks_model import (
    BatchTask,
    ClickReportTask,
    LabelsRequest,
    ResultsTask,
    SplitRequest,
    worker_tasks,
)

JOB_ID = "a" * 32
SPLIT = SplitRequest(job_id=JOB_ID, bucket="bulk", key=f"uploads/{JOB_ID}.csv", etag="e1")


class RecordingLambda:
    """A Lambda client that keeps the payloads it is asked to invoke with."""

    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []

    def invoke(self, **arguments: Any) -> None:
        assert arguments["InvocationType"] == "Event"
        self.payloads.append(json.loads(arguments["Payload"]))


def test_what_the_invoker_sends_the_worker_reads_as_the_same_task() -> None:
    # Given the worker asked for each kind of work once
    client = RecordingLambda()
    worker = JobsWorker("stack-files", client)  # type: ignore[arg-type]
    worker.continue_split(SPLIT)
    worker.request_results(JOB_ID)
    worker.request_click_report(JOB_ID)
    worker.request_labels(LabelsRequest(job_id=JOB_ID, format="svg"))
    worker.run_batch("b" * 32)
    # Then each payload names its task, and reads back as exactly the task sent
    assert [payload["task"] for payload in client.payloads] == [
        "split",
        "results",
        "click_report",
        "labels",
        "batch",
    ]
    assert [worker_tasks(payload) for payload in client.payloads] == [
        [SPLIT],
        [ResultsTask(job_id=JOB_ID)],
        [ClickReportTask(job_id=JOB_ID)],
        [LabelsRequest(job_id=JOB_ID, format="svg")],
        [BatchTask(batch_id="b" * 32)],
    ]


@pytest.mark.parametrize(
    ("event", "task"),
    [
        ({"split": SPLIT.model_dump(exclude={"task"})}, SPLIT),
        ({"write_results": JOB_ID}, ResultsTask(job_id=JOB_ID)),
        ({"write_click_report": JOB_ID}, ClickReportTask(job_id=JOB_ID)),
        ({"write_labels": {"job_id": JOB_ID, "format": "svg"}}, LabelsRequest(job_id=JOB_ID, format="svg")),
        ({"run_batch": JOB_ID}, BatchTask(batch_id=JOB_ID)),
    ],
)
def test_an_event_in_the_keyed_shape_of_before_still_parses(event: dict[str, Any], task: object) -> None:
    assert worker_tasks(event) == [task]


def test_an_s3_event_asks_for_the_split_of_each_upload_only() -> None:
    # Given an S3 event with an upload and an object elsewhere in the bucket
    def record(key: str) -> dict[str, Any]:
        return {
            "eventName": "ObjectCreated:Put",
            "s3": {"bucket": {"name": "bulk"}, "object": {"key": key, "eTag": "e1"}},
        }

    event = {"Records": [record(f"uploads/{JOB_ID}.csv"), record("results/x.csv")]}
    # Then only the upload is a task: its split
    assert worker_tasks(event) == [SPLIT]


def test_a_task_of_no_known_kind_or_with_a_bad_id_is_refused() -> None:
    with pytest.raises(ValidationError):
        worker_tasks({"task": "paint", "job_id": JOB_ID})
    with pytest.raises(ValidationError):
        worker_tasks({"task": "results", "job_id": "../x"})
