"""The bulk queue's data access under moto: renewing the visibility of messages still being worked
on, and finding a queue's dead-letter queue from its redrive policy."""

from datetime import UTC, datetime, timedelta

import boto3
import pytest

from shortener.loops.queue import BulkQueue
from shortener.loops.queue_metrics import QueueMetrics
from tests.support.bulk import create_bulk_queues, dead_letter_queue_url
from tests.support.loops import frozen

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize("renewed", [True, False])
def test_a_renewed_message_stays_hidden_past_its_first_timeout(moto: None, renewed: bool) -> None:
    # Given a queue whose messages come back 2 s after a receive, and one message received
    queue_url = create_bulk_queues(visibility_timeout=2)
    queue = BulkQueue()
    queue.client.send_message(QueueUrl=queue_url, MessageBody="chunk")
    with frozen(T0):
        [message] = queue.receive(queue_url, wait_seconds=0)
        # When its visibility is renewed for 60 s (or not)
        if renewed:
            assert queue.extend_visibility(queue_url, [message["ReceiptHandle"]], 60) == 0
    # Then 10 s later it is still hidden only if it was renewed
    with frozen(T0 + timedelta(seconds=10)):
        again = queue.receive(queue_url, wait_seconds=0)
    assert (again == []) is renewed
    if renewed:
        # And after the renewed timeout it comes back, as from a dead loop
        with frozen(T0 + timedelta(seconds=61)):
            assert [m["Body"] for m in queue.receive(queue_url, wait_seconds=0)] == ["chunk"]


def test_a_message_handed_back_is_received_again_at_once(moto: None) -> None:
    # Given a queue whose messages stay hidden 120 s after a receive, and one message received
    queue_url = create_bulk_queues(visibility_timeout=120)
    queue = BulkQueue()
    queue.client.send_message(QueueUrl=queue_url, MessageBody="chunk")
    [message] = queue.receive(queue_url, wait_seconds=0)
    # When a loop with no time left for it hands it back (visibility 0)
    assert queue.extend_visibility(queue_url, [message["ReceiptHandle"]], 0) == 0
    # Then the next receive gets it at once (the clock running as it does), one receive more on its count
    [again] = queue.receive(queue_url, wait_seconds=0)
    assert again["Body"] == "chunk"
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"


def test_renewing_a_deleted_message_is_reported_not_raised(moto: None) -> None:
    # Given a message received and then deleted
    queue_url = create_bulk_queues()
    queue = BulkQueue()
    queue.client.send_message(QueueUrl=queue_url, MessageBody="chunk")
    [message] = queue.receive(queue_url, wait_seconds=0)
    queue.delete(queue_url, [message["ReceiptHandle"]])
    # When its visibility is renewed, Then the failure is counted
    assert queue.extend_visibility(queue_url, [message["ReceiptHandle"]], 60) == 1


def test_the_dead_letter_queue_is_found_from_the_redrive_policy(moto: None) -> None:
    # Given the template's bulk queue and its dead-letter queue
    queue_url = create_bulk_queues(max_receive_count=3)
    # When its dead-letter target is looked up
    target = QueueMetrics().dead_letter_target(queue_url)
    # Then it is that queue, with the receive count of the policy
    assert target is not None
    assert (target.queue_url, target.max_receive_count) == (dead_letter_queue_url(), 3)
    # And a queue without a policy has none
    plain = boto3.client("sqs").create_queue(QueueName="plain")["QueueUrl"]
    assert QueueMetrics().dead_letter_target(plain) is None
