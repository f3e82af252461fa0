"""URL validation and normalisation policy."""

import pytest

from shortener.logic.urls import UrlPolicy, normalise_url
from shortener.models.exceptions import InvalidUrlError

WEB = UrlPolicy(allowed_schemes=frozenset({"http", "https"}), max_length=100, own_hosts=frozenset({"sho.rt"}))


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("  https://Example.COM  ", "https://example.com/"),
        ("http://example.com:80/a/./b/../c", "http://example.com/a/c"),
        ("https://bücher.example/ä?q=ü", "https://xn--bcher-kva.example/%C3%A4?q=%C3%BC"),
        ("HTTPS://example.com/#frag", "https://example.com/#frag"),
    ],
)
def test_urls_are_normalised_per_whatwg(raw: str, normalised: str) -> None:
    assert normalise_url(raw, WEB) == normalised


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty"),
        ("example.com", "Not a valid absolute URL"),
        ("ftp://example.com/file", "scheme 'ftp' is not allowed"),
        ("javascript:alert(1)", "scheme 'javascript' is not allowed"),
        ("https://sho.rt/abcd", "this shortener itself"),
        ("https://SHO.RT/abcd", "this shortener itself"),
        ("https://example.com/" + "a" * 100, "longer than 100"),
        ("http://[::1", "Not a valid absolute URL"),
    ],
)
def test_bad_urls_are_refused_saying_why(raw: str, reason: str) -> None:
    with pytest.raises(InvalidUrlError, match=reason):
        normalise_url(raw, WEB)


def test_app_schemes_can_be_allowed_by_configuration() -> None:
    apps = UrlPolicy(allowed_schemes=frozenset({"https", "myapp"}), max_length=100)
    assert normalise_url("myapp://product/42", apps) == "myapp://product/42"
    with pytest.raises(InvalidUrlError):
        normalise_url("myapp://product/42", WEB)


def test_the_request_host_is_refused_too() -> None:
    policy = WEB.with_own_host("abc123.execute-api.us-east-1.amazonaws.com")
    with pytest.raises(InvalidUrlError):
        normalise_url("https://abc123.execute-api.us-east-1.amazonaws.com/prod/x", policy)
