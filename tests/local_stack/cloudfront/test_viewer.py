"""The headers CloudFront derives for the origin (local_stack/cloudfront/viewer.py)."""

from local_stack.cloudfront.viewer import device_headers, viewer_headers

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 Safari/604.1"
)
ANDROID_TABLET = "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 Chrome/120.0 Safari/537.36"
DESKTOP = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36"
TV = "Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 SamsungBrowser/4.0 TV Safari/537.36"


def flags(user_agent: str) -> set[str]:
    return {name.split("-")[2] for name, value in device_headers(user_agent) if value == "true"}


def test_devices_from_the_user_agent() -> None:
    assert flags(IPHONE) == {"IOS", "Mobile"}
    assert flags(ANDROID_TABLET) == {"Android", "Mobile", "Tablet"}
    assert flags(DESKTOP) == {"Desktop"}
    assert flags(TV) == {"SmartTV"}
    assert flags("") == {"Desktop"}


def test_only_the_policys_headers_are_added_with_country_and_forwarded_for() -> None:
    forwarded = frozenset({"cloudfront-viewer-country", "cloudfront-is-ios-viewer"})
    added = viewer_headers({"User-Agent": IPHONE}, "127.0.0.1", "JP", forwarded)
    assert added == {
        "CloudFront-Is-IOS-Viewer": "true",
        "CloudFront-Viewer-Country": "JP",
        "X-Forwarded-For": "127.0.0.1",
    }
    chained = viewer_headers({"X-Forwarded-For": "198.51.100.7"}, "127.0.0.1", "US", frozenset())
    assert chained == {"X-Forwarded-For": "198.51.100.7, 127.0.0.1"}
