"""Counting a job's chunks under moto's jobs table: each chunk is counted once, in any order and
however often it is delivered, and the job item stays small however many chunks the job has (a set
of every counted chunk would cost write units for the whole item on each count, and pass
DynamoDB's 400 KB item limit at about 21,000,000 rows)."""

import random
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from shortener.aws_usage import item_size
from shortener.jobs.model import Job
from shortener.jobs.store import JobsStore
from shortener.jobs.store.chunk_records import COUNTED_SET_COMPACT_AT
from shortener.jobs.store.items import JOB_SK

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


@pytest.fixture
def jobs(tables: dict[str, str]) -> JobsStore:
    store = JobsStore(tables["JOBS_TABLE"])
    store.create_job(Job(job_id="j" * 32, total=0, chunks=0, created_at=NOW), expires_at=2**31)
    return store


def job_item(jobs: JobsStore) -> dict[str, Any]:
    key = {"job_id": {"S": "j" * 32}, "sk": {"S": JOB_SK}}
    return dict(boto3.client("dynamodb").get_item(TableName=jobs.table_name, Key=key)["Item"])


def count(jobs: JobsStore, chunk: int) -> bool:
    return jobs.count_chunk("j" * 32, chunk, succeeded=2, failed=1, now=NOW) is not None


def test_chunks_counted_nearly_in_order_are_each_counted_once_and_the_item_stays_small(
    jobs: JobsStore,
) -> None:
    # Given 600 chunks counted as loops count them: nearly in order (shuffled within windows of
    # 20), one of them (chunk 30) 150 counts late, as a dead-letter settlement is, and every tenth
    # delivered twice
    chunks = list(range(600))
    rng = random.Random(7)
    order: list[int] = []
    for start in range(0, 600, 20):
        window = chunks[start : start + 20]
        rng.shuffle(window)
        order += window
    order.remove(30)
    order.insert(180, 30)
    # When each is counted, and counted again on a second delivery
    firsts, seconds = 0, 0
    largest_item = 0
    for position, chunk in enumerate(order):
        firsts += count(jobs, chunk)
        if position % 10 == 0:
            seconds += count(jobs, chunk)
            seconds += count(jobs, order[max(0, position - 300)])  # a delivery long after the first
        largest_item = max(largest_item, item_size(job_item(jobs)))
    # Then each chunk was counted once: every first count, no second one
    assert (firsts, seconds) == (600, 0)
    job = jobs.get_job("j" * 32)
    assert job is not None and (job.succeeded, job.failed) == (1200, 600)
    # And the item stayed small: the floor passed the counted chunks, and the set held at most
    # those counted while the late chunk held the floor (the window's and the late chunk's 150)
    item = job_item(jobs)
    floor, above = int(item["counted_below"]["N"]), {int(n) for n in item["counted"]["NS"]}
    assert set(range(floor)) | above == set(chunks) and len(above) < COUNTED_SET_COMPACT_AT
    every_chunk = item_size({**item, "counted": {"NS": [str(chunk) for chunk in chunks]}})
    assert largest_item < every_chunk / 2, (largest_item, every_chunk)


def test_a_chunk_under_the_floor_is_not_counted_again(jobs: JobsStore) -> None:
    # Given chunks 0 to COUNTED_SET_COMPACT_AT counted, so the floor passed them
    for chunk in range(COUNTED_SET_COMPACT_AT + 1):
        assert count(jobs, chunk)
    assert int(job_item(jobs)["counted_below"]["N"]) > 0
    # When chunk 0 (no longer in the set) is delivered again, Then it is not counted
    assert not count(jobs, 0)
    job = jobs.get_job("j" * 32)
    assert job is not None and job.succeeded == 2 * (COUNTED_SET_COMPACT_AT + 1)
