"""Limits with no way around them, through the API function's handler under moto: every link made
counts toward its owner's daily rows (``POST /`` and ``POST /links/bulk`` as bulk files do), and a
link-preview fetcher never uses up a click limit (its visit is still a bot's click)."""

import json
from types import ModuleType

import boto3
import pytest

from shortener.settings import api_settings
from tests.support.api import ApiCaller

pytestmark = pytest.mark.integration

PREVIEW_AGENT = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"
BROWSER_AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"


def link_count(tables: dict[str, str]) -> int:
    items = boto3.client("dynamodb").scan(TableName=tables["LINKS_TABLE"])["Items"]
    # Links only: the counter and the claims of find-if-exists are items of their own.
    return sum(1 for item in items if "url" in item and "#" not in item["code"]["S"])


@pytest.fixture
def small_quota(monkeypatch: pytest.MonkeyPatch, tables: dict[str, str]) -> None:
    monkeypatch.setenv("OWNER_DAILY_ROWS", "5")
    api_settings.cache_clear()


def test_a_bulk_call_over_the_owners_daily_rows_is_429_and_writes_nothing(
    api: ModuleType, tables: dict[str, str], small_quota: None
) -> None:
    # Given an owner whose day allows 5 links, 3 of them made by a bulk call
    owner = ApiCaller(api, "ann")
    links = [{"url": f"https://example.com/{n}"} for n in range(3)]
    assert owner.request("POST", "/links/bulk", body={"links": links})["statusCode"] == 200
    before = link_count(tables)
    # When the owner sends 3 links more in one call
    answer = owner.request("POST", "/links/bulk", body={"links": links[:1] * 3})
    # Then it is a 429 quota_exceeded naming the quota, and nothing of it is written
    assert answer["statusCode"] == 429, answer["body"]
    problem = json.loads(answer["body"])
    assert problem["error"] == "quota_exceeded" and "OwnerDailyRows" in problem["message"]
    assert link_count(tables) == before == 3


def test_post_slash_counts_one_row_a_link(api: ModuleType, tables: dict[str, str], small_quota: None) -> None:
    # Given an owner whose day allows 5 links, who made 5 one by one
    owner = ApiCaller(api, "bob")
    for n in range(5):
        owner.shorten(f"https://example.com/one/{n}")
    # When the owner asks for a sixth
    answer = owner.request("POST", "/", body={"url": "https://example.com/one/6"})
    # Then it is refused, nothing written; another owner's day is their own
    assert answer["statusCode"] == 429 and json.loads(answer["body"])["error"] == "quota_exceeded"
    assert link_count(tables) == 5
    ApiCaller(api, "cy").shorten("https://example.com/one/6")


def test_an_unknown_field_in_post_slash_is_a_422_and_no_link_is_made(
    api: ModuleType, tables: dict[str, str]
) -> None:
    owner = ApiCaller(api, "dee")
    answer = owner.request("POST", "/", body={"url": "https://example.com/secret", "passwrd": "x"})
    assert answer["statusCode"] == 422
    assert "passwrd" in json.loads(answer["body"])["message"]
    assert link_count(tables) == 0


def test_a_preview_fetcher_does_not_use_up_a_click_limit(api: ModuleType, tables: dict[str, str]) -> None:
    # Given a link that answers one click
    owner = ApiCaller(api, "eve")
    code = owner.shorten("https://example.com/once", max_clicks=1)["code"]
    visitor = ApiCaller(api, None)
    # When a preview fetcher fetches it, then a person opens it
    preview = visitor.follow(code, headers={"User-Agent": PREVIEW_AGENT})
    person = visitor.follow(code, headers={"User-Agent": BROWSER_AGENT})
    # Then both are redirected: the preview used up nothing
    assert (preview["statusCode"], person["statusCode"]) == (301, 301)
    # And the person's click was the one allowed: the next person reads "expired"
    assert visitor.follow(code, headers={"User-Agent": BROWSER_AGENT})["statusCode"] == 410
    # And a preview of a used-up link is told so too (it never gets past the limit)
    assert visitor.follow(code, headers={"User-Agent": PREVIEW_AGENT})["statusCode"] == 410


def test_a_request_without_a_user_agent_uses_up_a_click() -> None:
    from shortener.clicks.agents import is_crawler

    # No user agent is a bot's click in the reports, but it names no crawler: it pays for the click.
    assert not is_crawler("") and not is_crawler("  ")
    assert is_crawler(PREVIEW_AGENT) and not is_crawler(BROWSER_AGENT)
    # An HTTP library's own user agent is a script's or an app's, sent for a person: it pays too.
    for library in ("curl/8.5.0", "python-requests/2.32.3", "Python-urllib/3.13", "okhttp/4.12.0"):
        assert not is_crawler(library), library
