"""The API function under moto, driven with API Gateway proxy events."""

import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest

from shortener.aws import DynamoDBTable
from shortener.links.codes import code_generator
from shortener.settings import api_settings
from tests.support.api import call, get_code, post_json, response_header
from tests.support.bulk import cancel_for_throttling
from tests.support.events import api_event

pytestmark = pytest.mark.integration


def test_post_creates_a_link_that_redirects(api: ModuleType) -> None:
    # Given a new URL
    # When it is shortened
    created = post_json(api, {"url": "HTTPS://Example.COM:443/a/../b"})
    # Then the answer is 201 with the normalised URL and a short URL on the request's host
    assert created["statusCode"] == 201
    body = json.loads(created["body"])
    assert body["url"] == "https://example.com/b"
    assert body["short_url"] == f"https://sho.rt/{body['code']}"
    # And following the code redirects there with the configured cache header
    followed = call(
        api, api_event("GET", f"/{body['code']}", resource="/{code}", path_parameters={"code": body["code"]})
    )
    assert followed["statusCode"] == 301
    assert response_header(followed, "Location") == "https://example.com/b"
    assert response_header(followed, "Cache-Control") == "private, max-age=90"


def test_same_url_gets_same_code_back_with_200(api: ModuleType) -> None:
    first = post_json(api, {"url": "https://example.com/x"})
    second = post_json(api, {"url": "https://example.com/x"})
    assert (first["statusCode"], second["statusCode"]) == (201, 200)
    assert json.loads(first["body"])["code"] == json.loads(second["body"])["code"]


def test_custom_code_taken_by_another_url_is_409(api: ModuleType) -> None:
    assert post_json(api, {"url": "https://a.example/", "code": "promo"})["statusCode"] == 201
    again = post_json(api, {"url": "https://a.example/", "code": "promo"})
    taken = post_json(api, {"url": "https://b.example/", "code": "promo"})
    assert again["statusCode"] == 200
    assert taken["statusCode"] == 409
    assert json.loads(taken["body"])["error"] == "code_taken"


@pytest.mark.parametrize(
    ("payload", "status", "error"),
    [
        ({"url": "not a url"}, 400, "invalid_url"),
        ({"url": "javascript:alert(1)"}, 400, "invalid_url"),
        ({"url": "https://sho.rt/abcd"}, 400, "invalid_url"),
        ({"url": "https://example.com/", "code": "bulk"}, 400, "invalid_code"),
        ({"url": "https://example.com/", "code": "a b"}, 400, "invalid_code"),
        ({"code": "abcd"}, 422, "invalid_request"),
    ],
)
def test_bad_input_is_a_clear_4xx(api: ModuleType, payload: dict[str, Any], status: int, error: str) -> None:
    answer = post_json(api, payload)
    assert answer["statusCode"] == status
    body = json.loads(answer["body"])
    assert body["error"] == error
    assert body["message"]


def test_form_post_is_accepted(api: ModuleType) -> None:
    answer = call(
        api,
        api_event(
            "POST",
            "/",
            body="url=https%3A%2F%2Fexample.com%2Fform",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        ),
    )
    assert answer["statusCode"] == 201
    assert json.loads(answer["body"])["url"] == "https://example.com/form"


def test_unknown_and_malformed_codes_are_404(api: ModuleType) -> None:
    for code in ("zzzz", "a.b", "x" * 80):
        answer = get_code(api, code)
        assert answer["statusCode"] == 404


def test_apple_app_site_association_is_served_as_json(api: ModuleType) -> None:
    for path in ("/apple-app-site-association", "/.well-known/apple-app-site-association"):
        answer = call(api, api_event("GET", path))
        assert answer["statusCode"] == 200
        assert response_header(answer, "Content-Type") == "application/json"
        assert json.loads(answer["body"]) == {"applinks": {"details": []}}


def test_index_page_is_html(api: ModuleType) -> None:
    answer = call(api, api_event("GET", "/"))
    assert answer["statusCode"] == 200
    assert "<form" in answer["body"]


class DynamoDBCalls:
    """Counts the requests the API's DynamoDB client sends."""

    def __init__(self) -> None:
        from shortener import aws

        self.count = 0
        aws.dynamodb().meta.events.register("before-send.dynamodb", self._count)

    def _count(self, **_: Any) -> None:
        self.count += 1


def test_a_malformed_code_is_404_without_a_database_call(api: ModuleType) -> None:
    calls = DynamoDBCalls()
    for code in ("a.b", "bulk", "x" * 65, "%00"):
        assert get_code(api, code)["statusCode"] == 404
    assert calls.count == 0


def test_a_followed_code_is_served_from_the_container_cache(api: ModuleType) -> None:
    # Given a link followed once
    code = json.loads(post_json(api, {"url": "https://example.com/cached"})["body"])["code"]
    get_code(api, code)
    calls = DynamoDBCalls()
    # When it is followed again
    again = get_code(api, code)
    # Then it redirects without reading the table
    assert again["statusCode"] == 301
    assert calls.count == 0


def test_redirect_status_and_cache_control_are_configurable(
    api: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIRECT_STATUS", "307")
    monkeypatch.setenv("REDIRECT_CACHE_CONTROL", "no-store")
    api_settings.cache_clear()
    code = json.loads(post_json(api, {"url": "https://example.com/temp"})["body"])["code"]
    answer = get_code(api, code)
    assert answer["statusCode"] == 307
    assert response_header(answer, "Cache-Control") == "no-store"


def test_browsers_get_an_html_404_page(api: ModuleType) -> None:
    answer = get_code(api, "nope", headers={"Accept": "text/html,application/xhtml+xml"})
    assert answer["statusCode"] == 404
    assert "<html" in answer["body"]


def test_the_configured_app_site_association_document_is_served(
    api: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = {
        "applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/*"}]}]}
    }
    monkeypatch.setenv("APPLE_APP_SITE_ASSOCIATION", json.dumps(document))
    api_settings.cache_clear()
    answer = call(api, api_event("GET", "/.well-known/apple-app-site-association"))
    assert json.loads(answer["body"]) == document


def hashed(url: str) -> Iterator[str]:
    """The hash codes of ``url`` under the functions' code key."""
    settings = api_settings()
    return code_generator(settings.CODE_ALPHABET, settings.CODE_KEY).hash_candidates(url)


def test_hash_strategy_gives_the_url_hash_prefix(api: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODE_STRATEGY", "hash")
    api_settings.cache_clear()
    api.links.cache_clear()
    first = post_json(api, {"url": "https://example.com/hashed"})
    again = post_json(api, {"url": "https://example.com/hashed"})
    code = json.loads(first["body"])["code"]
    assert (first["statusCode"], again["statusCode"]) == (201, 200)
    assert code == next(hashed("https://example.com/hashed"))
    assert json.loads(again["body"])["code"] == code


def test_hash_strategy_lengthens_the_code_when_the_prefix_is_taken(
    api: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the 4-character prefix of a URL's hash already taken by a custom code
    prefix = next(hashed("https://example.com/collide"))
    assert post_json(api, {"url": "https://other.example/", "code": prefix})["statusCode"] == 201
    monkeypatch.setenv("CODE_STRATEGY", "hash")
    api_settings.cache_clear()
    api.links.cache_clear()
    # When the URL is shortened
    body = json.loads(post_json(api, {"url": "https://example.com/collide"})["body"])
    # Then it gets the 5-character prefix and the custom code is untouched
    assert body["code"] == prefix + "".join(list(hashed("https://example.com/collide"))[1][4:])
    assert response_header(get_code(api, prefix), "Location") == "https://other.example/"


def test_without_find_if_exists_each_request_gets_a_new_code(
    api: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIND_IF_EXISTS", "false")
    api_settings.cache_clear()
    api.links.cache_clear()
    codes = {
        json.loads(post_json(api, {"url": "https://example.com/again"})["body"])["code"] for _ in range(3)
    }
    assert len(codes) == 3


@pytest.mark.parametrize(
    ("body", "content_type", "status", "error", "says"),
    [
        ("{not json", "application/json", 400, "invalid_request", "not valid JSON"),
        ("[1, 2]", "application/json", 400, "invalid_request", "JSON object"),
        ("url=x", "text/plain", 415, "unsupported_media_type", "application/json"),
        ('{"url": 42}', "application/json", 422, "invalid_request", "url"),
        # What `curl -d '{...}'` sends: JSON labelled as a form post
        (
            '{"url": "https://example.com/"}',
            "application/x-www-form-urlencoded",
            415,
            "unsupported_media_type",
            "Content-Type: application/json",
        ),
        ("[" * 200_000 + "]" * 200_000, "application/json", 400, "invalid_request", "nested too deeply"),
        # Bodies the standard library refuses, each a 400 (a 5,000-digit integer was a 502).
        (
            '{"url": "https://example.com/", "n": ' + "9" * 5_000 + "}",
            "application/json",
            400,
            "invalid_request",
            "4,300 digits",
        ),
        ('{"url": "https://example.com/", "n": NaN}', "application/json", 400, "invalid_request", "NaN"),
        (
            '{"url": "https://example.com/", "n": -Infinity}',
            "application/json",
            400,
            "invalid_request",
            "JSON number",
        ),
        (
            '{"url": "https://example.com/", "n": 1e999}',
            "application/json",
            400,
            "invalid_request",
            "too large",
        ),
        ('{"url": "https://example.com/\\ud800"}', "application/json", 400, "invalid_request", "surrogate"),
        (
            '{"\\udfff": 1, "url": "https://example.com/"}',
            "application/json",
            400,
            "invalid_request",
            "surrogate",
        ),
        ('{"url": "https://example.com/\udc80"}', "application/json", 400, "invalid_request", "not UTF-8"),
        # User info before the host disguises where a link goes
        (
            '{"url": "https://user:pw@sho.rt@evil.example/"}',
            "application/json",
            400,
            "invalid_url",
            "user name or password",
        ),
        (
            '{"url": "example.com/x"}',
            "application/json",
            400,
            "invalid_url",
            "Did you mean https://example.com/x?",
        ),
    ],
)
def test_unreadable_or_mistaken_bodies_are_a_4xx_that_says_why(
    api: ModuleType, body: str, content_type: str, status: int, error: str, says: str
) -> None:
    answer = call(api, api_event("POST", "/", body=body, headers={"Content-Type": content_type}))
    assert answer["statusCode"] == status
    problem = json.loads(answer["body"])
    assert problem["error"] == error
    assert says in problem["message"]


def test_bad_input_writes_nothing(api: ModuleType, tables: dict[str, str]) -> None:
    # Given an empty links table
    # When every kind of bad request is sent
    for payload in ({"url": "not a url"}, {"url": "https://example.com/", "code": "bulk"}, {"code": "abcd"}):
        assert 400 <= post_json(api, payload)["statusCode"] < 500
    for body, content_type in (("{not json", "application/json"), ("url=x", "text/plain")):
        assert (
            400
            <= call(api, api_event("POST", "/", body=body, headers={"Content-Type": content_type}))[
                "statusCode"
            ]
            < 500
        )
    # Then nothing at all was written: no link, no claim, not even the id counter
    assert boto3.client("dynamodb").scan(TableName=tables["LINKS_TABLE"])["Count"] == 0


@pytest.fixture
def no_pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The stores' retry pauses, recorded instead of slept."""
    pauses: list[float] = []
    monkeypatch.setattr(DynamoDBTable, "sleep", staticmethod(pauses.append))
    return pauses


def test_a_transaction_throttled_beyond_the_retries_is_a_503_that_says_so(
    api: ModuleType, no_pauses: list[float]
) -> None:
    # Given DynamoDB throttling every transaction that writes a new link with its find-if-exists claim
    from shortener import aws

    injected = cancel_for_throttling(aws.dynamodb(), times=1000, items=2)
    # When a URL is shortened
    answer = post_json(api, {"url": "https://example.com/throttled"})
    # Then the answer is a 503 with a clear message, after a bounded number of tries with pauses
    assert answer["statusCode"] == 503
    body = json.loads(answer["body"])
    assert body["error"] == "throttled"
    assert "try again" in body["message"]
    assert injected() == 8
    assert len(no_pauses) == 7


def test_a_transaction_throttled_a_few_times_still_creates_the_link(
    api: ModuleType, no_pauses: list[float]
) -> None:
    # Given DynamoDB throttling the next two transactions
    from shortener import aws

    injected = cancel_for_throttling(aws.dynamodb(), times=2, items=2)
    # When a URL is shortened
    answer = post_json(api, {"url": "https://example.com/throttled-briefly"})
    # Then it is created, once the throttling passed
    assert answer["statusCode"] == 201
    assert injected() == 2
    code = json.loads(answer["body"])["code"]
    assert get_code(api, code)["statusCode"] == 301


def test_head_answers_like_get_without_a_body(api: ModuleType) -> None:
    code = json.loads(post_json(api, {"url": "https://example.com/head"})["body"])["code"]
    found = get_code(api, code)
    head = call(api, api_event("HEAD", f"/{code}", resource="/{code}", path_parameters={"code": code}))
    assert head["statusCode"] == found["statusCode"] == 301
    assert response_header(head, "Location") == "https://example.com/head"
    assert head["body"] == ""
    missing = call(api, api_event("HEAD", "/nope", resource="/{code}", path_parameters={"code": "nope"}))
    assert (missing["statusCode"], missing["body"]) == (404, "")


def test_the_apis_own_execute_api_host_is_refused_whatever_host_the_request_used(api: ModuleType) -> None:
    # Given a request that came in on the custom domain of API 'a1b2c3' in us-east-1
    event = api_event(
        "POST",
        "/",
        body=json.dumps({"url": "https://A1B2C3.execute-api.us-east-1.amazonaws.com./prod/abcd"}),
        headers={"Content-Type": "application/json"},
    )
    event["requestContext"]["apiId"] = "a1b2c3"
    # Then a link to the API's own execute-api host is refused
    answer = call(api, event)
    assert answer["statusCode"] == 400
    assert json.loads(answer["body"])["error"] == "invalid_url"


def test_short_urls_are_http_or_https_whatever_the_forwarded_scheme(api: ModuleType) -> None:
    answer = call(
        api,
        api_event(
            "POST",
            "/",
            body=json.dumps({"url": "https://example.com/scheme"}),
            headers={"Content-Type": "application/json", "X-Forwarded-Proto": "javascript"},
        ),
    )
    assert json.loads(answer["body"])["short_url"].startswith("https://sho.rt/")
