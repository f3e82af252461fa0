"""Security headers on the API function's answers."""

import base64
import hashlib

from shortener.http.security_headers import content_security_policy, secure, upload_origins

PAGE = "<html><head><style>body{margin:0}</style></head><body><script>go()</script></body></html>"


def sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_a_page_may_run_only_its_own_hashed_inline_script_and_style_and_is_never_framed() -> None:
    policy = dict(directive.split(" ", 1) for directive in content_security_policy(PAGE).split("; "))
    assert policy["script-src"] == sha256("go()")
    assert policy["style-src"] == sha256("body{margin:0}")
    assert policy["default-src"] == "'none'"
    assert policy["frame-ancestors"] == "'none'"
    assert "unsafe-inline" not in content_security_policy(PAGE)


def test_every_answer_says_nosniff_and_pages_get_a_policy_and_referrer_policy() -> None:
    json_answer = secure(
        {"statusCode": 404, "body": "{}", "multiValueHeaders": {"Content-Type": ["application/json"]}},
        hsts=False,
    )
    assert json_answer["multiValueHeaders"]["X-Content-Type-Options"] == ["nosniff"]
    assert "Content-Security-Policy" not in json_answer["multiValueHeaders"]
    page = secure(
        {"statusCode": 200, "body": PAGE, "headers": {"Content-Type": "text/html; charset=utf-8"}}, hsts=True
    )
    assert page["headers"]["X-Content-Type-Options"] == "nosniff"
    assert page["headers"]["Referrer-Policy"] == "strict-origin-when-cross-origin"
    assert "frame-ancestors 'none'" in page["headers"]["Content-Security-Policy"]
    assert page["headers"]["Strict-Transport-Security"].startswith("max-age=")


def test_uploads_may_go_to_s3_or_the_endpoint_boto3_uses() -> None:
    assert upload_origins("") == ("https://*.amazonaws.com",)
    assert upload_origins("http://127.0.0.1:4566/x") == ("https://*.amazonaws.com", "http://127.0.0.1:4566")
