"""The OpenAPI document enforced: Schemathesis (pinned in the dev extra) against a local stack of
its own, with the API keys' rate limits raised so its requests are not throttled, over every route
of the document: examples, boundary cases (coverage), fuzzing, and stateful sequences that follow
the document's links (a link made, then shown, changed, followed, deleted; a job started, then
read). Bounded: a fixed number of examples per operation. Every answer must be no server error and
match the document (status code, content type, body schema); API Gateway's own answers (403, 404,
429) are described in it. The figures are printed (make test shows them)."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import PROJECT_ROOT, StartStack

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
CONFIG = Path(__file__).with_name("schemathesis.toml")
EXAMPLES_PER_OPERATION = 20
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
RUN_SECONDS = 170
OPERATION = re.compile(r"[A-Z]+ /\S*")
# Far above what one client sends: the run is about conformance, not the throttle.
RAISED_LIMITS = {"KeyRateLimit": "1000", "KeyBurstLimit": "2000", "KeyDailyQuota": "100000000"}


@pytest.mark.e2e_timeout(RUN_SECONDS + 60)
def test_every_answer_matches_the_openapi_document(
    start_stack: StartStack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a stack of its own, rate limits raised
    stack = start_stack(params=RAISED_LIMITS)
    # When Schemathesis runs every phase against the document the stack serves
    started = time.monotonic()
    completed = subprocess.run(
        [
            str(SCHEMATHESIS),
            "--no-color",
            "--config-file",
            str(CONFIG),
            "run",
            stack.api_url + "openapi.json",
            "--header",
            f"X-Api-Key: {stack.api_key}",
            "--max-examples",
            str(EXAMPLES_PER_OPERATION),
            "--checks",
            CHECKS,
            "--report",
            "ndjson",
            "--report-dir",
            str(tmp_path),
        ],
        cwd=PROJECT_ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
    )
    seconds = time.monotonic() - started
    figures = run_figures(next(tmp_path.glob("*.ndjson")))
    summary = (
        f"Schemathesis: {figures['operations']} operations, {figures['cases']:,} cases, "
        f"{figures['checks']:,} checks, {figures['failed_checks']} failed, in {seconds:.0f} s"
    )
    with capsys.disabled():
        print(f"\n{summary}")
    # Then nothing failed: no server error, every answer as documented
    assert completed.returncode == 0, f"{summary}\n{completed.stdout[-8000:]}\n{completed.stderr[-2000:]}"
    assert figures["failed_checks"] == 0
    assert figures["operations"] >= 19 and figures["cases"] >= 19 * EXAMPLES_PER_OPERATION // 2


def run_figures(report: Path) -> dict[str, int]:
    """Operations, test cases and checks of a run, from its NDJSON event report."""
    operations: set[str] = set()
    cases = checks = failed = 0
    for line in report.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        finished = event.get("ScenarioFinished")
        if not finished or finished.get("status") == "skip":
            continue
        recorder = finished["recorder"]
        if OPERATION.fullmatch(recorder["label"]):  # not a stateful scenario's label
            operations.add(recorder["label"])
        cases += len(recorder["cases"])
        for results in recorder["checks"].values():
            checks += len(results)
            failed += sum(1 for result in results if result["status"] == "failure")
    return {"operations": len(operations), "cases": cases, "checks": checks, "failed_checks": failed}
