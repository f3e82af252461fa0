"""The local edge's caching rules (local_stack/cloudfront/cache.py): the key, the TTL CloudFront
chooses from the policy and Cache-Control, invalidation paths as AWS matches them, the LRU bound."""

import pytest

from local_stack.cloudfront.cache import CachePolicy, EdgeCache, Entry, cache_key, matches, ttl_for

# The template's EdgeCachePolicy and error caching.
POLICY = CachePolicy(min_ttl=0, default_ttl=0, max_ttl=86400, error_ttls={404: 0, 403: 0})


@pytest.mark.parametrize(
    ("cache_control", "expected"),
    [
        ("max-age=90, s-maxage=600", 600),  # s-maxage before max-age
        ("max-age=90", 90),
        ("s-maxage=999999", 86400),  # clamped to MaxTTL
        ("", 0),  # DefaultTTL
        ("no-store", 0),
        ("private, max-age=60", 0),
        ("no-cache, s-maxage=60", 0),
    ],
)
def test_ttl_follows_s_maxage_then_max_age_within_the_policy(cache_control: str, expected: int) -> None:
    assert ttl_for(POLICY, "GET", 301, cache_control) == expected


def test_ttl_clamps_to_min_ttl_and_defaults() -> None:
    policy = CachePolicy(min_ttl=30, default_ttl=120, max_ttl=600)
    assert ttl_for(policy, "GET", 200, "max-age=5") == 30
    assert ttl_for(policy, "GET", 200, "") == 120


def test_only_cached_methods_and_cacheable_codes_are_kept() -> None:
    assert ttl_for(POLICY, "POST", 301, "s-maxage=60") == 0
    assert ttl_for(POLICY, "HEAD", 301, "s-maxage=60") == 60
    assert ttl_for(POLICY, "GET", 201, "s-maxage=60") == 0


def test_errors_are_cached_for_their_error_caching_min_ttl() -> None:
    assert ttl_for(POLICY, "GET", 404, "max-age=60") == 0  # configured 0
    assert ttl_for(POLICY, "GET", 500, "") == 10  # AWS's default
    assert ttl_for(POLICY, "GET", 500, "no-store") == 0


def test_the_key_is_the_path_and_the_policys_headers() -> None:
    assert cache_key("/abc?utm_source=x") == cache_key("/abc") == ("/abc", ())
    names = ("X-Shortener-Host",)
    on_a = cache_key("/abc", {"x-shortener-host": "go.a.example", "Accept": "text/html"}, names)
    on_b = cache_key("/abc", {"X-Shortener-Host": "go.b.example"}, names)
    assert on_a == ("/abc", ("go.a.example",))
    assert on_a != on_b
    assert cache_key("/abc", {}, names) == ("/abc", ("",))


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("/*", "/abc", True),
        ("/ab*", "/abc", True),
        ("/ab*", "/xab", False),
        ("/abc", "/abc", True),
        ("/abc", "/abcd", False),
        ("/a*c", "/abc", False),  # * only at the end
    ],
)
def test_invalidation_paths_match_as_aws_matches_them(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected


def entry(at: float, ttl: int = 60) -> Entry:
    return Entry(301, (("Location", "https://example.com/"),), b"", at, ttl)


def test_entries_expire_invalidate_and_stay_bounded() -> None:
    now = [0.0]
    cache = EdgeCache(capacity=2, clock=lambda: now[0])
    cache.put(("/a", ()), entry(0))
    cache.put(("/b", ()), entry(0))
    assert cache.get(("/a", ())) is not None  # /a used last: /b goes first
    cache.put(("/c", ()), entry(0))
    assert cache.get(("/b", ())) is None
    assert len(cache) == 2
    assert cache.invalidate(["/c"]) == 1
    assert cache.get(("/c", ())) is None
    now[0] = 60.0
    assert cache.get(("/a", ())) is None  # expired


def test_an_invalidation_drops_a_path_on_every_host() -> None:
    cache = EdgeCache(capacity=10, clock=lambda: 0.0)
    cache.put(("/a", ("go.a.example",)), entry(0))
    cache.put(("/a", ("go.b.example",)), entry(0))
    cache.put(("/b", ("go.a.example",)), entry(0))
    assert cache.invalidate(["/a"]) == 2
    assert cache.get(("/b", ("go.a.example",))) is not None
