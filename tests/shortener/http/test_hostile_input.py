"""Hostile input at the API's edge: whatever a client sends, the answer is a 2xx or a clear 4xx JSON
error, never a 5xx (a 5,000-digit integer in a JSON body was a 502)."""

import json
import string
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.api import call
from tests.support.events import api_event

pytestmark = pytest.mark.integration

# JSON's own pieces, so that the fuzzer reaches the parser's corners (numbers, escapes, nesting)
# rather than failing at the first byte.
_JSON_PIECES = st.sampled_from(
    [
        "{", "}", "[", "]", ",", ":", '"url"', '"code"', '"https://example.com/"', '"\\ud800"', '"\\u0000"',
        "NaN", "Infinity", "-Infinity", "1e999", "-0", "9" * 4_400, "0." + "1" * 5_000, "true", "null",
        '"user:pw@sho.rt@evil.example"', '"https://a:b@example.com/"', " ", "\\", '"', "\udc80", "\x00",
    ]
)  # fmt: skip
_BODIES = st.one_of(
    st.lists(_JSON_PIECES, max_size=30).map("".join),
    st.text(alphabet=string.printable + "\u00e9\u20ac\ud7ff", max_size=200),
    st.binary(max_size=200),
)
_CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/x-www-form-urlencoded",
        "",
        "text/plain",
        "application/json; charset=utf-8",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_BODIES, content_type=_CONTENT_TYPES)
def test_no_body_makes_the_shorten_route_answer_5xx(
    api: ModuleType, body: str | bytes, content_type: str
) -> None:
    # When any body is posted to POST /
    answer = call(api, api_event("POST", "/", body=body, headers={"Content-Type": content_type}))
    # Then the answer is a success or a 4xx that says what is wrong, as JSON
    status = answer["statusCode"]
    assert status < 500, answer
    if status >= 400:
        problem = json.loads(answer["body"])
        assert problem["error"] and problem["message"]
