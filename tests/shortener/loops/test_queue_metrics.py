"""QueueMetrics under moto: the queue URL by name and owner, and the depth of its backlog."""

import boto3
import pytest

from shortener.loops.queue_metrics import QueueMetrics
from tests.support.alarms import ACCOUNT_ID, QUEUE_NAME

pytestmark = pytest.mark.integration


def test_the_queue_url_is_found_by_name_and_owner_account(moto: None) -> None:
    # Given a queue
    created = boto3.client("sqs").create_queue(QueueName=QUEUE_NAME)["QueueUrl"]
    # When it is looked up by the name and account an alarm names
    found = QueueMetrics().queue_url(QUEUE_NAME, ACCOUNT_ID, "us-east-1")
    # Then it is the same queue
    assert found == created


def test_depth_counts_waiting_and_in_flight_messages(moto: None) -> None:
    # Given five messages, two of them received (in flight)
    sqs = boto3.client("sqs")
    queue_url = sqs.create_queue(QueueName=QUEUE_NAME)["QueueUrl"]
    for number in range(5):
        sqs.send_message(QueueUrl=queue_url, MessageBody=str(number))
    sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=2, VisibilityTimeout=60)
    # When the depth is read
    depth = QueueMetrics().depth(queue_url)
    # Then both count towards the backlog
    assert (depth.visible, depth.in_flight, depth.total) == (3, 2, 5)
