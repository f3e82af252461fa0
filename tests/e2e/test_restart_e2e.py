"""What the local stack acknowledged survives a clean stop and `kill -9` of its whole process group:
links, jobs and their results, loops, the id counter, the queued rows, and the files in S3 (uploads
and results files)."""

import csv
import io
import signal
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from shortener_cli.client import ShortenerClient
from tests.e2e.conftest import RunningStack, StartStack
from tests.e2e.test_bulk_e2e import results_of, stored_urls, wait_until_done
from tests.e2e.test_direct_upload_e2e import generated_csv, status
from tests.e2e.test_direct_upload_e2e import wait_for as wait_for_job
from tests.e2e.test_scaling_e2e import wait_for

TIME_SCALE = 20
# Stale loops would be revived only after this: a job that finishes after a restart shows that
# restored loops were revived at start, not by the threshold.
# Loops never go stale on their own here, and the writers' key is not throttled (the default usage
# plan allows 10 requests/s: its 429s are not what these tests are about), and one loop always runs
# (MinLoops defaults to 0: these tests are about loops surviving a restart).
NEVER_STALE = {
    "StaleHeartbeatSeconds": "3600",
    "KeyRateLimit": "1000",
    "KeyBurstLimit": "1000",
    "MinLoops": "1",
}


def bulk_csv(rows: int, tag: str) -> str:
    lines = [f"https://example.com/{tag}/{n}" for n in range(rows)]
    lines[rows // 2] = "not a url"
    return (
        "url,code\n" + "\n".join(f"{url}," for url in lines) + f"\nhttps://example.com/{tag}/custom,{tag}-c\n"
    )


def tokens(stack: RunningStack) -> dict[str, str]:
    """Loop token -> loop id, read from the tokens table."""
    items = stack.boto3_client("dynamodb").scan(TableName=stack.resources["TokensTable"], ConsistentRead=True)
    return {item["token"]["S"]: item["loop_id"]["S"] for item in items["Items"]}


def revived(stack: RunningStack, before: dict[str, str]) -> bool:
    """Whether every loop of ``before`` that still has its token runs under a new loop id (the
    restarter took it over), and at least one does."""
    now = tokens(stack)
    kept = [token for token in before if token in now]
    return bool(kept) and all(now[token] != before[token] for token in kept)


def assert_redirects(stack: RunningStack, links: dict[str, str]) -> None:
    for code, url in links.items():
        followed = stack.request("GET", code)
        assert (followed.status, followed.headers.get("Location")) == (301, url), code


def assert_one_outcome_per_row(stack: RunningStack, job_id: str, rows: int) -> list[dict[str, str]]:
    job = wait_until_done(stack, job_id, 120)
    assert job["status"] == "done", (job, stack.log()[-3000:])
    assert job["succeeded"] + job["failed"] == rows
    lines = results_of(stack, job_id)
    assert [int(line["row"]) for line in lines] == list(range(1, rows + 1))
    return lines


@pytest.mark.e2e_timeout(240)
def test_links_jobs_and_loops_survive_a_clean_restart(start_stack: StartStack) -> None:
    # Given a stack holding single and custom links, a finished bulk job and a running loop
    stack = start_stack(time_scale=TIME_SCALE, params=NEVER_STALE)
    links = {}
    for n in range(5):
        created = stack.post_json("/", {"url": f"https://example.com/clean/{n}"}).json()
        links[created["code"]] = created["url"]
    custom = stack.post_json("/", {"url": "https://example.com/clean/custom", "code": "clean-custom"})
    assert custom.status == 201, custom.text
    links["clean-custom"] = "https://example.com/clean/custom"
    accepted = stack.request("POST", "bulk", bulk_csv(600, "clean"), {"Content-Type": "text/csv"}).json()
    before = assert_one_outcome_per_row(stack, accepted["job_id"], 601)
    loops = tokens(stack)
    assert loops
    # When it stops cleanly and starts again
    stack.restart()
    # Then the links redirect and the job is done with the same results
    assert "Saved " in stack.log()
    assert_redirects(stack, links)
    assert stack.request("GET", f"jobs/{accepted['job_id']}").json()["status"] == "done"
    assert results_of(stack, accepted["job_id"]) == before
    # And the loops are revived at start (a new loop id each), not after the stale threshold
    wait_for(lambda: revived(stack, loops), 60, "revival of the restored loops")
    # And new links get new codes
    fresh = stack.post_json("/", {"url": "https://example.com/clean/after"}).json()["code"]
    assert fresh not in links and fresh not in {line["code"] for line in before}


@pytest.mark.e2e_timeout(120)
def test_a_closed_terminal_saves_like_ctrl_c(start_stack: StartStack) -> None:
    # Given a stack holding a link
    stack = start_stack()
    code = stack.post_json("/", {"url": "https://example.com/hangup"}).json()["code"]
    # When its terminal is closed (SIGHUP)
    assert stack.process is not None
    stack.process.send_signal(signal.SIGHUP)
    # Then it stops cleanly, having saved, and the link is there after a start
    assert stack.process.wait(60) == 0, stack.log()[-3000:]
    assert "Saved " in stack.log()
    stack.restart()
    assert_redirects(stack, {code: "https://example.com/hangup"})


@pytest.mark.e2e_timeout(300)
def test_kill_9_mid_job_keeps_every_answered_write(start_stack: StartStack) -> None:
    # Given a stack with one loop at most (so only a revived loop can finish the job), a bulk job
    # in progress, and clients creating links
    stack = start_stack(time_scale=TIME_SCALE, params={**NEVER_STALE, "MaxLoops": "1"})
    rows = 5000
    accepted = stack.request("POST", "bulk", bulk_csv(rows, "kill"), {"Content-Type": "text/csv"}).json()
    answered: dict[str, str] = {}
    refused: list[str] = []
    killing = threading.Event()

    def create_links(client: int) -> None:
        for n in range(10_000):
            if killing.is_set():
                return
            url = f"https://example.com/kill/single/{client}/{n}"
            body: dict[str, str] = {"url": url}
            if n % 10 == 0:
                body["code"] = f"kill-{client}-{n}"
            try:
                created = stack.post_json("/", body)
            except OSError:
                return  # the stack is gone: this one was never answered
            if created.status == 201:
                answered[created.json()["code"]] = url
            elif created.status == 429:
                time.sleep(float(created.headers.get("Retry-After") or 1))
            else:
                refused.append(f"{created.status} {created.text}")
                return

    clients = [threading.Thread(target=create_links, args=(client,)) for client in range(3)]
    for thread in clients:
        thread.start()
    wait_for(
        lambda: (
            (len(answered) >= 10 or bool(refused))
            and stack.request("GET", f"jobs/{accepted['job_id']}").json()["processed"] >= 250
        ),
        60,
        "answered creations and progress of the bulk job",
        interval=0.2,
    )
    loops = tokens(stack)
    # When the whole process group is killed in the middle of the job, and the stack started again
    stack.kill()
    killing.set()
    for thread in clients:
        thread.join()
    stack.restart()
    assert not refused and len(answered) > 0, refused
    # Then every link whose creation was answered redirects to its URL
    assert_redirects(stack, answered)
    # And the job completes with exactly one outcome per row, the loops revived at once
    lines = assert_one_outcome_per_row(stack, accepted["job_id"], rows + 1)
    assert revived(stack, loops)
    # And no code was issued twice: links created now get codes no one had, and every code is stored
    # for its own URL
    after = {}
    for n in range(30):
        created = stack.post_json("/", {"url": f"https://example.com/kill/after/{n}"}).json()
        after[created["code"]] = created["url"]
    bulk = {line["code"]: line["url"] for line in lines if line["code"]}
    assert not (after.keys() & answered.keys()) and not (after.keys() & bulk.keys())
    assert not (answered.keys() & bulk.keys())
    everything = {**answered, **bulk, **after}
    assert stored_urls(stack, list(everything)) == everything


def direct_upload(stack: RunningStack, source: Path, rows: int) -> str:
    """A generated file of ``rows`` rows uploaded straight to S3 (POST /bulk/uploads, presigned
    PUT); the job's id."""
    client = ShortenerClient(stack.api_url, api_key=stack.api_key)
    size = generated_csv(source, rows)
    job = client.start_upload(source.name, size)
    client.put_file(job["upload"], source, lambda _: None)
    return str(job["job_id"])


def downloaded_results(stack: RunningStack, job_id: str) -> list[dict[str, Any]]:
    """GET /jobs/{id}/results: a 303 to the presigned results file, downloaded."""
    answer = stack.request("GET", f"jobs/{job_id}/results")
    assert answer.status == 303, (answer.status, answer.text, stack.log()[-3000:])
    with urllib.request.urlopen(answer.headers["Location"], timeout=60) as download:
        return list(csv.DictReader(io.TextIOWrapper(download, encoding="utf-8", newline="")))


@pytest.mark.e2e_timeout(300)
def test_a_direct_uploads_results_file_survives_a_clean_restart_and_kill_9(
    start_stack: StartStack, tmp_path: Path
) -> None:
    # Given a finished direct-upload job whose results are a file in S3
    stack = start_stack(time_scale=TIME_SCALE, params=NEVER_STALE)
    rows = 300
    job_id = direct_upload(stack, tmp_path / "catalogue.csv", rows)
    done = wait_for_job(stack, job_id, "done", 120)
    assert (done["phase"], done["succeeded"]) == ("done", rows), (done, stack.log()[-3000:])
    before = downloaded_results(stack, job_id)
    assert [int(line["row"]) for line in before] == list(range(1, rows + 1))
    # When the stack stops cleanly and starts again
    stack.restart()
    # Then the results file is still downloadable through the API, the same
    assert "Saved " in stack.log()
    assert downloaded_results(stack, job_id) == before
    # When the whole process group is killed and the stack started again
    stack.kill()
    stack.restart()
    # Then it is still there, the same
    assert status(stack, job_id)["phase"] == "done"
    assert downloaded_results(stack, job_id) == before


@pytest.mark.e2e_timeout(300)
def test_an_upload_answered_but_not_yet_split_is_split_after_kill_9(
    start_stack: StartStack, tmp_path: Path
) -> None:
    # Given a stack whose files function is slow to start a split (its first read of the job waits)
    slow_split = "delay-in=FilesFunction.GetItem:600"
    stack = start_stack(time_scale=TIME_SCALE, params=NEVER_STALE, faults=[slow_split])
    rows = 300
    # And an upload answered 200, whose split has not started when the process group is killed
    job_id = direct_upload(stack, tmp_path / "catalogue.csv", rows)
    assert status(stack, job_id)["phase"] == "awaiting_upload"
    stack.kill()
    # When the stack starts again (the files function no longer slow)
    stack.args = [arg for arg in stack.args if arg not in ("--fault", slow_split)]
    stack.restart()
    # Then the file is back, the event S3 sent for it is delivered again, and the job is done with
    # one outcome per row
    assert "delivered again" in stack.log()
    done = wait_for_job(stack, job_id, "done", 120)
    assert (done["phase"], done["succeeded"] + done["failed"]) == ("done", rows), (done, stack.log()[-3000:])
    lines = downloaded_results(stack, job_id)
    assert [int(line["row"]) for line in lines] == list(range(1, rows + 1))
