"""Issue 31 on a running local stack: a field the API does not know is refused and makes nothing;
an owner over OwnerDailyRows cannot make links through POST /links/bulk either; a link-preview
fetcher does not use up a link's only click. One stack for the module (OwnerDailyRows=5): the
tests use owners of their own and do not interfere."""

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import RunningStack, _factory
from tests.e2e.test_access_e2e import create_key

PREVIEW_AGENT = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"
BROWSER_AGENT = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 Version/17.5 Safari/605.1.15"
)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    started: list[RunningStack] = []
    yield _factory(tmp_path_factory.mktemp("strict"), started)(params={"OwnerDailyRows": "5"})
    for running in started:
        running.stop()


def links_of(stack: RunningStack, owner: str | None = None) -> list[dict]:
    """The links table's link items (of ``owner``, when given)."""
    table = stack.resources["LinksTable"]
    pages = stack.boto3_client("dynamodb").get_paginator("scan").paginate(TableName=table)
    # Links only: find-if-exists claims ("#url#...") and the counter are items of their own.
    items = [item for page in pages for item in page["Items"] if not item["code"]["S"].startswith("#")]
    return [item for item in items if owner is None or item.get("owner", {}).get("S") == owner]


def test_an_unknown_field_is_a_422_naming_it_and_no_link_is_made(stack: RunningStack) -> None:
    before = len(links_of(stack))
    # When a client sends a misspelt password with a URL
    answer = stack.post_json("", {"url": "https://example.com/private", "passwrd": "x"})
    # Then it is refused, naming the field, in the project's error shape, and nothing is made
    assert answer.status == 422, answer.text
    assert answer.json()["error"] == "invalid_request" and "passwrd" in answer.json()["message"]
    assert len(links_of(stack)) == before


def test_an_owner_over_the_daily_rows_gets_429_from_bulk_links_and_nothing_is_written(
    stack: RunningStack,
) -> None:
    # Given a member who made 4 of the day's 5 links
    _, key = create_key(stack, "strict-quota")
    first = stack.post_json(
        "links/bulk", {"links": [{"url": f"https://example.com/q{n}"} for n in range(4)]}, key
    )
    assert first.status == 200 and [o["status"] for o in first.json()["links"]] == [201] * 4
    # When the member sends 2 links more in one call
    second = stack.post_json(
        "links/bulk", {"links": [{"url": "https://example.com/r1"}, {"url": "https://example.com/r2"}]}, key
    )
    # Then it is a 429 quota_exceeded, and none of its links exists
    assert second.status == 429, second.text
    assert second.json()["error"] == "quota_exceeded"
    assert len(links_of(stack, "strict-quota")) == 4


def test_a_preview_fetcher_does_not_use_up_the_only_click(stack: RunningStack) -> None:
    # Given a link that answers one click
    made = stack.post_json("", {"url": "https://example.com/once", "max_clicks": 1})
    assert made.status == 201, made.text
    code = made.json()["code"]
    # When a link preview is drawn for it, then a person opens it
    preview = stack.request("GET", code, headers={"User-Agent": PREVIEW_AGENT}, api_key=None)
    person = stack.request("GET", code, headers={"User-Agent": BROWSER_AGENT}, api_key=None)
    # Then both are redirected: the person got the link's one click
    assert preview.status == 301, preview.text
    assert person.status == 301 and person.headers["Location"] == "https://example.com/once"
    # And the click was used: the next person is told the link expired
    again = stack.request("GET", code, headers={"User-Agent": BROWSER_AGENT}, api_key=None)
    assert again.status == 410
