"""URL validation and normalisation policy."""

import pytest

from shortener.exceptions import InvalidUrlError
from shortener.links.urls import UrlPolicy, normalise_url

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


@pytest.mark.parametrize(
    "raw",
    [
        "javascript:alert(document.cookie)",
        "JavaScript:alert(1)",
        "data:text/html,<b>x</b>",
        "file:///etc/passwd",
    ],
)
def test_dangerous_schemes_are_refused_even_when_an_operator_lists_them(raw: str) -> None:
    # Given an operator who listed them in AllowedSchemes
    reckless = UrlPolicy(frozenset({"https", "javascript", "data", "file"}), max_length=100)
    # Then they are not in the policy, and a URL with one is refused with a clear reason
    assert reckless.allowed_schemes == frozenset({"https"})
    with pytest.raises(InvalidUrlError, match="is not allowed, ever"):
        normalise_url(raw, reckless)
    assert normalise_url("https://example.com/", reckless) == "https://example.com/"


def test_app_schemes_can_be_allowed_by_configuration() -> None:
    apps = UrlPolicy(allowed_schemes=frozenset({"https", "myapp"}), max_length=100)
    assert normalise_url("myapp://product/42", apps) == "myapp://product/42"
    with pytest.raises(InvalidUrlError):
        normalise_url("myapp://product/42", WEB)


@pytest.mark.parametrize(
    ("raw", "suggestion"),
    [
        ("example.com/x", "Did you mean https://example.com/x?"),
        ("www.example.com", "Did you mean https://www.example.com?"),
        ("example.com:8080/x", "Did you mean https://example.com:8080/x?"),
    ],
)
def test_a_url_without_a_scheme_gets_a_suggestion(raw: str, suggestion: str) -> None:
    with pytest.raises(InvalidUrlError, match=suggestion.replace(".", r"\.").replace("?", r"\?")):
        normalise_url(raw, WEB)


@pytest.mark.parametrize("raw", ["not a url", "mailto:someone@example.com", "javascript:alert(1)"])
def test_no_suggestion_when_the_text_is_not_a_host(raw: str) -> None:
    with pytest.raises(InvalidUrlError) as refused:
        normalise_url(raw, WEB)
    assert "Did you mean" not in refused.value.message


@pytest.mark.parametrize(
    "raw",
    [
        "https://sho.rt./abcd",
        "https://ShO.rT/abcd",
        "https://user@sho.rt:443/abcd",
        "https://sh%6F.rt/abcd",
        "https://\uff53\uff48\uff4f\uff0e\uff52\uff54/abcd",  # full-width letters and dot
        "http://sho.rt:8080/abcd",
    ],
)
def test_the_own_host_is_refused_in_every_spelling(raw: str) -> None:
    with pytest.raises(InvalidUrlError, match="this shortener itself"):
        normalise_url(raw, WEB)


def test_an_idn_own_host_is_refused_in_unicode_and_punycode() -> None:
    policy = UrlPolicy(frozenset({"https"}), 100, own_hosts=frozenset({"Kürz.Example."}))
    for raw in ("https://kürz.example/x", "https://xn--krz-hoa.example/x", "https://KÜRZ.example./x"):
        with pytest.raises(InvalidUrlError, match="this shortener itself"):
            normalise_url(raw, policy)


def test_the_request_host_is_refused_too() -> None:
    policy = WEB.with_own_host("abc123.execute-api.us-east-1.amazonaws.com")
    with pytest.raises(InvalidUrlError):
        normalise_url("https://abc123.execute-api.us-east-1.amazonaws.com/prod/x", policy)


def test_the_custom_domain_and_the_public_base_are_own_hosts() -> None:
    from shortener.settings import ApiSettings

    settings = ApiSettings(LINKS_TABLE="t", DOMAIN_NAME="Sho.RT.", PUBLIC_BASE_URL="https://kürz.example/")
    policy = settings.url_policy()
    for raw in ("https://sho.rt/abcd", "https://xn--krz-hoa.example/abcd"):
        with pytest.raises(InvalidUrlError, match="this shortener itself"):
            normalise_url(raw, policy)


@pytest.mark.parametrize(
    "raw",
    [
        "https://user:pw@sho.rt@evil.example/",  # reads as sho.rt, goes to evil.example
        "https://paypal.com@evil.example/login",
        "https://user@example.com/",
        "https://:secret@example.com/",
        "ftp://anonymous:guest@example.com/file",
    ],
)
def test_urls_with_user_info_are_refused_saying_why(raw: str) -> None:
    with pytest.raises(InvalidUrlError, match="user name or password"):
        normalise_url(raw, UrlPolicy(frozenset({"http", "https", "ftp"}), 100))


def test_an_at_sign_in_the_path_or_query_is_no_user_info() -> None:
    assert normalise_url("https://example.com/@team?by=a@b", WEB) == "https://example.com/@team?by=a@b"


LOCAL = UrlPolicy(frozenset({"http", "https"}), 100).with_own_host("127.0.0.1")


@pytest.mark.parametrize(
    "raw",
    [
        "http://127.0.0.1:3000/x",
        "http://localhost:3000/x",
        "http://LOCALHOST./x",
        "http://api.localhost:3000/x",
        "http://[::1]:3000/x",
        "http://[::ffff:7f00:1]:3000/x",
        "http://[::ffff:127.0.0.1]/x",
        "http://127.1:3000/x",
        "http://0x7f000001/x",
    ],
)
def test_a_loopback_shortener_is_refused_in_every_loopback_spelling(raw: str) -> None:
    with pytest.raises(InvalidUrlError, match="this shortener itself"):
        normalise_url(raw, LOCAL)


@pytest.mark.parametrize("raw", ["http://localhost:3000/x", "http://[::1]/x", "http://127.0.0.2/x"])
def test_loopback_urls_are_not_refused_when_the_shortener_is_not_on_loopback(raw: str) -> None:
    assert normalise_url(raw, WEB)


@pytest.mark.parametrize("raw", ["http://localhost:3000/x", "http://[::1]:3000/x", "http://127.0.0.2:3000/x"])
def test_a_loopback_shortener_with_a_port_is_refused_at_that_port(raw: str) -> None:
    with pytest.raises(InvalidUrlError, match="this shortener itself"):
        normalise_url(raw, UrlPolicy(frozenset({"http"}), 100).with_own_host("127.0.0.1:3000"))


@pytest.mark.parametrize("raw", ["http://localhost:4000/x", "http://127.0.0.1/x", "http://[::1]:8080/x"])
def test_other_local_services_are_not_the_loopback_shortener(raw: str) -> None:
    assert normalise_url(raw, UrlPolicy(frozenset({"http"}), 100).with_own_host("127.0.0.1:3000"))


def test_a_loopback_shortener_still_takes_other_hosts() -> None:
    assert normalise_url("http://[::2]/x", LOCAL) == "http://[::2]/x"
    assert normalise_url("https://example.com/", LOCAL) == "https://example.com/"


# Every spelling of the unspecified address (a connection to it reaches this machine) or of
# loopback, as the WHATWG parser reads IPv4 in decimal, octal, hex and shortened forms.
_THIS_MACHINE = [
    "http://0.0.0.0:3000/x",
    "http://0:3000/x",
    "http://0x0:3000/x",
    "http://00:3000/x",
    "http://0.0:3000/x",
    "http://[::]:3000/x",
    "http://[0:0:0:0:0:0:0:0]:3000/x",
    "http://[::ffff:0.0.0.0]:3000/x",
    "http://[::ffff:0:0]:3000/x",
    "http://0x7f.1:3000/x",
    "http://2130706433:3000/x",
    "http://017700000001:3000/x",
    "http://0177.0.0.1:3000/x",
    "http://127.0.0.1.:3000/x",
    "http://%30:3000/x",
    "http://[::ffff:127.0.0.1]:3000/x",
]


@pytest.mark.parametrize("raw", _THIS_MACHINE)
def test_every_spelling_of_this_machine_at_the_stacks_port_is_refused(raw: str) -> None:
    with pytest.raises(InvalidUrlError, match="this shortener itself"):
        normalise_url(raw, UrlPolicy(frozenset({"http"}), 100).with_own_host("127.0.0.1:3000"))


@pytest.mark.parametrize("raw", ["http://0.0.0.0:4000/x", "http://[::]:8080/x", "http://0:5000/x"])
def test_this_machine_at_another_port_is_another_service(raw: str) -> None:
    assert normalise_url(raw, UrlPolicy(frozenset({"http"}), 100).with_own_host("127.0.0.1:3000"))


@pytest.mark.parametrize("raw", ["http://0.0.0.0/x", "http://[::]/x"])
def test_the_unspecified_address_is_not_refused_off_loopback(raw: str) -> None:
    assert normalise_url(raw, WEB)
