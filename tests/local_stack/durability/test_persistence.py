"""The durable state of the embedded AWS: what a request was answered for survives a crash (the
journal) and a clean stop (the snapshot), with every table and queue of the template.

A crash is played in-process: the state stops journaling without saving anything (``abandon``),
moto is reset, the template's resources are created again, and a new state restores from the same
data dir, as a `kill -9` and a restart would leave things."""

import functools
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.cloudformation.resources import Resources
from local_stack.durability import CorruptStateError, DataDirInUseError, DurableState, StateSummary
from local_stack.durability.journal import encode
from local_stack.dynamodb import DynamoDbState
from local_stack.embedded.client import aws_client
from local_stack.embedded.server import EmbeddedAws
from local_stack.stack import durable_services
from tests.local_stack.cloudformation.test_resources import build

pytestmark = pytest.mark.integration


class Stacks:
    """Opens durable states on the embedded AWS, one at a time, as successive runs of a stack."""

    def __init__(self, aws: EmbeddedAws, data_dir: Path) -> None:
        self.aws = aws
        self.data_dir = data_dir
        self.state: DurableState | None = None
        self.restored: StateSummary | None = None

    def open(self, resources: Resources | None = None, **options: Any) -> Resources:
        """A fresh embedded AWS with the template's resources, and the data dir's state in it."""
        resources = resources or build(self.aws)
        state = DurableState(
            self.data_dir,
            durable_services(resources, self.data_dir),
            resources.names,
            exclusive=self.aws.exclusive,
            **options,
        )
        self.restored = state.restore()
        self.aws.request_end_hooks.append(state.end_request)
        state.start()
        self.state = state
        return resources

    def crash(self) -> None:
        """Stop journaling and save nothing, as `kill -9` would."""
        assert self.state is not None
        self.state.abandon()
        self._detach()

    def stop(self) -> StateSummary:
        """A clean stop."""
        assert self.state is not None
        summary = self.state.close()
        self._detach()
        return summary

    def _detach(self) -> None:
        assert self.state is not None
        self.aws.request_end_hooks.remove(self.state.end_request)
        self.state = None

    def segments(self) -> list[Path]:
        return sorted(self.data_dir.glob("journal-*.dat"))


@pytest.fixture
def stacks(aws: EmbeddedAws, tmp_path: Path) -> Iterator[Stacks]:
    opened = Stacks(aws, tmp_path / "state")
    yield opened
    if opened.state is not None:
        opened.crash()


@functools.cache
def client(service: str, endpoint: str, region: str) -> Any:
    # One client per service: creating a boto3 client costs more than the calls these tests make.
    return aws_client(service, endpoint, region)


def dynamodb(resources: Resources) -> Any:
    return client("dynamodb", resources.aws_endpoint, resources.region)


def sqs(resources: Resources) -> Any:
    return client("sqs", resources.aws_endpoint, resources.region)


def get(resources: Resources, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
    found = dynamodb(resources).get_item(TableName=resources.physical_id(table), Key=key, ConsistentRead=True)
    return found.get("Item")


def link(code: str, url: str) -> dict[str, Any]:
    return {"code": {"S": code}, "url": {"S": url}}


def put_link(resources: Resources, code: str, url: str) -> None:
    dynamodb(resources).put_item(TableName=resources.physical_id("LinksTable"), Item=link(code, url))


def add_to_counter(resources: Resources, count: int) -> int:
    answer = dynamodb(resources).update_item(
        TableName=resources.physical_id("LinksTable"),
        Key={"code": {"S": "#id-counter"}},
        UpdateExpression="ADD next_id :count",
        ExpressionAttributeValues={":count": {"N": str(count)}},
        ReturnValues="UPDATED_NEW",
    )
    return int(answer["Attributes"]["next_id"]["N"])


def bodies(resources: Resources, queue: str) -> list[str]:
    """Every visible message body of a queue (received with a zero visibility timeout)."""
    received = sqs(resources).receive_message(
        QueueUrl=resources.physical_id(queue),
        MaxNumberOfMessages=10,
        WaitTimeSeconds=0,
        VisibilityTimeout=0,
        AttributeNames=["ApproximateReceiveCount"],
    )
    return sorted(message["Body"] for message in received.get("Messages", []))


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 60.0) -> None:
    """Poll until ``condition`` holds; fail (rather than hang) after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {seconds} s"
        time.sleep(0.05)


# ---- what survives a crash -------------------------------------------------------------------------


def test_binary_attributes_survive_a_crash(stacks: Stacks) -> None:
    # Given a job chunk whose outcomes are binary (compressed), in a set and inside a map
    resources = stacks.open()
    chunk = {
        "job_id": {"S": "job-1"},
        "sk": {"S": "chunk#0"},
        "outcomes": {"B": b"\x00\xffzlib"},
        "parts": {"BS": [b"\x01", b"\x02"]},
        "nested": {"M": {"blob": {"B": b"\x03"}, "list": {"L": [{"B": b"\x04"}, {"N": "5"}]}}},
    }
    dynamodb(resources).put_item(TableName=resources.physical_id("JobsTable"), Item=chunk)
    # When the stack is killed and started again
    stacks.crash()
    resources = stacks.open()
    # Then the item comes back byte for byte
    assert get(resources, "JobsTable", {"job_id": {"S": "job-1"}, "sk": {"S": "chunk#0"}}) == chunk


def test_a_restore_builds_the_sorted_index_before_the_first_query(stacks: Stacks) -> None:
    from moto.dynamodb.models import dynamodb_backends

    from local_stack.dynamodb import index as dynamodb_index

    # Given an owner's link in the links table
    resources = stacks.open()
    link = {
        "code": {"S": "abc"},
        "url": {"S": "https://example.com/"},
        "created_at": {"S": "2026-01-01T00:00:00+00:00"},
        "list_pk": {"S": "alice#3"},
        "list_sk": {"S": "2026-01-01T00:00:00+00:00#abc"},
    }
    dynamodb(resources).put_item(TableName=resources.physical_id("LinksTable"), Item=link)
    # When the stack is killed and started again
    stacks.crash()
    resources = stacks.open()
    # Then the restore has built the table's ByOwner index (no Query has been made), holding the link
    table = dynamodb_backends[ACCOUNT_ID][resources.region].tables[resources.physical_id("LinksTable")]
    built = dynamodb_index._indexes.get(table, {})
    assert "ByOwner" in built
    entries = [entry for partition in built["ByOwner"].partitions.values() for entry in partition]
    assert [entry[1].value for entry in entries] == ["abc"]


def test_the_id_counter_never_goes_back_after_a_crash(stacks: Stacks) -> None:
    # Given a counter that handed out ids in several answered writes
    resources = stacks.open()
    answered = [add_to_counter(resources, 100) for _ in range(20)]
    # When the stack is killed and started again
    stacks.crash()
    resources = stacks.open()
    # Then the next block starts after the last one answered
    assert add_to_counter(resources, 100) == answered[-1] + 100


def test_every_table_and_queue_survives_a_crash(stacks: Stacks) -> None:
    # Given items in every table, and messages visible, in flight, dead-lettered and deleted
    resources = stacks.open()
    put_link(resources, "abcd", "https://example.com/a")
    put_link(resources, "gone", "https://example.com/gone")
    dynamodb(resources).delete_item(
        TableName=resources.physical_id("LinksTable"), Key={"code": {"S": "gone"}}
    )
    job = {"job_id": {"S": "j"}, "sk": {"S": "job"}, "status": {"S": "running"}}
    dynamodb(resources).put_item(TableName=resources.physical_id("JobsTable"), Item=job)
    queue_url = resources.physical_id("BulkQueue")
    token = {"queue_url": {"S": queue_url}, "token": {"S": "slot-000"}, "loop_id": {"S": "l1"}}
    dynamodb(resources).put_item(TableName=resources.physical_id("TokensTable"), Item=token)
    client = sqs(resources)
    # ... a poison message received until the redrive policy (5 receives) dead-letters it
    client.send_message(QueueUrl=queue_url, MessageBody="poison")
    for _ in range(6):
        bodies(resources, "BulkQueue")
    assert bodies(resources, "BulkDeadLetterQueue") == ["poison"]
    # ... then one message left visible, one in flight, one deleted
    for body in ("visible", "in-flight", "deleted"):
        client.send_message(QueueUrl=queue_url, MessageBody=body)
    received: dict[str, str] = {}
    while len(received) < 3:
        for message in client.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
            received[message["Body"]] = message["ReceiptHandle"]
    client.delete_message(QueueUrl=queue_url, ReceiptHandle=received["deleted"])
    client.change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=received["visible"], VisibilityTimeout=0
    )
    # When the stack is killed and started again
    stacks.crash()
    resources = stacks.open()
    # Then the items are back, the deleted one is not
    assert get(resources, "LinksTable", {"code": {"S": "abcd"}}) == link("abcd", "https://example.com/a")
    assert get(resources, "LinksTable", {"code": {"S": "gone"}}) is None
    assert get(resources, "JobsTable", {"job_id": {"S": "j"}, "sk": {"S": "job"}}) == job
    tokens = get(resources, "TokensTable", {"queue_url": {"S": queue_url}, "token": {"S": "slot-000"}})
    assert tokens is not None and tokens["loop_id"] == {"S": "l1"}
    # And the visible and in-flight messages are visible, the dead-lettered one still dead-lettered
    assert bodies(resources, "BulkQueue") == ["in-flight", "visible"]
    assert bodies(resources, "BulkDeadLetterQueue") == ["poison"]
    assert stacks.restored is not None
    assert (stacks.restored.items, stacks.restored.messages) == (3, 3)


def test_a_restored_message_keeps_its_receive_count(stacks: Stacks) -> None:
    # Given a message received three times
    resources = stacks.open()
    client, queue_url = sqs(resources), resources.physical_id("BulkQueue")
    client.send_message(
        QueueUrl=queue_url,
        MessageBody="rows",
        MessageAttributes={"blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"}},
    )
    for _ in range(3):
        bodies(resources, "BulkQueue")
    # When the stack is killed and started again
    stacks.crash()
    resources = stacks.open()
    # Then its next receive is its fourth, and its attributes are intact
    (message,) = sqs(resources).receive_message(
        QueueUrl=queue_url, AttributeNames=["ApproximateReceiveCount"], MessageAttributeNames=["All"]
    )["Messages"]
    assert message["Attributes"]["ApproximateReceiveCount"] == "4"
    assert message["MessageAttributes"]["blob"]["BinaryValue"] == b"\x00\x01"


def test_a_transaction_is_restored_whole(stacks: Stacks) -> None:
    # Given a committed transaction and a cancelled one
    resources = stacks.open()
    table = resources.physical_id("LinksTable")
    client = dynamodb(resources)
    client.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": link("t1", "https://example.com/1")}},
            {"Put": {"TableName": table, "Item": link("t2", "https://example.com/2")}},
        ]
    )
    with pytest.raises(client.exceptions.TransactionCanceledException):
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": link("t3", "https://example.com/3")}},
                {
                    "Put": {
                        "TableName": table,
                        "Item": link("t1", "https://example.com/other"),
                        "ConditionExpression": "attribute_not_exists(code)",
                    }
                },
            ]
        )
    # When the stack is killed and started again
    stacks.crash()
    resources = stacks.open()
    # Then the committed one is there and nothing of the cancelled one
    assert get(resources, "LinksTable", {"code": {"S": "t1"}}) == link("t1", "https://example.com/1")
    assert get(resources, "LinksTable", {"code": {"S": "t2"}}) is not None
    assert get(resources, "LinksTable", {"code": {"S": "t3"}}) is None


# ---- the journal and the snapshot ---------------------------------------------------------------


def test_a_torn_journal_tail_is_ignored_and_the_rest_replays(stacks: Stacks) -> None:
    # Given two answered writes, and a third frame half written when the process died
    resources = stacks.open()
    put_link(resources, "one1", "https://example.com/1")
    put_link(resources, "two2", "https://example.com/2")
    stacks.crash()
    (segment,) = stacks.segments()
    frame = encode([["dynamodb", "put", resources.physical_id("LinksTable"), link("torn", "https://t/")]])
    with segment.open("ab") as journal:
        journal.write(frame[: len(frame) // 2])
    # When the stack starts again, writes more, and is killed once more
    resources = stacks.open()
    assert stacks.restored is not None and stacks.restored.torn_tails == 1
    put_link(resources, "thr3", "https://example.com/3")
    stacks.crash()
    resources = stacks.open()
    # Then every answered write is there, and nothing of the torn frame
    assert [
        get(resources, "LinksTable", {"code": {"S": code}}) is not None for code in ("one1", "two2", "thr3")
    ] == [
        True,
        True,
        True,
    ]
    assert get(resources, "LinksTable", {"code": {"S": "torn"}}) is None


def test_compaction_replaces_the_journal_with_a_snapshot(stacks: Stacks) -> None:
    # Given writes before a compaction, and writes and deletes after it
    resources = stacks.open()
    put_link(resources, "old1", "https://example.com/old1")
    put_link(resources, "old2", "https://example.com/old2")
    sqs(resources).send_message(QueueUrl=resources.physical_id("BulkQueue"), MessageBody="before")
    assert stacks.state is not None
    summary = stacks.state.compact()
    put_link(resources, "new1", "https://example.com/new1")
    dynamodb(resources).delete_item(
        TableName=resources.physical_id("LinksTable"), Key={"code": {"S": "old2"}}
    )
    sqs(resources).send_message(QueueUrl=resources.physical_id("BulkQueue"), MessageBody="after")
    # When the stack is killed and started again
    stacks.crash()
    resources = stacks.open()
    # Then the snapshot held the first writes, and only the later ones were replayed from the journal
    assert (summary.items, summary.messages) == (2, 1)
    assert stacks.restored is not None
    assert stacks.restored.journal_records == 3
    codes = {"old1": True, "old2": False, "new1": True}
    assert {code: get(resources, "LinksTable", {"code": {"S": code}}) is not None for code in codes} == codes
    assert bodies(resources, "BulkQueue") == ["after", "before"]


def test_the_journal_compacts_itself_when_it_outgrows_the_snapshot(stacks: Stacks) -> None:
    # Given a state that compacts once its journal passes 64 KiB, checked every 50 ms
    resources = stacks.open(fsync_interval=0.05, compact_min_bytes=64 * 1024)
    (first,) = stacks.segments()
    # When more than that is written
    for start in range(0, 600, 25):
        dynamodb(resources).batch_write_item(
            RequestItems={
                resources.physical_id("LinksTable"): [
                    {"PutRequest": {"Item": link(f"c{number:04d}", "https://example.com/" + "x" * 200)}}
                    for number in range(start, start + 25)
                ]
            }
        )
    # Then a snapshot replaces the early segments (waiting for the background thread's next round)
    wait_for(lambda: not first.exists(), "a compaction in the background")
    stacks.crash()
    resources = stacks.open()
    assert stacks.restored is not None and stacks.restored.items == 600


def test_a_clean_stop_leaves_one_snapshot_and_no_journal(stacks: Stacks) -> None:
    # Given answered writes
    resources = stacks.open()
    put_link(resources, "kept", "https://example.com/kept")
    sqs(resources).send_message(QueueUrl=resources.physical_id("BulkQueue"), MessageBody="queued")
    # When the stack stops cleanly
    summary = stacks.stop()
    # Then everything is in the snapshot, the journal is gone, and a start replays nothing
    assert (summary.items, summary.messages) == (1, 1)
    assert stacks.segments() == []
    resources = stacks.open()
    assert stacks.restored is not None and stacks.restored.journal_records == 0
    assert get(resources, "LinksTable", {"code": {"S": "kept"}}) is not None
    assert bodies(resources, "BulkQueue") == ["queued"]


def test_a_snapshot_that_is_not_whole_refuses_to_start(stacks: Stacks) -> None:
    # Given a clean stop whose snapshot was then cut short
    resources = stacks.open()
    put_link(resources, "kept", "https://example.com/kept")
    stacks.stop()
    snapshot = stacks.data_dir / "snapshot.dat"
    snapshot.write_bytes(snapshot.read_bytes()[:-10])
    # When the stack starts, then it says so instead of starting with less
    with pytest.raises(CorruptStateError):
        stacks.open()


def test_writes_racing_compactions_are_all_kept(stacks: Stacks) -> None:
    # Given writers that keep writing links and sending messages while compactions run
    resources = stacks.open()
    state = stacks.state
    assert state is not None
    answered: list[str] = []
    sent: list[str] = []

    def write(writer: int) -> None:
        for number in range(60):
            code = f"w{writer}n{number:03d}"
            put_link(resources, code, f"https://example.com/{code}")
            answered.append(code)
            sqs(resources).send_message(QueueUrl=resources.physical_id("BulkQueue"), MessageBody=code)
            sent.append(code)

    dynamodb(resources), sqs(resources)  # created before the threads share them
    writers = [threading.Thread(target=write, args=(writer,)) for writer in range(4)]
    for thread in writers:
        thread.start()
    while any(thread.is_alive() for thread in writers):
        state.compact()
    # When the stack is killed and started again
    stacks.crash()
    resources = stacks.open()
    # Then every answered write is there
    assert stacks.restored is not None
    assert stacks.restored.items == len(answered) == 240
    assert stacks.restored.messages == len(sent) == 240


# ---- what restoring changes -----------------------------------------------------------------------


def test_restored_tokens_lose_their_heartbeat_so_the_restarter_revives_them(stacks: Stacks) -> None:
    # Given a loop's token with a fresh heartbeat
    resources = stacks.open()
    queue_url = resources.physical_id("BulkQueue")
    key = {"queue_url": {"S": queue_url}, "token": {"S": "slot-000"}}
    dynamodb(resources).put_item(
        TableName=resources.physical_id("TokensTable"),
        Item={**key, "loop_id": {"S": "l1"}, "last_used": {"N": "1900000000"}, "started_at": {"N": "1"}},
    )
    # When the stack is started again (its loops died with it)
    stacks.stop()
    resources = stacks.open()
    # Then the token is there without a heartbeat: stale at once for the restarter
    assert get(resources, "TokensTable", key) == {**key, "loop_id": {"S": "l1"}, "started_at": {"N": "1"}}


def test_stored_queue_urls_follow_a_port_change(aws: EmbeddedAws, stacks: Stacks) -> None:
    # Given a token naming its queue by URL
    resources = stacks.open()
    old_url = resources.physical_id("BulkQueue")
    dynamodb(resources).put_item(
        TableName=resources.physical_id("TokensTable"),
        Item={"queue_url": {"S": old_url}, "token": {"S": "slot-000"}, "loop_id": {"S": "l1"}},
    )
    stacks.stop()
    # When the stack starts with a different queue URL (as after a change of port)
    moved = build(aws)
    new_url = old_url.replace("127.0.0.1", "localhost")
    moved.resolver.refs["BulkQueue"] = new_url
    stacks.open(moved)
    # Then the token names the new URL
    items = dynamodb(moved).scan(TableName=moved.physical_id("TokensTable"))["Items"]
    assert [item["queue_url"]["S"] for item in items] == [new_url]


def test_an_empty_data_dir_restores_nothing(stacks: Stacks) -> None:
    stacks.open()
    assert stacks.restored is None


def test_a_data_dir_in_use_is_refused(aws: EmbeddedAws, stacks: Stacks) -> None:
    # Given a running stack's data dir
    resources = stacks.open()
    # When a second stack opens the same dir, then it is refused before it reads anything
    second = DurableState(stacks.data_dir, [DynamoDbState(ACCOUNT_ID, resources.region)], resources.names)
    with pytest.raises(DataDirInUseError):
        second.restore()


def test_a_snapshot_of_an_earlier_version_is_imported(aws: EmbeddedAws, stacks: Stacks) -> None:
    # Given the snapshot.json that earlier versions wrote on a clean stop
    resources = build(aws)
    stacks.data_dir.mkdir(parents=True)
    (stacks.data_dir / "snapshot.json").write_text(
        json.dumps(
            {
                "names": resources.names,
                "tables": {"LinksTable": [link("olde", "https://example.com/old")]},
                "queues": {"BulkQueue": [{"body": "rows", "attributes": {}}]},
            }
        )
    )
    # When a stack starts on that data dir, and stops
    stacks.open(resources)
    summary = stacks.stop()
    # Then it held the saved link and message, and saved them in the current format
    assert (summary.items, summary.messages) == (1, 1)
    resources = stacks.open()
    assert get(resources, "LinksTable", {"code": {"S": "olde"}}) == link("olde", "https://example.com/old")
    assert bodies(resources, "BulkQueue") == ["rows"]


def test_api_keys_made_while_running_survive_a_crash(stacks: Stacks) -> None:
    # Given a running stack, and an API key made in its usage plan (as `shortener keys create` does)
    resources = stacks.open()
    apigateway = client("apigateway", resources.aws_endpoint, resources.region)
    plan_id = resources.physical_id("KeysUsagePlan")
    key = apigateway.create_api_key(name="team-a", value="k" * 40, enabled=True)
    apigateway.create_usage_plan_key(usagePlanId=plan_id, keyId=key["id"], keyType="API_KEY")
    # When the process is killed, and the stack starts again (moto empty, the plan made anew)
    stacks.crash()
    resources = stacks.open()
    # Then the key is back, with its value, enabled, in the new plan of the same name
    [restored] = [k for k in apigateway.get_api_keys(includeValues=True)["items"] if k["name"] == "team-a"]
    assert (restored["value"], restored["enabled"]) == ("k" * 40, True)
    plans = apigateway.get_usage_plans(keyId=restored["id"])["items"]
    assert [plan["id"] for plan in plans] == [resources.physical_id("KeysUsagePlan")]


def test_restored_jobs_keep_their_leases_run_out_so_work_in_flight_is_taken_over(stacks: Stacks) -> None:
    # Given a job whose split and results file are leased to invocations far into the future
    resources = stacks.open()
    key = {"job_id": {"S": "j1"}, "sk": {"S": "job"}}
    leased = {
        "split_owner": {"S": "inv-1"},
        "split_lease": {"N": "1900000000"},
        "results_owner": {"S": "inv-2"},
        "results_lease": {"N": "1900000000"},
    }
    dynamodb(resources).put_item(
        TableName=resources.physical_id("JobsTable"), Item={**key, "split_offset": {"N": "7"}, **leased}
    )
    # When the stack is started again (those invocations died with it)
    stacks.stop()
    resources = stacks.open()
    # Then the owners are kept but both leases have run out, so the next claim takes them over
    assert get(resources, "JobsTable", key) == {
        **key,
        "split_offset": {"N": "7"},
        **leased,
        "split_lease": {"N": "0"},
        "results_lease": {"N": "0"},
    }
