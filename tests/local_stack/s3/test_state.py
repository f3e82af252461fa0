"""S3's part of the durable state: the objects S3 answered for survive a crash (the journal) and a
clean stop (the snapshot), bodies in files of their own that compaction drops once nothing refers to
them, and no restored object is announced to its bucket's functions a second time.

Each test runs the embedded AWS (moto behind the local stack's own server, over HTTP) with one
bucket; a crash is played by abandoning the state, resetting moto, creating the bucket again and
restoring from the same data dir, as `kill -9` and a restart would leave things."""

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from local_stack.cloudformation.intrinsics import ACCOUNT_ID
from local_stack.durability import DurableState
from local_stack.embedded.client import aws_client
from local_stack.embedded.server import EmbeddedAws
from local_stack.s3 import S3State
from local_stack.s3 import buckets as s3
from local_stack.s3.state import BODIES_DIR
from tests.local_stack.durability.test_persistence import Stacks

pytestmark = pytest.mark.integration

REGION = "us-east-1"
LOGICAL_ID = "BulkBucket"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:files"


class Runs(Stacks):
    """Successive runs of a stack holding one bucket, over one data dir (crash and stop as in the
    persistence tests)."""

    def __init__(self, aws: EmbeddedAws, data_dir: Path) -> None:
        super().__init__(aws, data_dir)
        self.client = aws_client("s3", aws.url, REGION)
        self.bucket = "shortener-bulk-test"
        self.s3: S3State | None = None
        # The events the bucket sent, and for each what the stack calls once its invocation is over.
        self.announced: list[dict[str, Any]] = []
        self.finished: list[Callable[[], None]] = []

    def open_bucket(self, bucket: str | None = None) -> None:
        """A fresh embedded AWS whose bucket notifies a function of each upload, and the state."""
        self.aws.reset()
        self.bucket = bucket or self.bucket
        self.client.create_bucket(Bucket=self.bucket)
        self.client.put_bucket_notification_configuration(
            Bucket=self.bucket,
            NotificationConfiguration={
                "LambdaFunctionConfigurations": [
                    {
                        "LambdaFunctionArn": FUNCTION_ARN,
                        "Events": ["s3:ObjectCreated:*"],
                        "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "uploads/"}]}},
                    }
                ]
            },
        )
        self.s3 = S3State(ACCOUNT_ID, self.data_dir, {LOGICAL_ID: self.bucket})
        state = DurableState(
            self.data_dir, [self.s3], {LOGICAL_ID: self.bucket}, exclusive=self.aws.exclusive
        )
        self.restored = state.restore()
        self.aws.request_end_hooks.append(state.end_request)
        state.start()
        self.state = state

    def notified(self, function_arn: str, event: dict[str, Any]) -> bool:
        """S3 sends an event (during the request that wrote the object), as the stack receives it."""
        assert self.s3 is not None
        self.announced.append(event)
        self.finished.append(self.s3.event_sent(event, function_arn))
        return True

    def bodies(self) -> set[str]:
        folder = self.data_dir / BODIES_DIR
        return {path.name for path in folder.iterdir()} if folder.is_dir() else set()

    def get(self, key: str) -> dict[str, Any]:
        answer = self.client.get_object(Bucket=self.bucket, Key=key)
        return {
            "body": answer["Body"].read(),
            "etag": answer["ETag"],
            "content_type": answer["ContentType"],
            "metadata": answer["Metadata"],
            "last_modified": answer["LastModified"],
        }

    def object_keys(self) -> list[str]:
        listed = self.client.list_objects_v2(Bucket=self.bucket)
        return sorted(item["Key"] for item in listed.get("Contents", []))


@pytest.fixture
def runs(aws: EmbeddedAws, tmp_path: Path) -> Iterator[Runs]:
    opened = Runs(aws, tmp_path / "state")
    undo = s3.deliver_notifications(opened.notified)
    yield opened
    undo()
    if opened.state is not None:
        opened.crash()


def write_objects(runs: Runs) -> None:
    """A put with metadata, a copy, a multipart upload, an overwrite and a deletion."""
    client = runs.client
    client.put_object(
        Bucket=runs.bucket,
        Key="results/a.csv",
        Body=b"row,code\n1,abc\n",
        ContentType="text/csv; charset=utf-8",
        Metadata={"rows": "1"},
    )
    client.copy_object(Bucket=runs.bucket, Key="results/copy.csv", CopySource=f"{runs.bucket}/results/a.csv")
    part = b"x" * (5 * 1024 * 1024)
    upload = client.create_multipart_upload(Bucket=runs.bucket, Key="results/big.csv", ContentType="text/csv")
    etags = [
        client.upload_part(
            Bucket=runs.bucket, Key="results/big.csv", UploadId=upload["UploadId"], PartNumber=n, Body=part
        )["ETag"]
        for n in (1, 2)
    ]
    client.complete_multipart_upload(
        Bucket=runs.bucket,
        Key="results/big.csv",
        UploadId=upload["UploadId"],
        MultipartUpload={
            "Parts": [{"ETag": etag, "PartNumber": n} for n, etag in zip((1, 2), etags, strict=True)]
        },
    )
    client.put_object(Bucket=runs.bucket, Key="results/gone.csv", Body=b"soon deleted")
    client.put_object(Bucket=runs.bucket, Key="results/twice.csv", Body=b"first")
    client.put_object(Bucket=runs.bucket, Key="results/twice.csv", Body=b"second")
    client.delete_objects(Bucket=runs.bucket, Delete={"Objects": [{"Key": "results/gone.csv"}]})


def everything(runs: Runs) -> dict[str, dict[str, Any]]:
    return {key: runs.get(key) for key in runs.object_keys()}


def test_every_answered_object_write_survives_a_crash(runs: Runs) -> None:
    # Given objects written every way S3 writes them
    runs.open_bucket()
    write_objects(runs)
    before = everything(runs)
    # When the process dies and the stack starts again
    runs.crash()
    runs.open_bucket()
    # Then the same objects are there: bodies, ETags (a multipart one too), content types, metadata
    assert everything(runs) == before
    assert sorted(before) == ["results/a.csv", "results/big.csv", "results/copy.csv", "results/twice.csv"]
    assert before["results/big.csv"]["etag"].endswith('-2"')
    assert before["results/a.csv"]["metadata"] == {"rows": "1"}
    assert runs.restored is not None and runs.restored.counts == {"objects": 4}


def test_objects_survive_a_clean_stop_and_compaction_drops_unreferenced_bodies(runs: Runs) -> None:
    # Given objects written, one of them overwritten and one deleted (their old bodies unreferenced)
    runs.open_bucket()
    write_objects(runs)
    before = everything(runs)
    assert len(runs.bodies()) == 6  # one file per write
    # When the stack stops cleanly
    summary = runs.stop()
    # Then the snapshot holds the four objects, and only their bodies are left
    assert summary.counts == {"objects": 4}
    assert len(runs.bodies()) == 4
    assert sorted(path.name for path in runs.data_dir.glob("journal-*.dat")) == []
    # And they come back whole after a start
    runs.open_bucket()
    assert everything(runs) == before


def test_a_body_is_on_disk_before_the_record_that_names_it(runs: Runs) -> None:
    # Given an object written (the request answered)
    runs.open_bucket()
    body = bytes(range(256)) * 1000
    runs.client.put_object(Bucket=runs.bucket, Key="uploads/job.csv", Body=body)
    # Then its body is already a whole file of its own, not inside the journal
    (name,) = runs.bodies()
    assert (
        hashlib.sha256((runs.data_dir / BODIES_DIR / name).read_bytes()).digest()
        == hashlib.sha256(body).digest()
    )
    journal = b"".join(path.read_bytes() for path in runs.data_dir.glob("journal-*.dat"))
    assert len(journal) < len(body) // 10


def test_an_object_whose_body_file_is_incomplete_is_dropped_not_served_short(runs: Runs) -> None:
    # Given two objects, and the body file of one cut short (a disk that lost its end)
    runs.open_bucket()
    runs.client.put_object(Bucket=runs.bucket, Key="results/kept.csv", Body=b"kept")
    runs.client.put_object(Bucket=runs.bucket, Key="results/cut.csv", Body=b"0123456789")
    runs.crash()
    for path in (runs.data_dir / BODIES_DIR).iterdir():
        if path.read_bytes() == b"0123456789":
            path.write_bytes(b"01234")
    # When the stack starts again, then only the whole one is there
    runs.open_bucket()
    assert runs.object_keys() == ["results/kept.csv"]


def test_restored_objects_are_not_announced_again(runs: Runs) -> None:
    # Given an upload that its bucket announced once, whose invocation finished
    runs.open_bucket()
    runs.client.put_object(Bucket=runs.bucket, Key="uploads/job.csv", Body=b"url\nhttps://example.com\n")
    assert len(runs.announced) == 1
    runs.finished[0]()
    # When the stack is killed and started again
    runs.crash()
    runs.open_bucket()
    # Then the object is back without a second notification, and nothing is delivered again
    assert runs.object_keys() == ["uploads/job.csv"]
    assert len(runs.announced) == 1
    assert runs.s3 is not None
    assert runs.s3.redeliver(lambda arn, event, done: pytest.fail("delivered again")) == 0


def test_an_event_whose_invocation_had_not_finished_is_delivered_again_once(runs: Runs) -> None:
    # Given an upload answered 200 whose event was sent, but whose invocation had not finished
    runs.open_bucket()
    runs.client.put_object(Bucket=runs.bucket, Key="uploads/job.csv", Body=b"url\nhttps://example.com\n")
    assert len(runs.finished) == 1
    # When the stack is killed and started again
    runs.crash()
    runs.open_bucket()
    # Then that event is delivered again (as Lambda's queue would have), to the same function
    delivered: list[tuple[str, dict[str, Any], Callable[[], None]]] = []
    assert runs.s3 is not None
    assert runs.s3.redeliver(lambda arn, event, done: delivered.append((arn, event, done))) == 1
    ((arn, event, done),) = delivered
    assert arn == FUNCTION_ARN and event == runs.announced[0]
    # And once that invocation is over, a further restart (clean this time) delivers nothing
    done()
    runs.stop()
    runs.open_bucket()
    assert runs.s3 is not None
    assert runs.s3.redeliver(lambda arn, event, done: pytest.fail("delivered again")) == 0


def test_objects_follow_their_bucket_to_a_new_name(runs: Runs) -> None:
    # Given an object in the template's bucket
    runs.open_bucket()
    runs.client.put_object(Bucket=runs.bucket, Key="results/a.csv", Body=b"a")
    runs.crash()
    # When the bucket has another name in the next run (records name it by its logical id)
    runs.open_bucket(bucket="shortener-bulk-renamed")
    # Then the object is in it
    assert runs.object_keys() == ["results/a.csv"]
    assert runs.get("results/a.csv")["body"] == b"a"
