"""Campaign links end to end on the local stack, over HTTP: a click limit that holds exactly under
concurrent followers, an expiry that takes effect at its time, limits refused when invalid; and a
job whose done status means its results can be fetched. One stack for the module."""

import csv
import io
import json
import time
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import zxingcpp
from PIL import Image

from shortener_cli.client import ShortenerClient
from shortener_cli.main import main as cli_main
from tests.e2e.conftest import RunningStack


def follow(stack: RunningStack, code: str) -> int:
    return stack.request("GET", code, api_key=None).status


def test_max_clicks_2_gives_two_redirects_then_410(stack: RunningStack) -> None:
    created = stack.post_json("", {"url": "https://example.com/twice", "max_clicks": 2})
    assert created.status == 201, created.text
    code = created.json()["code"]
    answers = [stack.request("GET", code, api_key=None) for _ in range(3)]
    assert [answer.status for answer in answers] == [301, 301, 410]
    assert answers[0].headers["Location"] == "https://example.com/twice"
    assert answers[2].json()["error"] == "expired"
    shown = stack.request("GET", f"links/{code}").json()
    assert (shown["max_clicks"], shown["clicks_left"], shown["expired"]) == (2, 0, True)


def test_sixteen_concurrent_followers_get_exactly_two_redirects(stack: RunningStack) -> None:
    code = stack.post_json("", {"url": "https://example.com/race", "max_clicks": 2}).json()["code"]
    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda _: follow(stack, code), range(16)))
    assert sorted(statuses) == [301] * 2 + [410] * 14


def test_a_link_expiring_in_seconds_redirects_then_answers_410(stack: RunningStack) -> None:
    expires_at = datetime.now(UTC) + timedelta(seconds=3)
    created = stack.post_json("", {"url": "https://example.com/flash", "expires_at": expires_at.isoformat()})
    assert created.status == 201, created.text
    code = created.json()["code"]
    followed = stack.request("GET", code, api_key=None)
    assert followed.status == 301
    directives = dict(
        part.strip().partition("=")[::2] for part in followed.headers["Cache-Control"].split(",")
    )
    max_age = int(directives["max-age"])
    # Behind the edge, the edge keeps it no longer either (docs/edge.md)
    assert int(directives.get("s-maxage", max_age)) <= 3
    assert max_age <= 3
    time.sleep(max(0.0, (expires_at - datetime.now(UTC)).total_seconds()) + 0.2)
    expired = stack.request("GET", code, api_key=None)
    assert (expired.status, expired.json()["error"]) == (410, "expired")
    page = stack.request("GET", code, headers={"Accept": "text/html"}, api_key=None)
    assert page.status == 410 and "Link expired" in page.text


def test_a_past_expires_at_or_a_zero_max_clicks_is_422_with_the_error_body(stack: RunningStack) -> None:
    past = stack.post_json("", {"url": "https://example.com/late", "expires_at": "2020-01-01T00:00:00Z"})
    zero = stack.post_json("", {"url": "https://example.com/none", "max_clicks": 0})
    for answer, field in ((past, "expires_at"), (zero, "max_clicks")):
        assert answer.status == 422
        assert answer.json()["error"] == "invalid_request"
        assert answer.json()["message"].startswith(field)


def wait_for_done(stack: RunningStack, job_id: str, seconds: float) -> dict[str, Any]:
    """Polls the job's status, and nothing else, until it says done."""
    deadline = time.monotonic() + seconds
    while True:
        answer = stack.request("GET", f"jobs/{job_id}")
        job = dict(answer.json())
        assert time.monotonic() < deadline, job
        if answer.status == 429:
            # The stack's rate rules (docs/security.md) answer a tight poll so: wait as told.
            time.sleep(float(answer.headers.get("Retry-After") or 1))
            continue
        assert answer.status == 200, job
        if job["status"] == "done":
            return job
        # Under the key's default rate (10 requests a second, template.yaml's KeyRateLimit): the
        # tests of this module share the stack and its key.
        time.sleep(0.25)


def test_a_job_waited_for_on_status_alone_has_its_results_at_once(
    stack: RunningStack, tmp_path: Path
) -> None:
    # Given a file uploaded straight to storage, and a small one in the request body
    client = ShortenerClient(stack.api_url, api_key=stack.api_key)
    source = tmp_path / "labels.csv"
    source.write_text("url\n" + "".join(f"https://shop.example/{n}\n" for n in range(300)), encoding="utf-8")
    upload = client.start_upload(source.name, source.stat().st_size)
    client.put_file(upload["upload"], source, lambda _: None)
    body = stack.request(
        "POST", "bulk", "url\nhttps://example.com/1\nnot a url\n", {"Content-Type": "text/csv"}
    ).json()
    for job_id, rows in ((upload["job_id"], 300), (body["job_id"], 2)):
        # When a script waits for status done, and for nothing else
        done = wait_for_done(stack, job_id, 60)
        # Then its results, file included, are there at the first ask
        assert done["results_ready"] is True and done["results_file_url"], done
        answer = stack.request("GET", f"jobs/{job_id}/results")
        if answer.status == 303:
            with urllib.request.urlopen(answer.headers["Location"], timeout=30) as download:
                text = download.read().decode()
        else:
            assert answer.status == 200, answer.text
            text = answer.text
        assert len(list(csv.DictReader(io.StringIO(text)))) == rows
        with urllib.request.urlopen(done["results_file_url"], timeout=30) as download:
            assert len(download.read().decode().splitlines()) == rows + 1


def test_a_links_qr_code_is_a_png_that_decodes_to_its_short_url_over_plain_http(stack: RunningStack) -> None:
    # Given a link
    created = stack.post_json("", {"url": "https://example.com/label"}).json()
    # When its QR code is fetched as curl fetches it (Accept: */*)
    answer = stack.request(
        "GET", f"links/{created['code']}/qr?size=256", headers={"Accept": "*/*", "User-Agent": "curl/8.5.0"}
    )
    # Then the body is the PNG's bytes, and a QR reader finds the short URL in it
    assert answer.status == 200 and answer.headers["Content-Type"] == "image/png"
    assert answer.body.startswith(b"\x89PNG")
    image = Image.open(io.BytesIO(answer.body))
    assert [result.text for result in zxingcpp.read_barcodes(image)] == [created["short_url"]]
    svg = stack.request("GET", f"links/{created['code']}/qr?format=svg")
    assert svg.status == 200 and svg.text.startswith("<svg") and created["short_url"] in svg.text


def test_the_cli_writes_a_links_qr_code_as_svg_or_png(stack: RunningStack, tmp_path: Path) -> None:
    created = stack.post_json("", {"url": "https://example.com/cli-label"}).json()
    endpoint = ["--api-url", stack.api_url, "--api-key", str(stack.api_key)]
    svg, png = tmp_path / "code.svg", tmp_path / "code.png"
    assert cli_main([*endpoint, "qr", created["code"], "--output", str(svg)]) == 0
    assert cli_main([*endpoint, "qr", created["code"], "--output", str(png), "--size", "200"]) == 0
    assert svg.read_text().startswith("<svg") and created["short_url"] in svg.read_text()
    assert [result.text for result in zxingcpp.read_barcodes(Image.open(png))] == [created["short_url"]]
    assert cli_main([*endpoint, "qr", created["code"], "--output", str(tmp_path / "code.gif")]) == 2


def test_a_jobs_qr_labels_are_a_zip_of_one_decodable_image_per_shortened_row(
    stack: RunningStack, tmp_path: Path
) -> None:
    # Given a done job of twelve rows, one of them not a URL
    lines = [f"https://shop.example/label/{n}" for n in range(11)] + ["not a url"]
    job_id = stack.request(
        "POST", "bulk", "url\n" + "\n".join(lines) + "\n", {"Content-Type": "text/csv"}
    ).json()["job_id"]
    wait_for_done(stack, job_id, 60)
    codes = {
        int(row["row"]): row["code"]
        for row in csv.DictReader(io.StringIO(stack.request("GET", f"jobs/{job_id}/results").text))
    }
    # When its labels are asked for: built on request (202 with Retry-After), then a 303 to the file
    first = stack.request("GET", f"jobs/{job_id}/qr")
    assert first.status == 202 and first.headers["Retry-After"], first.text
    deadline = time.monotonic() + 60
    while (answer := stack.request("GET", f"jobs/{job_id}/qr")).status == 202:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert answer.status == 303, answer.text
    with urllib.request.urlopen(answer.headers["Location"], timeout=30) as download:
        assert download.headers["Content-Type"] == "application/zip"
        archive = zipfile.ZipFile(io.BytesIO(download.read()))
    # Then it holds one image per shortened row, named by row (zero-padded) and code, each decoding
    # to that row's short URL
    assert archive.namelist() == [f"{row:02d}-{codes[row]}.png" for row in range(1, 12)]
    for row in (1, 11):
        image = Image.open(io.BytesIO(archive.read(f"{row:02d}-{codes[row]}.png")))
        assert [found.text for found in zxingcpp.read_barcodes(image)] == [stack.edge_url + codes[row]]
    # And the CLI saves the same archive
    endpoint = ["--api-url", stack.api_url, "--api-key", str(stack.api_key)]
    assert cli_main([*endpoint, "qr", "--job", job_id, "--output", str(tmp_path / "labels.zip")]) == 0
    assert zipfile.ZipFile(tmp_path / "labels.zip").namelist() == archive.namelist()


def wait_for_batch(stack: RunningStack, batch_id: str, seconds: float) -> dict[str, Any]:
    """Polls the batch's status until it is no longer running."""
    deadline = time.monotonic() + seconds
    while True:
        answer = stack.request("GET", f"links/batch/{batch_id}")
        if answer.status == 429:
            time.sleep(float(answer.headers.get("Retry-After") or 1))
            continue
        assert answer.status == 200, answer.text
        batch = dict(answer.json())
        if batch["status"] != "running":
            return batch
        assert time.monotonic() < deadline, batch
        time.sleep(0.25)


def test_a_batch_disable_by_job_id_makes_every_link_of_a_1000_row_job_answer_410(
    stack: RunningStack, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a done job of 1,000 rows
    lines = "".join(f"https://shop.example/flyer/{n}\n" for n in range(1000))
    job_id = stack.request("POST", "bulk", "url\n" + lines, {"Content-Type": "text/csv"}).json()["job_id"]
    wait_for_done(stack, job_id, 120)
    results = csv.DictReader(io.StringIO(stack.request("GET", f"jobs/{job_id}/results").text))
    codes = [row["code"] for row in results]
    assert len(codes) == 1000 and all(codes)
    # When the job's links are disabled in one batch
    started = time.monotonic()
    answer = stack.post_json("links/batch", {"action": "disable", "job_id": job_id})
    assert answer.status == 202, answer.text
    batch = wait_for_batch(stack, answer.json()["batch_id"], 180)
    disabled_in = time.monotonic() - started
    # Then the batch changed all 1,000, and every one of them answers 410
    assert (batch["status"], batch["total"], batch["changed"], batch["failed"]) == ("done", 1000, 1000, 0)
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(lambda code: follow(stack, code), codes)) == [410] * 1000
    # And enable (through the CLI, which waits for the batch) brings every one of them back
    endpoint = ["--api-url", stack.api_url, "--api-key", str(stack.api_key)]
    capsys.readouterr()
    assert cli_main([*endpoint, "--json", "batch", "enable", "--job", job_id, "--poll-interval", "0.5"]) == 0
    enabled = json.loads(capsys.readouterr().out)
    assert (enabled["status"], enabled["changed"], len(enabled["outcomes"])) == ("done", 1000, 1000)
    assert {outcome["code"] for outcome in enabled["outcomes"]} == set(codes)
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(lambda code: follow(stack, code), codes)) == [301] * 1000
    print(f"batch disable of 1,000 links: done in {disabled_in:.1f} s")
