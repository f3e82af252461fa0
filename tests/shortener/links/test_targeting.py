"""The redirect's decision for one visitor: device, then country, then the weighted variant draw,
then ``url``; UTM tags merged into the winner's query; the short URL's query forwarded."""

import random
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from shortener.links.model import Link
from shortener.links.rules_model import Utm, Variant
from shortener.links.targeting import Visitor, decide, device_of_agent, visitor_of

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.0 Mobile/15E148 Safari/604.1"
)
ANDROID = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 "
    "Mobile Safari/537.36"
)
DESKTOP = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0"
CREATED = datetime(2026, 1, 2, tzinfo=UTC)


def _link(**rules: object) -> Link:
    return Link(code="b7Kx2", url="https://example.com/", created_at=CREATED, **rules)  # type: ignore[arg-type]


FULL = _link(
    ios_url="https://apps.apple.com/app",
    android_url="https://play.google.com/app",
    geo={"DE": "https://example.de/"},
    variants=(Variant(url="https://a.example/", weight=50), Variant(url="https://b.example/", weight=50)),
)


def test_the_device_comes_from_the_user_agent_without_the_edge() -> None:
    assert [device_of_agent(agent) for agent in (IPHONE, ANDROID, DESKTOP, "")] == [
        "ios",
        "android",
        "other",
        "other",
    ]
    assert visitor_of({"User-Agent": IPHONE}).device == "ios"


def test_the_edge_headers_win_over_the_user_agent() -> None:
    headers = {
        "User-Agent": IPHONE,
        "CloudFront-Is-IOS-Viewer": "false",
        "CloudFront-Is-Android-Viewer": "true",
    }
    assert visitor_of(headers).device == "android"
    assert visitor_of({"User-Agent": IPHONE, "cloudfront-is-ios-viewer": "false"}).device == "other"
    assert visitor_of({"CloudFront-Viewer-Country": "de"}).country == "DE"


def test_precedence_is_device_then_country_then_variants_then_url() -> None:
    assert decide(FULL, FULL.url, Visitor("ios", "DE")).rule == "ios"
    assert decide(FULL, FULL.url, Visitor("android", "DE")).rule == "android"
    assert decide(FULL, FULL.url, Visitor("other", "DE")).url == "https://example.de/"
    assert decide(FULL, FULL.url, Visitor("other", "DE")).rule == "geo:DE"
    assert decide(FULL, FULL.url, Visitor("other", "FR"), draw=lambda: 0.7).rule == "variant:2"
    assert decide(FULL, FULL.url, Visitor("other"), draw=lambda: 0.2).url == "https://a.example/"
    plain = _link(ios_url="https://apps.apple.com/app")
    assert decide(plain, plain.url, Visitor("android", "DE")) == decide(plain, plain.url, Visitor())
    assert decide(plain, plain.url, Visitor()).rule == "default"


def test_utm_tags_join_the_destinations_own_query_and_replace_its_utm() -> None:
    link = _link(
        ios_url="https://apps.apple.com/app?id=1&utm_source=web&q=a%20b",
        utm=Utm(source="sms", campaign="spring"),
    )
    decision = decide(link, "https://example.com/", Visitor("ios"))
    query = parse_qsl(urlsplit(decision.url).query)
    assert query == [("id", "1"), ("q", "a b"), ("utm_source", "sms"), ("utm_campaign", "spring")]
    assert "q=a%20b" in decision.url  # the destination's own parameters are kept as written


def test_forward_query_appends_the_short_urls_query() -> None:
    link = _link(forward_query=True, utm=Utm(source="sms"))
    assert decide(link, "https://example.com/?a=1#top", Visitor(query="ref=x")).url == (
        "https://example.com/?a=1&utm_source=sms&ref=x#top"
    )
    assert decide(_link(), "https://example.com/", Visitor(query="ref=x")).url == "https://example.com/"


@settings(max_examples=30, deadline=None)
@given(
    weights=st.lists(st.integers(min_value=1, max_value=100), min_size=1, max_size=10).filter(
        lambda w: sum(w) <= 100
    ),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_variants_are_drawn_in_proportion_to_their_weights(weights: list[int], seed: int) -> None:
    weights = [*weights[:-1], weights[-1] + 100 - sum(weights)]
    link = _link(
        variants=tuple(Variant(url=f"https://v{n}.example/", weight=w) for n, w in enumerate(weights))
    )
    draws = 4000
    seeded = random.Random(seed)
    counts = [0] * len(weights)
    for _ in range(draws):
        rule = decide(link, link.url, Visitor(), draw=seeded.random).rule
        counts[int(rule.removeprefix("variant:")) - 1] += 1
    for weight, count in zip(weights, counts, strict=True):
        expected = draws * weight / 100
        # Within five standard deviations of the binomial mean: never a flaky failure.
        spread = 5 * (draws * weight / 100 * (1 - weight / 100)) ** 0.5 + 1
        assert abs(count - expected) <= spread, (weights, counts)


@given(point=st.floats(min_value=0, max_value=1, exclude_max=True))
@settings(max_examples=50)
def test_every_draw_lands_on_a_variant_whose_url_is_returned(point: float) -> None:
    decision = decide(FULL, FULL.url, Visitor(), draw=lambda: point)
    assert decision.rule in {"variant:1", "variant:2"}
    assert decision.url == ("https://a.example/" if decision.rule == "variant:1" else "https://b.example/")
