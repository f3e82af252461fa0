"""What the blocklist takes as a host: names and IP addresses in their canonical form, nothing
that is no URL's host."""

import pytest

from shortener.access.blocklist import host_to_block
from shortener.exceptions import InvalidRequestError


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("Evil.Example.", "evil.example"),
        ("kürz.example", "xn--krz-hoa.example"),
        ("a-b.example", "a-b.example"),
        ("_dmarc.example", "_dmarc.example"),
        ("localhost", "localhost"),
        ("192.0.2.1", "192.0.2.1"),
        ("[2001:db8::1]", "[2001:db8::1]"),
    ],
)
def test_a_host_is_stored_in_canonical_form(text: str, stored: str) -> None:
    assert host_to_block(text) == stored


@pytest.mark.parametrize(
    "text", ["*", "-", "a..b", ".", "-evil.example", "evil-.example", "*.evil.example", "a b", "", "x" * 64]
)
def test_what_is_no_urls_host_is_refused(text: str) -> None:
    with pytest.raises(InvalidRequestError, match="is not a host name"):
        host_to_block(text)
