"""The job-ended event: put once when a job's results file is recorded, on EventBridge (moto)."""

import json
from typing import Any

import boto3
import pytest

from shortener.jobs.events import JobEndAnnouncer, job_ended_detail
from shortener.jobs.events_bus import JobEventsBus, JobTopics
from shortener.jobs.events_model import DETAIL_TYPE, SOURCE, JobEndedDetail, JobEventNotPutError
from shortener.jobs.results import ResultsWriter
from tests.shortener.jobs.test_bulk_files import World, csv_bytes, plenty, process_all

pytestmark = pytest.mark.integration


@pytest.fixture
def world(tables: dict[str, str]) -> World:
    return World(tables)


class RecordingEvents:
    def __init__(self, fail: bool = False) -> None:
        self.put: list[tuple[JobEndedDetail, list[str]]] = []
        self.fail = fail

    def job_ended(self, detail: JobEndedDetail, resources: list[str]) -> None:
        if self.fail:
            raise JobEventNotPutError("AccessDeniedException: not allowed")
        self.put.append((detail, resources))


class RecordingLogger:
    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def exception(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.lines.append((msg, kwargs.get("extra", {})))


def test_a_job_that_ends_is_announced_once_with_its_totals_and_results(
    world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a complete job of 120 rows
    request = world.upload(csv_bytes(120))
    world.splitter.split(request, "invocation-1", plenty)
    process_all(world, tables, monkeypatch)
    events = RecordingEvents()
    writer = ResultsWriter(world.jobs, world.files, on_ended=JobEndAnnouncer(events, RecordingLogger()))
    # When its results file is written, and asked for again
    results = writer.write(request.job_id, owner="writer-1")
    writer.write(request.job_id, owner="writer-2")
    # Then one event says which job ended, whose it is, its totals and where its results are
    assert results is not None
    assert len(events.put) == 1
    detail, resources = events.put[0]
    job = world.job(request.job_id)
    assert (detail.job_id, detail.owner, detail.status) == (job.job_id, job.owner, "done")
    assert (detail.total, detail.succeeded, detail.failed) == (120, job.succeeded, job.failed)
    assert (detail.results.bucket, detail.results.key, detail.results.rows) == (
        world.bucket,
        results.key,
        120,
    )
    assert detail.results.results_url == f"{job.base_url}jobs/{job.job_id}/results"
    assert resources == [f"arn:aws:s3:::{world.bucket}/{results.key}"]


def test_an_event_not_taken_is_logged_and_the_results_stand(
    world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    request = world.upload(csv_bytes(30))
    world.splitter.split(request, "invocation-1", plenty)
    process_all(world, tables, monkeypatch)
    logger = RecordingLogger()
    writer = ResultsWriter(
        world.jobs, world.files, on_ended=JobEndAnnouncer(RecordingEvents(fail=True), logger)
    )
    assert writer.write(request.job_id, owner="writer-1") is not None
    assert world.job(request.job_id).results is not None
    assert logger.lines == [("The job-ended event was not put", {"job_id": request.job_id})]


def test_the_event_reaches_a_rule_target_on_the_default_bus(
    world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a rule on the default bus for the job events, to a queue
    sqs = boto3.client("sqs")
    queue_url = sqs.create_queue(QueueName="job-events")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    eventbridge = boto3.client("events")
    eventbridge.put_rule(
        Name="jobs-ended", EventPattern=json.dumps({"source": [SOURCE], "detail-type": [DETAIL_TYPE]})
    )
    eventbridge.put_targets(Rule="jobs-ended", Targets=[{"Id": "queue", "Arn": queue_arn}])
    # And a job whose results are written
    request = world.upload(csv_bytes(10))
    world.splitter.split(request, "invocation-1", plenty)
    process_all(world, tables, monkeypatch)
    job = world.job(request.job_id)
    written = job.model_copy(
        update={"results": ResultsWriter(world.jobs, world.files).write(job.job_id, "w")}
    )
    # When the event is put
    JobEventsBus().job_ended(job_ended_detail(written), [])
    # Then the queue receives it, with its source, detail-type and detail
    messages = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1)["Messages"]
    event = json.loads(messages[0]["Body"])
    assert (event["source"], event["detail-type"]) == (SOURCE, DETAIL_TYPE)
    assert event["detail"]["job_id"] == job.job_id and event["detail"]["total"] == 10


def test_a_job_that_named_a_topic_gets_the_same_message_there(
    world: World, tables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a topic with a queue subscribed, and a job that named it
    sqs = boto3.client("sqs")
    queue_url = sqs.create_queue(QueueName="topic-subscriber")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns = boto3.client("sns")
    topic = sns.create_topic(Name="jobs-done")["TopicArn"]
    sns.subscribe(
        TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"}
    )
    request = world.upload(csv_bytes(5))
    world.splitter.split(request, "invocation-1", plenty)
    process_all(world, tables, monkeypatch)
    job = world.job(request.job_id).model_copy(update={"notify_topic": topic})
    job = job.model_copy(update={"results": ResultsWriter(world.jobs, world.files).write(job.job_id, "w")})
    events = RecordingEvents()
    # When its end is announced
    JobEndAnnouncer(events, RecordingLogger(), JobTopics())(job)
    # Then the event is put, and the topic's subscriber gets the same message
    message = json.loads(sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1)["Messages"][0]["Body"])
    assert (message["source"], message["detail-type"]) == (SOURCE, DETAIL_TYPE)
    assert message["detail"] == json.loads(events.put[0][0].model_dump_json())
