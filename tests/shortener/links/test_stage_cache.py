"""A takedown refreshes the prod stage cache's entry of the code: a GET of the code with
Cache-Control: max-age=0, SigV4-signed for execute-api, as API Gateway requires to invalidate one
entry. Here the stage's endpoint is a recording server on loopback."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType
from typing import Any

import pytest

from shortener.settings import api_settings
from tests.support.api import ApiCaller

pytestmark = pytest.mark.integration


class RecordingStage(BaseHTTPRequestHandler):
    """Records each request; answers 410, as the stage does for a code just taken down."""

    requests: list[tuple[str, str, dict[str, str]]] = []
    status = 410

    def do_GET(self) -> None:
        RecordingStage.requests.append((self.command, self.path, dict(self.headers.items())))
        self.send_response(RecordingStage.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stage(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    RecordingStage.requests = []
    RecordingStage.status = 410
    server = ThreadingHTTPServer(("127.0.0.1", 0), RecordingStage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/prod/"
    monkeypatch.setenv("API_CACHE_ENABLED", "true")
    monkeypatch.setenv("AWS_ENDPOINT_URL_EXECUTE_API", url)
    api_settings.cache_clear()
    yield url
    server.shutdown()
    server.server_close()


def test_a_deleted_link_is_refreshed_in_the_stage_cache_with_a_signed_request(
    api: ModuleType, stage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a link
    alice = ApiCaller(api, "alice")
    code = alice.shorten("https://example.com/cached")["code"]
    # When it is deleted
    assert alice.link("DELETE", code)["statusCode"] == 200
    # Then the stage got one GET of the code asking for a fresh answer, signed for execute-api
    assert len(RecordingStage.requests) == 1
    method, path, headers = RecordingStage.requests[0]
    assert (method, path) == ("GET", f"/prod/{code}")
    assert headers["Cache-Control"] == "max-age=0"
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
    assert "/us-east-1/execute-api/aws4_request" in headers["Authorization"]
    assert "StageCacheInvalidationFailed" not in capsys.readouterr().out


def test_a_change_of_title_does_not_touch_the_stage_cache(api: ModuleType, stage: str) -> None:
    alice = ApiCaller(api, "alice")
    code = alice.shorten("https://example.com/titled")["code"]
    alice.link("PATCH", code, {"title": "Only a title"})
    assert RecordingStage.requests == []


def test_a_refresh_that_still_answers_the_old_redirect_is_reported(
    api: ModuleType, stage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a stage that ignores the request (it answers the cached redirect, as for an
    # unauthorised caller)
    RecordingStage.status = 301
    alice = ApiCaller(api, "alice")
    code = alice.shorten("https://example.com/stubborn")["code"]
    # When the link is disabled
    answer = alice.link("PATCH", code, {"status": "disabled"})
    # Then the change stands, and the failure is counted for an alarm
    assert answer["statusCode"] == 200
    assert json.loads(answer["body"])["status"] == "disabled"
    assert "StageCacheInvalidationFailed" in capsys.readouterr().out


def test_a_new_custom_code_is_refreshed_in_the_stage_cache(api: ModuleType, stage: str) -> None:
    # A code followed before it existed would otherwise stay a cached 404 for the TTL.
    RecordingStage.status = 301
    ApiCaller(api, "alice").shorten("https://example.com/new", code="spring-sale")
    assert [(method, path) for method, path, _ in RecordingStage.requests] == [("GET", "/prod/spring-sale")]
    # Generated codes are new by construction: nothing to refresh
    ApiCaller(api, "alice").shorten("https://example.com/generated")
    assert len(RecordingStage.requests) == 1


def test_a_link_that_answers_each_visitor_is_refused_where_the_stage_caches_by_path(
    api: ModuleType, stage: str
) -> None:
    alice = ApiCaller(api, "alice")
    # A device rule on POST /: 422 naming it, nothing written
    refused = alice.request(
        "POST", "/", body={"url": "https://example.com/", "ios_url": "https://apps.apple.com/x"}
    )
    assert refused["statusCode"] == 422
    assert json.loads(refused["body"])["error"] == "cached_by_path"
    assert "ios_url" in json.loads(refused["body"])["message"]
    assert json.loads(alice.list_links()["body"])["links"] == []
    # A password alone answers every visitor with the same page: made
    code = alice.shorten("https://example.com/locked", password="open sesame")["code"]
    # Adding a preview to it later: refused, the link unchanged
    patched = alice.link("PATCH", code, {"preview": {"title": "Locked"}})
    assert (patched["statusCode"], json.loads(patched["body"])["error"]) == (422, "cached_by_path")
    assert json.loads(alice.link("GET", code)["body"])["preview"] is None
    # In POST /links/bulk only the link that would vary fails
    bulk = alice.request(
        "POST",
        "/links/bulk",
        body={
            "links": [
                {"url": "https://example.com/a"},
                {"url": "https://example.com/b", "forward_query": True},
            ]
        },
    )
    outcomes = json.loads(bulk["body"])["links"]
    assert "code" in outcomes[0]
    assert outcomes[1]["error"] == "cached_by_path"
