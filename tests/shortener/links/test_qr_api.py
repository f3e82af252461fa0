"""GET /links/{code}/qr through the API handler under moto: the owner's link's QR code as PNG or
SVG, decoded with a QR reader; other owners' links and bad parameters refused. POST /links/qr: a
ZIP of a list of links' QR codes, one a code, all or nothing."""

import base64
import io
import json
import zipfile
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import zxingcpp
from PIL import Image

from shortener import clock
from shortener.jobs.model import Job, ResultsFile
from tests.support.api import ApiCaller, response_header

pytestmark = pytest.mark.integration


def qr(caller: ApiCaller, code: str, **query: str) -> dict[str, Any]:
    return caller.request(
        "GET",
        f"/links/{code}/qr",
        resource="/links/{code}/qr",
        path_parameters={"code": code},
        query=query or None,
    )


@pytest.fixture
def alice(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "alice")


def test_the_png_decodes_to_the_links_short_url(alice: ApiCaller) -> None:
    created = alice.shorten("https://example.com/flyer")
    answer = qr(alice, created["code"], size="300")
    assert answer["statusCode"] == 200
    assert response_header(answer, "Content-Type") == "image/png"
    assert answer["isBase64Encoded"] is True
    image = Image.open(io.BytesIO(base64.b64decode(answer["body"])))
    assert image.width <= 300
    assert [result.text for result in zxingcpp.read_barcodes(image)] == [created["short_url"]]
    assert f'filename="{created["code"]}.png"' in str(response_header(answer, "Content-Disposition"))


def test_the_svg_is_text_naming_the_short_url(alice: ApiCaller) -> None:
    created = alice.shorten("https://example.com/svg")
    answer = qr(alice, created["code"], format="svg")
    assert answer["statusCode"] == 200
    assert response_header(answer, "Content-Type") == "image/svg+xml"
    assert answer["isBase64Encoded"] is False
    assert answer["body"].startswith("<svg") and created["short_url"] in answer["body"]


def test_another_owners_link_has_no_qr_code_and_bad_parameters_are_422(
    alice: ApiCaller, api: ModuleType
) -> None:
    code = alice.shorten("https://example.com/private")["code"]
    assert qr(ApiCaller(api, "bob"), code)["statusCode"] == 404
    assert qr(alice, "nosuchcode")["statusCode"] == 404
    for query in ({"format": "gif"}, {"size": "9"}, {"size": "huge"}):
        answer = qr(alice, code, **query)
        assert answer["statusCode"] == 422
        assert json.loads(answer["body"])["error"] == "invalid_request"


def links_qr(caller: ApiCaller, body: Any) -> dict[str, Any]:
    return caller.request("POST", "/links/qr", resource="/links/qr", body=body)


def test_a_zip_holds_one_qr_code_a_selected_code_drawn_as_for_one_link(alice: ApiCaller) -> None:
    created = [alice.shorten(f"https://example.com/zip/{n}") for n in range(3)]
    codes = [link["code"] for link in created]
    # A code listed twice is drawn once.
    answer = links_qr(alice, {"codes": [*codes, codes[0]]})
    assert answer["statusCode"] == 200
    assert response_header(answer, "Content-Type") == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(base64.b64decode(answer["body"])))
    assert archive.namelist() == [f"{code}.png" for code in codes]
    for link in created:
        single = base64.b64decode(qr(alice, link["code"])["body"])
        assert archive.read(f"{link['code']}.png") == single
        image = Image.open(io.BytesIO(single))
        assert [result.text for result in zxingcpp.read_barcodes(image)] == [link["short_url"]]
    svg = links_qr(alice, {"codes": codes[:1], "format": "svg"})
    names = zipfile.ZipFile(io.BytesIO(base64.b64decode(svg["body"]))).namelist()
    assert svg["statusCode"] == 200 and names == [f"{codes[0]}.svg"]


def test_a_zip_is_refused_whole_for_a_code_not_the_callers_and_bounded(
    alice: ApiCaller, api: ModuleType
) -> None:
    from shortener.links.qr_model import MAX_QR_ZIP_CODES

    mine = alice.shorten("https://example.com/zip-mine")["code"]
    theirs = ApiCaller(api, "bob").shorten("https://example.com/zip-theirs")["code"]
    refused = links_qr(alice, {"codes": [mine, theirs]})
    assert refused["statusCode"] == 404 and theirs in json.loads(refused["body"])["message"]
    for body in (
        {"codes": []},
        {"codes": [mine] * (MAX_QR_ZIP_CODES + 1)},
        {"codes": [mine], "format": "gif"},
        {"codes": [mine], "size": 64},
    ):
        assert links_qr(alice, body)["statusCode"] == 422, body


def job_qr(api: ModuleType, job_id: str) -> dict[str, Any]:
    return ApiCaller(api, "alice").request(
        "GET", f"/jobs/{job_id}/qr", resource="/jobs/{job_id}/qr", path_parameters={"job_id": job_id}
    )


def test_a_jobs_labels_wait_for_the_job_and_any_size_of_done_job_is_built(
    api: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    import qr  # the API function's module, by the name Lambda imports it (pytest's pythonpath)

    from shortener.jobs.service import JobQueries

    # Given a running job and a done one of two million rows, alice's (as the jobs table gives them)
    running = Job(
        job_id="a" * 32, total=10, chunks=1, succeeded=4, created_at=clock.now(), owner="alice", bucket="b"
    )
    written = ResultsFile(key="results/x.csv", size=1, rows=10, written_at=clock.now())
    done = running.model_copy(
        update={"job_id": "b" * 32, "total": 2_000_000, "succeeded": 2_000_000, "results": written}
    )
    known = {job.job_id: job for job in (running, done)}
    asked: list[Any] = []
    queries = JobQueries(
        SimpleNamespace(get_job=known.get),  # type: ignore[arg-type]
        SimpleNamespace(modified_at=lambda bucket, key: None),  # type: ignore[arg-type]
        SimpleNamespace(request_labels=asked.append),  # type: ignore[arg-type]
    )
    monkeypatch.setattr(qr, "job_queries", lambda: queries)
    # A job still running: 409, ask again later
    waiting = job_qr(api, running.job_id)
    assert (waiting["statusCode"], json.loads(waiting["body"])["error"]) == (409, "job_not_done")
    assert response_header(waiting, "Retry-After")
    # A done job of two million rows: no size limit, its build is asked for, 202 meanwhile
    building = job_qr(api, done.job_id)
    assert building["statusCode"] == 202, building["body"]
    assert response_header(building, "Retry-After")
    assert [(request.job_id, request.format) for request in asked] == [(done.job_id, "png")]
    # Another owner's job does not exist for them
    other = ApiCaller(api, "bob").request(
        "GET",
        f"/jobs/{done.job_id}/qr",
        resource="/jobs/{job_id}/qr",
        path_parameters={"job_id": done.job_id},
    )
    assert other["statusCode"] == 404
