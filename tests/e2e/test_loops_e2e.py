"""Loops keep their promises on the local stack: a second delivery of a running loop's event stops
at its first heartbeat, a poisoned message ends its job done with its rows failed, and a batch
slower than the visibility timeout is not delivered twice."""

import csv
import io
import json
import time
from typing import Any

import boto3
import pytest
from botocore.config import Config

from benchmarks.loop_count import StackProbe
from tests.e2e.conftest import RunningStack, StartStack
from tests.e2e.test_scaling_e2e import wait_for

TIME_SCALE = 10.0
SCHEDULE_PERIOD = 60 / TIME_SCALE  # the restarter's rate(1 minute), sped up


def upload(running: RunningStack, rows: list[tuple[str, str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerows([("url", "code"), *rows])
    answer = running.request("POST", "bulk", buffer.getvalue(), {"Content-Type": "text/csv"})
    assert answer.status == 202, answer.text
    return str(answer.json()["job_id"])


def job(running: RunningStack, job_id: str) -> dict[str, Any]:
    return dict(running.request("GET", f"jobs/{job_id}").json())


def results(running: RunningStack, job_id: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(running.request("GET", f"jobs/{job_id}/results").text)))


@pytest.mark.e2e_timeout(120)
def test_a_second_delivery_of_a_running_loops_event_stops_at_its_first_heartbeat(
    start_stack: StartStack,
) -> None:
    # Given the stack's one loop running (its token holds the sequence number it claimed; MinLoops
    # defaults to 0, so one is asked for)
    running = start_stack(time_scale=TIME_SCALE, params={"MinLoops": "1"})
    probe = StackProbe(running.info)
    row = wait_for(lambda: next((t for t in probe.tokens() if t.get("holder")), None), 60, "a running loop")
    event = {key: row[key] for key in ("queue_url", "token", "loop_id")} | {"seq": int(row["seq"])}
    # When Lambda delivers that loop's event again (here: invoked directly, and waited for)
    # (a loop that wrongly ran would answer only after minutes: the read times out first)
    lambda_client = boto3.session.Session(
        aws_access_key_id="local", aws_secret_access_key="local", region_name=running.region
    ).client(
        "lambda",
        endpoint_url=running.lambda_endpoint,
        config=Config(read_timeout=60, retries={"max_attempts": 0}),
    )
    answer = lambda_client.invoke(
        FunctionName=running.resources["PollerFunction"], Payload=json.dumps(event).encode()
    )
    # Then that invocation stopped at once, without claiming the token
    report = json.loads(answer["Payload"].read())
    assert (report["stopped"], report["claimed"], report["messages"]) == (True, False, 0), report
    # And the running loop still holds it, and beats on
    [after] = [t for t in probe.tokens() if t["token"] == row["token"]]
    assert (after["loop_id"], after["seq"], after["holder"]) == (row["loop_id"], row["seq"], row["holder"])
    wait_for(
        lambda: any(
            int(t["last_used"]) > int(row["last_used"])
            for t in probe.tokens()
            if t["holder"] == row["holder"]
        ),
        40,
        "another heartbeat of the running loop",
    )


POISON_VISIBILITY_SECONDS = 3
MAX_RECEIVE_COUNT = 5  # the template's redrive policy
LAST_ATTEMPT_DELAY = 30  # the restarter's LAST_ATTEMPT_DELAY_SECONDS (SQS delays are not scaled)


@pytest.mark.e2e_timeout(360)
def test_a_poisoned_message_ends_its_job_done_with_its_rows_failed(start_stack: StartStack) -> None:
    # Given loops whose link batch writes always fail (every message with generated rows is
    # poisoned), a short visibility timeout, and custom-code rows, which need no batch write
    running = start_stack(
        time_scale=TIME_SCALE,
        params={"BulkVisibilityTimeoutSeconds": POISON_VISIBILITY_SECONDS},
        faults=["raise-in=PollerFunction.BatchWriteItem:1"],
    )
    # When a poisoned job and a healthy one are uploaded
    started = time.monotonic()
    poisoned = upload(running, [(f"https://example.com/poison/{n}", "") for n in range(40)])
    healthy = upload(running, [("https://example.com/healthy", "e2e-healthy")])
    # Then the poisoned job is done once its message has failed every receive (three attempts
    # each), the restarter has sent it back for its last attempt (delayed), and that attempt
    # failed too: within the receive count times the visibility timeout and the attempts' pauses,
    # a schedule period, the delay and a last receive (and slack for a loaded machine)
    bound = MAX_RECEIVE_COUNT * (POISON_VISIBILITY_SECONDS + 1.5) + SCHEDULE_PERIOD + LAST_ATTEMPT_DELAY + 40
    status = wait_for(
        lambda: (s := job(running, poisoned))["status"] == "done" and s, bound, "end of the job"
    )
    assert (status["succeeded"], status["failed"]) == (0, 40)
    assert (
        time.monotonic() - started >= MAX_RECEIVE_COUNT * POISON_VISIBILITY_SECONDS + LAST_ATTEMPT_DELAY - 1
    )
    # And every row failed with the reason, in input order
    lines = results(running, poisoned)
    assert [int(line["row"]) for line in lines] == list(range(1, 41))
    # (the reason of its last attempt: the injected fault)
    reason = (
        "processing_failed: this row's message failed on every delivery and on its last attempt "
        "(InjectedFault)"
    )
    assert all(line["error"].startswith(reason) for line in lines), lines[0]
    # And the healthy job was done as usual, and the dead-letter queue is empty
    assert job(running, healthy)["succeeded"] == 1
    assert next(iter(results(running, healthy)))["code"] == "e2e-healthy"
    sqs = running.boto3_client("sqs")
    depth = sqs.get_queue_attributes(
        QueueUrl=running.resources["BulkDeadLetterQueue"], AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert depth["ApproximateNumberOfMessages"] == "0"


# A visibility timeout that one loop's two messages outlast (so the renewals are what keeps them
# hidden), renewed every third of it: several seconds of slack before a late renewal would let SQS
# deliver again, which a loaded 2-core CI needs (6 s with a renewal every 2 s was not enough there).
SLOW_VISIBILITY_SECONDS = 20
SLOW_WRITE_SECONDS = 6


@pytest.mark.e2e_timeout(360)
def test_a_batch_slower_than_the_visibility_timeout_is_not_delivered_twice(start_stack: StartStack) -> None:
    # Given two loops polling, a visibility timeout of 20 s, and link batch writes that take 6 s
    # each: a message of 250 rows is 10 writes on 8 threads (two rounds, 12 s), so a loop that
    # receives both messages of a 500-row job works on them for 24 s or more
    running = start_stack(
        time_scale=TIME_SCALE,
        params={
            "BulkVisibilityTimeoutSeconds": SLOW_VISIBILITY_SECONDS,
            "MinLoops": 2,
            "FindIfExists": "false",
        },
        faults=[f"delay-in=PollerFunction.BatchWriteItem:{SLOW_WRITE_SECONDS}"],
    )
    probe = StackProbe(running.info)
    wait_for(lambda: sum(1 for t in probe.tokens() if t.get("holder")) == 2, 60, "two running loops")
    # When a 500-row job is processed
    job_id = upload(running, [(f"https://example.com/slow/{n}", "") for n in range(500)])
    status = wait_for(lambda: (s := job(running, job_id))["status"] == "done" and s, 240, "end of the job")
    # Then every row has its code, and no message was received a second time
    assert (status["succeeded"], status["failed"]) == (500, 0)
    assert "Message delivered again" not in running.log()
    assert '"ChunksAlreadyDone"' not in running.log()
