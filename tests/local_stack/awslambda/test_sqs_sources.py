"""SQS event source mappings: a SAM function's `Events: Type: SQS` polls its queue, invokes the
function with batches in Lambda's SQS event shape, deletes what succeeded, and leaves what failed
for the queue's visibility timeout (and redrive policy)."""

import json
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from local_stack.awslambda.runtime import LambdaRuntime, RuntimeSettings
from local_stack.awslambda.sqs_sources import (
    DEFAULT_CONCURRENCY,
    InvalidBatchResponse,
    MappingRefused,
    SqsPollers,
    SqsSource,
    failed_message_ids,
    sqs_event,
    sqs_sources,
)
from local_stack.cloudformation.intrinsics import Resolver
from local_stack.cloudformation.resources import Resources, create_resources, name_resources
from local_stack.cloudformation.template import expand_sam, load_template
from local_stack.embedded.client import aws_client
from local_stack.embedded.server import EmbeddedAws
from local_stack.registry import PROVIDERS_BY_TYPE

SUPPORT = Path(__file__).resolve().parents[2] / "support"
REGION = "us-east-1"
QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:test-Work"

# The function: one file per invocation (the batch's records) in DELIVERIES; a body "fail-..." is
# reported as a batch item failure, a body "raise" fails the invocation.
HANDLER = textwrap.dedent(
    """
    import json
    import os
    import uuid

    def handler(event, context):
        path = os.path.join(os.environ["DELIVERIES"], str(uuid.uuid4()))
        with open(path + ".part", "w") as file:
            json.dump(event["Records"], file)
        os.rename(path + ".part", path + ".json")  # seen whole or not at all
        bodies = [record["body"] for record in event["Records"]]
        if "raise" in bodies:
            raise ValueError("a poisoned batch")
        failed = [record for record in event["Records"] if record["body"].startswith("fail")]
        return {"batchItemFailures": [{"itemIdentifier": record["messageId"]} for record in failed]}
    """
)


def template(
    mapping: dict[str, Any], visibility_timeout: int = 30, deliveries: str = "", function_timeout: int = 10
) -> str:
    """A SAM template (as JSON, which is YAML too): a queue with a dead-letter queue after two
    receives, and a function with one SQS event on it whose properties are ``mapping``."""
    return json.dumps(
        {
            "AWSTemplateFormatVersion": "2010-09-09",
            "Transform": "AWS::Serverless-2016-10-31",
            "Resources": {
                "DeadLetters": {"Type": "AWS::SQS::Queue"},
                "Work": {
                    "Type": "AWS::SQS::Queue",
                    "Properties": {
                        "VisibilityTimeout": visibility_timeout,
                        "RedrivePolicy": {
                            "deadLetterTargetArn": {"Fn::GetAtt": ["DeadLetters", "Arn"]},
                            "maxReceiveCount": 2,
                        },
                    },
                },
                "Consumer": {
                    "Type": "AWS::Serverless::Function",
                    "Properties": {
                        "CodeUri": "consumer/",
                        "Handler": "app.handler",
                        "Runtime": "python3.13",
                        "Timeout": function_timeout,
                        "Environment": {"Variables": {"DELIVERIES": deliveries}},
                        "Events": {
                            "Work": {
                                "Type": "SQS",
                                "Properties": {"Queue": {"Fn::GetAtt": ["Work", "Arn"]}, **mapping},
                            }
                        },
                    },
                },
            },
        }
    )


def resources_of(tmp_path: Path, text: str, aws_endpoint: str) -> Resources:
    """The template's resources, named (nothing created), with the function's code beside it."""
    (tmp_path / "consumer").mkdir(parents=True, exist_ok=True)
    (tmp_path / "consumer" / "app.py").write_text(HANDLER)
    (tmp_path / "template.yaml").write_text(text)
    expanded = expand_sam(load_template(tmp_path / "template.yaml"), "test", REGION)
    resolver = Resolver(parameters={}, region=REGION, stack_name="test")
    return name_resources(expanded, resolver, aws_endpoint, REGION, tmp_path)


def read_sources(tmp_path: Path, mapping: dict[str, Any]) -> tuple[list[SqsSource], list[str]]:
    resources = resources_of(tmp_path, template(mapping), "http://127.0.0.1:9")
    warnings: list[str] = []
    sources = sqs_sources(resources, warnings.append)
    return sources, warnings


def test_sams_sqs_event_becomes_a_mapping_with_lambdas_defaults(tmp_path: Path) -> None:
    # Given a function with an SQS event that names only its queue
    # When the mappings are read from the SAM-expanded template
    (source,), warnings = read_sources(tmp_path, {})
    # Then its queue is polled for the function with Lambda's defaults for SQS
    assert source == SqsSource(
        mapping="ConsumerWork",
        queue_arn=QUEUE_ARN,
        queue_url="http://127.0.0.1:9/123456789012/test-Work",
        function="test-Consumer",
        batch_size=10,
        batching_window_seconds=0.0,
        report_item_failures=False,
        maximum_concurrency=DEFAULT_CONCURRENCY,
    )
    assert warnings == []


def test_a_mappings_settings_are_read_and_a_disabled_one_is_not_polled(tmp_path: Path) -> None:
    settings = {
        "BatchSize": 25,
        "MaximumBatchingWindowInSeconds": 2,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "ScalingConfig": {"MaximumConcurrency": 3},
    }
    (source,), _ = read_sources(tmp_path / "on", settings)
    assert (source.batch_size, source.batching_window_seconds) == (25, 2.0)
    assert (source.report_item_failures, source.maximum_concurrency) == (True, 3)
    assert read_sources(tmp_path / "off", {**settings, "Enabled": False}) == ([], [])


def test_a_mapping_with_filters_is_refused_with_a_warning(tmp_path: Path) -> None:
    sources, warnings = read_sources(
        tmp_path, {"FilterCriteria": {"Filters": [{"Pattern": '{"body": {"kind": ["a"]}}'}]}}
    )
    assert sources == []
    assert ["FilterCriteria" in warning for warning in warnings] == [True]


def test_a_queue_whose_visibility_timeout_is_shorter_than_the_functions_timeout_is_refused(
    tmp_path: Path,
) -> None:
    # Given a queue that hides a received message for less time than the function may run
    text = template({}, visibility_timeout=5, function_timeout=10)
    resources = resources_of(tmp_path, text, "http://127.0.0.1:9")
    # Then the mapping is refused, as Lambda's CreateEventSourceMapping refuses it
    with pytest.raises(
        MappingRefused, match="Queue visibility timeout: 5 seconds is less than Function timeout: 10"
    ):
        sqs_sources(resources)


def test_a_mappings_ref_is_a_stable_uuid(tmp_path: Path) -> None:
    resources = resources_of(tmp_path, template({}), "http://127.0.0.1:9")
    again = resources_of(tmp_path, template({}), "http://127.0.0.1:9")
    mapping_id = resources.names["ConsumerWork"]
    assert len(mapping_id) == 36 and mapping_id == again.names["ConsumerWork"]
    assert resources.resolver.get_att("ConsumerWork", "EventSourceMappingArn").endswith(mapping_id)


def test_the_event_has_the_shape_sam_generates() -> None:
    # Given a message as ReceiveMessage answers it, with attributes of each kind
    message = {
        "MessageId": "19dd0b57-b21e-4ac1-bd88-01bbb068cb78",
        "ReceiptHandle": "MessageReceiptHandle",
        "MD5OfBody": "7b270e59b47ff90a553787216d55d91d",
        "Body": "Hello from SQS!",
        "Attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1523232000000",
            "SenderId": "123456789012",
            "ApproximateFirstReceiveTimestamp": "1523232000001",
        },
        "MessageAttributes": {
            "kind": {"StringValue": "upload", "DataType": "String"},
            "blob": {"BinaryValue": b"\x00\x01", "DataType": "Binary"},
        },
    }
    # When it is turned into the function's event
    (record,) = sqs_event([message], "arn:aws:sqs:us-east-1:123456789012:MyQueue", REGION)["Records"]
    # Then it is the record `sam local generate-event sqs receive-message` prints
    (generated,) = json.loads((SUPPORT / "sqs_receive_message.json").read_text())["Records"]
    assert {key: value for key, value in record.items() if key != "messageAttributes"} == {
        key: value for key, value in generated.items() if key != "messageAttributes"
    }
    # And message attributes are spelt as Lambda spells them, binary values in base64
    assert record["messageAttributes"] == {
        "kind": {
            "stringValue": "upload",
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": "String",
        },
        "blob": {"binaryValue": "AAE=", "stringListValues": [], "binaryListValues": [], "dataType": "Binary"},
    }


@pytest.mark.parametrize(
    ("result", "failed"),
    [
        (None, set()),
        ({}, set()),
        ({"batchItemFailures": None}, set()),
        ({"batchItemFailures": []}, set()),
        ({"batchItemFailures": [{"itemIdentifier": "m2"}]}, {"m2"}),
    ],
)
def test_a_partial_batch_response_names_the_failed_messages(result: Any, failed: set[str]) -> None:
    assert failed_message_ids(result, {"m1", "m2"}) == failed


@pytest.mark.parametrize(
    "result",
    [
        "done",
        {"batchItemFailures": "m1"},
        {"batchItemFailures": [{"itemIdentifier": ""}]},
        {"batchItemFailures": [{"itemIdentifier": None}]},
        {"batchItemFailures": [{"itemId": "m1"}]},
        {"batchItemFailures": [{"itemIdentifier": "not-in-the-batch"}]},
    ],
)
def test_an_invalid_partial_batch_response_fails_the_whole_batch(result: Any) -> None:
    with pytest.raises(InvalidBatchResponse):
        failed_message_ids(result, {"m1", "m2"})


# Against the embedded AWS, with the function in a worker process.


class Mapped:
    """A queue mapped to the recording function, polled while the test runs."""

    def __init__(self, resources: Resources, deliveries: Path, pollers: SqsPollers) -> None:
        self.resources = resources
        self.deliveries = deliveries
        self.pollers = pollers
        self.sqs = aws_client("sqs", resources.aws_endpoint, REGION)
        self.queue_url = resources.physical_id("Work")

    def send(self, *bodies: str) -> None:
        entries = [{"Id": str(number), "MessageBody": body} for number, body in enumerate(bodies)]
        for start in range(0, len(entries), 10):
            answer = self.sqs.send_message_batch(QueueUrl=self.queue_url, Entries=entries[start : start + 10])
            assert not answer.get("Failed")

    def batches(self) -> list[list[dict[str, Any]]]:
        """The records of each invocation so far, oldest first."""
        files = sorted(self.deliveries.glob("*.json"), key=lambda path: path.stat().st_mtime_ns)
        return [json.loads(path.read_text()) for path in files]

    def deliveries_of(self, body: str) -> list[dict[str, Any]]:
        return [record for batch in self.batches() for record in batch if record["body"] == body]

    def depth(self, logical_id: str = "Work") -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.resources.physical_id(logical_id),
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )


MapQueue = Callable[..., Mapped]


@pytest.fixture
def map_queue(aws: EmbeddedAws, tmp_path: Path) -> Iterator[MapQueue]:
    """``map_queue(mapping, visibility_timeout=30, start=True)``: the template's queues created on
    a fresh embedded AWS and its mapping's poller started (or not yet), stopped after the test."""
    started: list[tuple[SqsPollers, LambdaRuntime]] = []

    def make(mapping: dict[str, Any], visibility_timeout: int = 30) -> Mapped:
        aws.reset()
        deliveries = tmp_path / "deliveries"
        deliveries.mkdir()
        # The function may run as long as a message stays hidden (Lambda refuses longer).
        text = template(
            mapping, visibility_timeout, str(deliveries), function_timeout=min(visibility_timeout, 10)
        )
        resources = resources_of(tmp_path, text, aws.url)
        create_resources(resources, lambda name: "http://127.0.0.1:9/" + name, PROVIDERS_BY_TYPE)
        settings = RuntimeSettings(
            aws.url, "http://127.0.0.1:2", REGION, max_concurrency=4, fork_workers=False
        )
        runtime = LambdaRuntime(resources.functions, settings)
        runtime.warm_up(["test-Consumer"])
        pollers = SqsPollers(sqs_sources(resources), runtime, aws.url, REGION)
        started.append((pollers, runtime))
        return Mapped(resources, deliveries, pollers)

    yield make
    for pollers, runtime in started:
        pollers.stop()
        runtime.stop()


def wait_for(condition: Callable[[], Any], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.integration
def test_messages_reach_the_function_in_batches_and_are_deleted(map_queue: MapQueue) -> None:
    # Given twelve messages waiting on a queue mapped with batches of up to five
    mapped = map_queue({"BatchSize": 5, "MaximumBatchingWindowInSeconds": 1})
    bodies = [f"message-{number}" for number in range(12)]
    mapped.send(*bodies)
    # When the mapping polls
    mapped.pollers.start()
    # Then every message reaches the function once, in batches of at most five
    assert wait_for(lambda: sum(len(batch) for batch in mapped.batches()) >= 12, seconds=20)
    batches = mapped.batches()
    assert sorted(record["body"] for batch in batches for record in batch) == sorted(bodies)
    assert max(len(batch) for batch in batches) == 5
    # And each record is Lambda's, from this queue
    record = batches[0][0]
    assert (record["eventSource"], record["eventSourceARN"], record["awsRegion"]) == (
        "aws:sqs",
        QUEUE_ARN,
        REGION,
    )
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert {"SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} <= record["attributes"].keys()
    # And the queue is empty: the batches were deleted
    assert wait_for(lambda: mapped.depth() == 0, seconds=10)


@pytest.mark.integration
def test_a_reported_item_failure_comes_back_until_the_redrive_policy_moves_it(map_queue: MapQueue) -> None:
    # Given a mapping that reads partial batch responses, on a queue with a 1 s visibility timeout
    mapped = map_queue({"FunctionResponseTypes": ["ReportBatchItemFailures"]}, visibility_timeout=1)
    mapped.send("ok-1", "fail-1")
    # When the function reports one message of its batch as failed
    mapped.pollers.start()
    # Then that one is delivered again after the visibility timeout, and the other is not
    assert wait_for(lambda: len(mapped.deliveries_of("fail-1")) == 2, seconds=20)
    assert [record["attributes"]["ApproximateReceiveCount"] for record in mapped.deliveries_of("fail-1")] == [
        "1",
        "2",
    ]
    assert len(mapped.deliveries_of("ok-1")) == 1
    # And after its second receive (maxReceiveCount) SQS moves it to the dead-letter queue
    assert wait_for(lambda: mapped.depth("DeadLetters") == 1, seconds=20)
    assert mapped.depth() == 0
    assert len(mapped.deliveries_of("fail-1")) == 2


@pytest.mark.integration
def test_a_function_error_leaves_the_whole_batch_on_the_queue(map_queue: MapQueue) -> None:
    # Given a batch of two messages, one of which makes the function raise
    mapped = map_queue({"FunctionResponseTypes": ["ReportBatchItemFailures"]}, visibility_timeout=1)
    mapped.send("ok-2", "raise")
    # When the mapping invokes the function with it
    mapped.pollers.start()
    assert wait_for(mapped.batches, seconds=20)
    assert sorted(record["body"] for record in mapped.batches()[0]) == ["ok-2", "raise"]
    # Then nothing of the batch was deleted: both messages come back for a second delivery
    assert wait_for(lambda: len(mapped.deliveries_of("ok-2")) == 2, seconds=20)
    assert [record["attributes"]["ApproximateReceiveCount"] for record in mapped.deliveries_of("ok-2")] == [
        "1",
        "2",
    ]
    assert len(mapped.deliveries_of("raise")) == 2


@pytest.mark.integration
def test_stopping_the_pollers_takes_about_one_poll(map_queue: MapQueue) -> None:
    # Given a mapping long-polling an empty queue
    mapped = map_queue({})
    mapped.pollers.start()
    time.sleep(0.3)
    # When it is stopped
    started = time.monotonic()
    mapped.pollers.stop()
    # Then it stops within a poll's wait, and polls no more
    assert time.monotonic() - started < 2.5
    mapped.send("after-the-stop")
    time.sleep(1.5)
    assert mapped.batches() == [] and mapped.depth() == 1
