"""The HTTP edge: bodies and the public base URL."""

import pytest

from shortener.access.model import Caller
from shortener.exceptions import InvalidFieldsError, InvalidRequestError, UnsupportedMediaTypeError
from shortener.http.web import (
    body_bytes,
    caller_from_event,
    parse_fields,
    parse_request,
    public_base_url,
    request_host,
)
from shortener.links.model import ShortenRequest


@pytest.mark.parametrize(
    ("configured", "headers", "stage", "expected"),
    [
        ("https://sho.rt", {"Host": "abc.execute-api.eu-west-1.amazonaws.com"}, "prod", "https://sho.rt/"),
        (
            "",
            {"Host": "abc.execute-api.eu-west-1.amazonaws.com"},
            "prod",
            "https://abc.execute-api.eu-west-1.amazonaws.com/prod/",
        ),
        ("", {"host": "sho.rt"}, "prod", "https://sho.rt/"),
        ("", {"Host": "127.0.0.1:3000", "X-Forwarded-Proto": "http"}, "local", "http://127.0.0.1:3000/"),
        # Only http or https, whatever the forwarded scheme says; a garbled Host is not used
        ("", {"Host": "sho.rt", "X-Forwarded-Proto": "javascript"}, "prod", "https://sho.rt/"),
        ("", {"Host": "sho.rt", "X-Forwarded-Proto": "HTTP"}, "prod", "http://sho.rt/"),
        ("", {"Host": "evil.example/x?", "X-Forwarded-Proto": "https"}, "prod", "https://localhost/"),
    ],
)
def test_short_urls_start_with_the_public_base(
    configured: str, headers: dict[str, str], stage: str, expected: str
) -> None:
    assert public_base_url(configured, headers, stage) == expected


def test_the_request_host_drops_the_port() -> None:
    assert request_host({"Host": "Sho.RT:443"}) == "sho.rt"
    assert request_host({}) is None


def test_json_and_form_bodies_give_the_same_fields() -> None:
    assert parse_fields(b'{"url": "https://a.example/"}', "application/json; charset=utf-8") == {
        "url": "https://a.example/"
    }
    assert parse_fields(b"url=https%3A%2F%2Fa.example%2F&code=", "application/x-www-form-urlencoded") == {
        "url": "https://a.example/"
    }


@pytest.mark.parametrize(
    ("raw", "content_type", "error"),
    [
        (b"\xff\xfe", "application/json", InvalidRequestError),
        (b"{", "application/json", InvalidRequestError),
        (b"null", "application/json", InvalidRequestError),
        (b"<xml/>", "application/xml", UnsupportedMediaTypeError),
    ],
)
def test_unreadable_bodies_say_what_is_wrong(raw: bytes, content_type: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_fields(raw, content_type)


def test_json_sent_as_a_form_post_says_so() -> None:
    # Given what `curl -d '{"url": ...}'` sends: JSON labelled as a form post
    with pytest.raises(UnsupportedMediaTypeError, match=r"Content-Type: application/json"):
        parse_fields(b'{"url": "https://a.example/"}', "application/x-www-form-urlencoded")


def test_json_nested_too_deeply_is_a_clear_error() -> None:
    with pytest.raises(InvalidRequestError, match="nested too deeply"):
        parse_fields(b"[" * 200_000 + b"]" * 200_000, "application/json")


def test_a_base64_body_is_decoded_and_a_broken_one_refused() -> None:
    assert body_bytes("aGk=", is_base64_encoded=True) == b"hi"
    with pytest.raises(InvalidRequestError):
        body_bytes("not base64!", is_base64_encoded=True)


def test_a_missing_field_is_named() -> None:
    with pytest.raises(InvalidFieldsError, match="url"):
        parse_request(ShortenRequest, {"code": "abc"})


def test_the_caller_is_read_from_the_authorizer_context() -> None:
    # Given a proxy event as API Gateway passes it after the Lambda authorizer allowed the key
    event = {
        "requestContext": {
            "authorizer": {
                "principalId": "k1",
                "integrationLatency": 12,
                "owner_id": "team-a",
                "role": "admin",
                "key_id": "k1",
                "key_name": "ci",
            }
        }
    }
    # When the caller is read, Then it is the key's owner, with the key's role
    caller = caller_from_event(event)
    assert caller == Caller(owner_id="team-a", role="admin", key_id="k1", key_name="ci")
    assert caller.is_admin


@pytest.mark.parametrize(
    "event",
    [
        {},
        {"requestContext": {}},
        {"requestContext": {"authorizer": None}},
        {"requestContext": {"authorizer": {"owner_id": "x", "role": "root"}}},
        {"requestContext": {"authorizer": {"role": "admin"}}},
    ],
)
def test_without_a_valid_authorizer_context_the_caller_is_anonymous(event: dict) -> None:
    caller = caller_from_event(event)
    assert caller == Caller(owner_id="anonymous", role="anonymous")
    assert not caller.is_admin
