"""The core flows: create, follow, 404, the index page and the command-line client over HTTP only
(through the `deployment` fixture: the local stack, or a deployed one under `make acceptance`); restart
survival, worker processes, faults and throttling on the local stack."""

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import Answer, RunningStack, StartStack
from tests.e2e.deployment import Deployment


def test_a_created_link_redirects(deployment: Deployment) -> None:
    # Given a URL shortened through the API
    created = deployment.post_json("/", {"url": "https://example.com/e2e/create"})
    assert created.status in (200, 201), created.text
    body = created.json()
    # Then its short URL is on the API's host (or the deployment's public base URL)
    assert body["short_url"] == f"{deployment.short_url_base}{body['code']}"
    # And following it redirects to the URL, with a cache header
    followed = deployment.request("GET", body["code"])
    assert followed.status == 301
    assert followed.headers["Location"] == "https://example.com/e2e/create"
    assert followed.headers["Cache-Control"]


def test_an_unknown_code_is_404(deployment: Deployment) -> None:
    answer = deployment.request("GET", "nosuchcode", headers={"Accept": "application/json"})
    assert answer.status == 404
    assert answer.json()["error"]


def test_the_index_page_is_html(deployment: Deployment) -> None:
    answer = deployment.request("GET", "/")
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("text/html")
    assert "<form" in answer.text.lower()


def test_a_link_survives_a_restart(start_stack: StartStack) -> None:
    # Given a link created on a stack
    running = start_stack()
    code = running.post_json("/", {"url": "https://example.com/e2e/restart"}).json()["code"]
    # When the stack stops cleanly and starts again on the same data dir
    running.restart()
    # Then the link still redirects
    followed = running.request("GET", code)
    assert followed.status == 301
    assert followed.headers["Location"] == "https://example.com/e2e/restart"


def test_the_cli_shortens_a_url(deployment: Deployment) -> None:
    # When the command-line client shortens a URL against the stack
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "shortener_cli.main",
            "--api-url",
            deployment.api_url,
            "shorten",
            "https://example.com/cli",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        # The deployment's key, as a user passes it to the client.
        env={**os.environ, "SHORTENER_API_KEY": deployment.headers.get("X-Api-Key", "")},
    )
    # Then it prints the short URL, which redirects to the URL
    assert result.returncode == 0, result.stderr
    short_url = result.stdout.strip().splitlines()[0]
    assert short_url.startswith(deployment.short_url_base)
    followed = deployment.request("GET", short_url.removeprefix(deployment.short_url_base))
    assert followed.headers["Location"] == "https://example.com/cli"


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (the stack's workers)."""
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.add(int(stat.parent.name))
    return children


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
def test_stopping_leaves_no_worker_processes(start_stack: StartStack) -> None:
    # Given a stack whose API function has a warm worker
    running = start_stack()
    assert running.request("GET", "/").status == 200
    assert running.process is not None
    workers = _children(running.process.pid)
    assert workers
    # When it is stopped as Ctrl-C would
    assert running.stop() == 0
    # Then every worker is gone: a worker killed during its cold start may take a moment to exit,
    # and an exited one reparented to this machine's init stays a zombie until init reaps it
    deadline = time.monotonic() + 15
    while (alive := {pid for pid in workers if _running(pid)}) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive


def _running(pid: int) -> bool:
    """Whether the process exists and has not exited (a zombie has: state Z)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_fault_injected_in_the_api_function_is_a_502_not_a_hang(start_stack: StartStack) -> None:
    # Given every AWS call of the API function fails (fault injection, outside the deployed code)
    running = start_stack(faults=["raise-in=ApiFunction:1"])
    # When a link is created
    answer = running.post_json("/", {"url": "https://example.com/e2e/fault"})
    # Then API Gateway answers as it would for a crashed function
    assert answer.status == 502
    assert answer.json() == {"message": "Internal server error"}
    assert "InjectedFault" in running.log()


def test_dynamodb_throttling_is_absorbed_by_retries_or_answered_busy(start_stack: StartStack) -> None:
    # Given a DynamoDB that throttles a fifth of all requests
    running = start_stack(faults=["dynamodb-throttle=0.2"])

    def until_not_busy(send: Callable[[], Answer]) -> Answer:
        """``send``'s answer once it is not the busy service's, asked again as its Retry-After says
        (at most five times)."""
        for _ in range(5):
            answer = send()
            if answer.status != 503:
                return answer
            # Throttling that outlasted the API's retries (three attempts): never a 502
            assert answer.json()["error"] == "throttled", answer.text
            time.sleep(float(answer.headers["Retry-After"]))
        return answer

    # When links are created and followed, they all work: the layer's retries absorb throttling,
    # and what they cannot absorb is a 503 to ask again
    for number in range(5):
        url = f"https://example.com/e2e/throttle/{number}"
        created = until_not_busy(lambda url=url: running.post_json("/", {"url": url}))
        assert created.status in (200, 201), created.text
        code = created.json()["code"]
        assert until_not_busy(lambda code=code: running.request("GET", code)).status == 301


@pytest.mark.e2e_timeout(300)
def test_the_cli_uploads_a_csv_and_writes_the_results(start_stack: StartStack, tmp_path: Path) -> None:
    # Given a stack whose restarter starts the first loop within seconds (rate(1 minute) / 20)
    stack = start_stack(time_scale=20)
    # And a CSV with good rows and a bad one
    upload = tmp_path / "links.csv"
    upload.write_text(
        "url\n" + "".join(f"https://example.com/cli-bulk/{n}\n" for n in range(20)) + "not a url\n"
    )
    output = tmp_path / "results.csv"
    # When the client uploads it and waits
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "shortener_cli.main",
            "--api-url",
            stack.api_url,
            "bulk",
            str(upload),
            "--output",
            str(output),
            "--poll-interval",
            "0.5",
            "--timeout",
            "180",
        ],
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
        env={**os.environ, "SHORTENER_LOCAL_STACK": str(stack.data_dir)},
    )
    # Then every row has one outcome, in input order, and a code that redirects
    assert result.returncode == 0, result.stderr + stack.log()[-2000:]
    lines = output.read_text().splitlines()
    assert lines[0] == "row,url,code,short_url,error"
    assert len(lines) == 22
    first = lines[1].split(",")
    assert first[1] == "https://example.com/cli-bulk/0"
    assert stack.request("GET", first[2]).headers["Location"] == "https://example.com/cli-bulk/0"
    assert lines[-1].split(",")[2] == ""  # the bad row: no code, an error
    assert "21/21 rows" in result.stderr


@pytest.mark.e2e_timeout(120)
def test_a_second_stack_on_a_taken_port_exits_at_once_naming_the_holder(stack: RunningStack) -> None:
    # Given a running stack (it holds its API and AWS ports)
    api_port = str(urlsplit(stack.api_url).port)
    aws_port = str(urlsplit(stack.aws_endpoint).port)
    # When a second one is started on the same ports
    result = subprocess.run(
        [sys.executable, "-m", "local_stack", "--api-port", api_port, "--aws-port", aws_port, "--no-persist"],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    # Then it exits with an error that names each port and the process holding it
    assert result.returncode == 1
    assert stack.process is not None
    for port in (api_port, aws_port):
        assert f"port {port}," in result.stderr
    if Path("/proc/net/tcp").exists():
        assert f"by pid {stack.process.pid}: " in result.stderr
        assert "-m local_stack" in result.stderr
    assert "READY" not in result.stdout


def test_the_stack_log_is_for_a_person(stack: RunningStack) -> None:
    # Given a stack that served a request (and whose schedule ran its restarter at start)
    assert stack.post_json("/", {"url": "https://example.com/e2e/log"}).status == 201
    log = stack.log()
    # Then its log shows the request as a short line
    assert any(line.endswith(" ms") and " POST / 201 " in line for line in log.splitlines())
    # And no metric blob (CloudWatch embedded metric format) and no library warning
    assert "CloudWatchMetrics" not in log
    assert '"_aws"' not in log
    assert "Warning:" not in log
    # And the machine-readable line is still there, whole
    [ready] = [line for line in log.splitlines() if line.startswith("READY ")]
    assert json.loads(ready.removeprefix("READY "))["api_url"] == stack.api_url


BURST = 256


def burst(count: int, send: Callable[[int], Answer]) -> list[Answer | BaseException]:
    """``count`` requests sent at the same moment, each on its own connection; the answers, or
    what went wrong (a reset, a timeout)."""
    gate = threading.Barrier(count)

    def one(number: int) -> Answer | BaseException:
        gate.wait()
        try:
            return send(number)
        except (OSError, http.client.HTTPException) as exc:
            return exc

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(one, range(count)))


@pytest.mark.e2e_timeout(420)
def test_a_burst_of_links_and_redirects_is_served_whole(start_stack: StartStack) -> None:
    # Given a stack whose key may send 256 requests at once (the default usage plan would answer
    # 429 above 20: that is the plan's burst, not the edge this test is about)
    stack = start_stack(params={"KeyRateLimit": "1000", "KeyBurstLimit": "1000"})
    # When 256 clients create a link each at the same moment (API Gateway waits up to 29 s for a
    # busy function, so each gets a minute)
    created = burst(
        BURST,
        lambda n: stack.request(
            "POST",
            "/",
            json.dumps({"url": f"https://example.com/e2e/burst/{n}"}),
            {"Content-Type": "application/json"},
            timeout=60,
        ),
    )
    # Then none is reset or fails, and every link has its own code
    failures = [answer for answer in created if not isinstance(answer, Answer) or answer.status != 201]
    assert failures == [], failures[:5]
    codes = [answer.json()["code"] for answer in created if isinstance(answer, Answer)]
    assert len(set(codes)) == BURST
    # When 256 clients follow those links at the same moment
    followed = burst(BURST, lambda n: stack.request("GET", codes[n], timeout=60))
    # Then each is redirected to its own URL
    wrong = [
        (n, answer)
        for n, answer in enumerate(followed)
        if not isinstance(answer, Answer)
        or (answer.status, answer.headers["Location"]) != (301, f"https://example.com/e2e/burst/{n}")
    ]
    assert wrong == [], wrong[:5]


@pytest.mark.e2e_timeout(180)
def test_a_burst_of_invokes_is_accepted_by_the_lambda_endpoint(stack: RunningStack) -> None:
    # When 256 clients call the Invoke API at the same moment (DryRun: the endpoint only)
    endpoint = urlsplit(stack.lambda_endpoint)
    function = stack.resources["RestarterFunction"]

    def dry_run(_: int) -> Answer:
        connection = http.client.HTTPConnection(str(endpoint.hostname), endpoint.port, timeout=60)
        try:
            connection.request(
                "POST",
                f"/2015-03-31/functions/{function}/invocations",
                body=b"{}",
                headers={"X-Amz-Invocation-Type": "DryRun"},
            )
            response = connection.getresponse()
            return Answer(response.status, response.headers, response.read())
        finally:
            connection.close()

    answers = burst(BURST, dry_run)
    # Then every one is answered, none reset
    assert [a.status if isinstance(a, Answer) else repr(a) for a in answers] == [204] * BURST
