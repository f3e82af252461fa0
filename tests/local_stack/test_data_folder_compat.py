"""A data folder written by `make run` before the local stack was regrouped by AWS service restores
after it: its links, its finished bulk job and its API keys.

The folder in fixtures/data-folder-before-services/ was made by main's stack (commit 74ca6c1) with
`python -m local_stack --data-dir ...`: four links by the admin key (three generated codes and the
custom code ``compat1``), a bulk job of three rows run to ``done``, a member key made with
`shortener keys create --name compat --owner team-a` and a link made by it; then a clean stop
(SIGTERM). ``snapshot.dat`` is binary (the durable state's snapshot, 9.7 KB); ``s3-bodies/`` holds
the job's results file. The test starts today's stack on a copy, so the fixture stays as it was."""

import http.client
import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from local_stack.harness import StackProcess

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).parent / "fixtures" / "data-folder-before-services"
LINKS = {
    "1gFn": "https://example.com/a",
    "TmEF": "https://example.org/b",
    "xd1I": "https://example.net/c",
    "compat1": "https://example.com/custom",
    "Rzzd": "https://example.com/member",
}
JOB_ID = "1c8287fd8d4843c28004967b2b0c8576"
JOB_CODES = ["WUM8", "Z9KR", "kLPh"]
MEMBER_KEY = "shk_280ae1d6a662_pKcKoM-shy-jRU3vdBVBPA6PdLnigUTtW9Ie-SxIiOk"


def _request(
    api_url: str, method: str, path: str, key: str | None = None, body: Any = None
) -> tuple[int, dict[str, str], bytes]:
    url = urlsplit(api_url)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    headers = {"X-Api-Key": key} if key else {}
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    try:
        connection.request(method, path, body=payload, headers=headers)
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def restored(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("restored") / "data"
    shutil.copytree(FIXTURE, folder)
    (folder / "admin-api-key").chmod(0o600)
    stack = StackProcess(
        ["--api-port", "0", "--aws-port", "0", "--lambda-port", "0", "--data-dir", str(folder)],
        folder.parent / "stack.log",
    )
    ready = stack.launch()
    try:
        yield ready
    finally:
        stack.stop()


def test_the_links_made_before_redirect_after(restored: dict[str, Any]) -> None:
    for code, url in LINKS.items():
        status, headers, _ = _request(restored["api_url"], "GET", f"/{code}")
        assert (status, headers.get("location")) == (301, url), code


def test_the_finished_job_and_its_results_are_kept(restored: dict[str, Any]) -> None:
    status, _, body = _request(restored["api_url"], "GET", f"/jobs/{JOB_ID}", restored["api_key"])
    assert status == 200
    job = json.loads(body)
    assert (job["status"], job["total"], job["succeeded"], job["failed"]) == ("done", 3, 3, 0)
    status, _, body = _request(restored["api_url"], "GET", f"/jobs/{JOB_ID}/results", restored["api_key"])
    assert status == 200
    rows = body.decode().splitlines()
    assert rows[0] == "row,url,code,short_url,error"
    assert [row.split(",")[2] for row in rows[1:]] == JOB_CODES


def test_the_keys_made_before_are_still_accepted(restored: dict[str, Any]) -> None:
    admin_key = (FIXTURE / "admin-api-key").read_text().strip()
    assert restored["api_key"] == admin_key
    status, _, body = _request(
        restored["api_url"], "POST", "/", MEMBER_KEY, {"url": "https://example.com/after-the-move"}
    )
    assert status == 201, body
    status, _, _ = _request(
        restored["api_url"], "POST", "/", "shk_000000000000_not-a-key", {"url": "https://x.org"}
    )
    assert status in (401, 403)
