"""A newcomer's first `make run`: on a copy of the repository with no virtual environment, it installs
pyproject's `local` set only (not `dev`, which every other test runs with) and the stack serves.

Every other test runs in the `dev` environment, a superset, so a package that running needs but that
only `dev` brings in goes unseen there: moto's API Gateway module needs openapi-spec-validator, which
came only with `dev`'s moto[server], and the first `make run` of a fresh clone stopped at start with
ModuleNotFoundError while `make test` was green."""

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import PROJECT_ROOT, READY_PREFIX, http_request

# Bounds of a hang: creating the environment and installing the `local` set from the package
# registry (pip's cache empty on CI) took 1 to 2 minutes here; then the start.
FIRST_RUN_SECONDS = 540


def tracked_copy(destination: Path) -> None:
    """The repository's tracked files as they are in the working tree (a clone without .venv)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=PROJECT_ROOT, check=True, capture_output=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = PROJECT_ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


@pytest.mark.e2e_timeout(FIRST_RUN_SECONDS + 60)
def test_the_first_make_run_installs_only_what_running_needs_and_serves(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # Given a copy of the repository with no virtual environment
    checkout = tmp_path / "checkout"
    tracked_copy(checkout)
    assert not (checkout / ".venv").exists()
    log_path = tmp_path / "make-run.log"
    environment = {key: value for key, value in os.environ.items() if key not in {"VIRTUAL_ENV", "MAKEFLAGS"}}
    # When a newcomer runs `make run` (on free ports, its data in the temporary folder)
    args = f"--api-port 0 --aws-port 0 --lambda-port 0 --data-dir {tmp_path / 'data'}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            ["make", "run", f"ARGS={args}"],
            cwd=checkout,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**environment, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )
    try:
        ready = None
        deadline = time.monotonic() + FIRST_RUN_SECONDS
        while ready is None and time.monotonic() < deadline and process.poll() is None:
            lines = log_path.read_text(errors="replace").splitlines()
            ready = next((line for line in lines if line.startswith(READY_PREFIX)), None)
            time.sleep(0.5)
        output = log_path.read_text(errors="replace")
        # Then it gets to READY, with the progress of each step shown on the way
        assert ready is not None, f"make run did not get to READY:\n{output[-6000:]}"
        assert "Installing what make run needs" in output
        # And the stack serves: a link is made and followed
        info = json.loads(ready.removeprefix(READY_PREFIX))
        created = http_request(
            info["api_url"],
            "POST",
            "/",
            json.dumps({"url": "https://example.com/first-run"}),
            {"Content-Type": "application/json", "X-Api-Key": info["api_key"]},
        )
        assert created.status == 201, created.text
        followed = http_request(info["api_url"], "GET", created.json()["code"])
        assert followed.status == 301
        assert followed.headers["Location"] == "https://example.com/first-run"
        # And what only `make test` needs was not installed
        assert not (checkout / ".venv" / "bin" / "ruff").exists()
        assert not (checkout / ".venv" / "bin" / "sam").exists()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
