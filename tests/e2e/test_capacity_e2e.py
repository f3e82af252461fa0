"""A bulk job against a links table small enough to throttle it (the local DynamoDB's on-demand
capacity divided by 40: 100 write units a second): the loops pace themselves to it, the job finishes
with every row one outcome, and its status names the table as what bounded it."""

import json
import urllib.request

import pytest

from tests.e2e.conftest import StartStack
from tests.e2e.test_bulk_e2e import TIME_SCALE, wait_until_done

ROWS = 1_500


@pytest.mark.e2e_timeout(300)
def test_a_job_on_a_throttling_table_finishes_and_names_the_table(start_stack: StartStack) -> None:
    # Given a stack whose links table takes 100 write units a second (each link 1, its index entry 1)
    stack = start_stack(
        "--dynamodb-capacity", "scale=40", time_scale=TIME_SCALE, params={"FindIfExists": "false"}
    )
    text = "url\n" + "".join(f"https://capacity.example.com/{n}\n" for n in range(ROWS))
    # When a job of 1,500 rows is uploaded
    answer = stack.request("POST", "bulk", text, {"Content-Type": "text/csv"}, timeout=60)
    assert answer.status == 202, answer.text
    job = wait_until_done(stack, answer.json()["job_id"], 240)
    # Then it is done, every row one outcome, and its status names the table
    assert job["status"] == "done", (job, stack.log()[-3000:])
    assert (job["succeeded"], job["failed"]) == (ROWS, 0)
    assert job["throttled_by"] == "table"
    lines = stack.request("GET", f"jobs/{job['job_id']}/results").text.splitlines()
    assert len(lines) == ROWS + 1
    # And the table did throttle, a small share of its write requests
    with urllib.request.urlopen(f"{stack.aws_endpoint}/_local/dynamodb-capacity") as reply:
        links = json.load(reply)["tables"][stack.resources["LinksTable"]]
    assert links["throttled_write_requests"] > 0
    print(f"\nthrottled {links['throttled_write_requests']} of {links['write_requests']} write requests")
