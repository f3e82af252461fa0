"""The admins' blocklist through the API handler under moto: managing it, and links to a blocked
host (or a subdomain of it, in any spelling) refused for single links and changes of target."""

import json
from types import ModuleType
from typing import Any

import pytest

from tests.support.api import ApiCaller

pytestmark = pytest.mark.integration


def body(answer: dict[str, Any]) -> Any:
    return json.loads(answer["body"]) if answer["body"] else None


def blocklist(caller: ApiCaller, method: str, host: str | None = None, reason: str = "") -> dict[str, Any]:
    if host is None:
        return caller.request(method, "/blocklist")
    return caller.request(
        method,
        f"/blocklist/{host}",
        resource="/blocklist/{host}",
        path_parameters={"host": host},
        body={"reason": reason} if reason else None,
    )


@pytest.fixture
def admin(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "ops", role="admin")


@pytest.fixture
def member(api: ModuleType) -> ApiCaller:
    return ApiCaller(api, "alice")


def test_an_admin_blocks_lists_and_unblocks_a_host(admin: ApiCaller) -> None:
    # When an admin blocks a host written with capitals and a trailing dot
    blocked = blocklist(admin, "PUT", "Evil.Example.", reason="phishing")
    # Then it is stored in canonical form, with who and why
    assert blocked["statusCode"] == 200
    assert (body(blocked)["host"], body(blocked)["added_by"], body(blocked)["reason"]) == (
        "evil.example",
        "ops",
        "phishing",
    )
    assert [entry["host"] for entry in body(blocklist(admin, "GET"))["hosts"]] == ["evil.example"]
    # And unblocking removes it; unblocking again says it is not there
    assert blocklist(admin, "DELETE", "evil.example")["statusCode"] == 204
    assert body(blocklist(admin, "GET"))["hosts"] == []
    not_there = blocklist(admin, "DELETE", "evil.example")
    assert (not_there["statusCode"], body(not_there)["error"]) == (404, "not_blocked")


def test_only_admins_touch_the_blocklist(api: ModuleType, member: ApiCaller, admin: ApiCaller) -> None:
    blocklist(admin, "PUT", "evil.example")
    for caller in (member, ApiCaller(api, None)):
        for answer in (
            blocklist(caller, "GET"),
            blocklist(caller, "PUT", "other.example"),
            blocklist(caller, "DELETE", "evil.example"),
        ):
            assert answer["statusCode"] == 403
            assert body(answer)["error"] == "forbidden"
    assert [entry["host"] for entry in body(blocklist(admin, "GET"))["hosts"]] == ["evil.example"]


@pytest.mark.parametrize("host", ["not a host", "exa mple.com", "[::1", "x" * 300, "a%2Fb.example"])
def test_a_malformed_host_is_400(admin: ApiCaller, host: str) -> None:
    answer = blocklist(admin, "PUT", host)
    assert answer["statusCode"] == 400
    assert body(answer)["error"] == "invalid_request"


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/login",
        "https://www.evil.example/login",
        "https://deep.sub.evil.example/",
        "https://EVIL.example./x",
        "http://evil.example:8080/x",
    ],
)
def test_links_to_a_blocked_host_or_its_subdomains_are_refused(
    admin: ApiCaller, member: ApiCaller, url: str
) -> None:
    blocklist(admin, "PUT", "evil.example")
    answer = member.request("POST", "/", body={"url": url})
    assert answer["statusCode"] == 400
    assert body(answer)["error"] == "blocked_host"
    assert "evil.example" in body(answer)["message"]
    assert body(member.list_links())["links"] == []


def test_a_host_that_merely_ends_alike_is_not_blocked(admin: ApiCaller, member: ApiCaller) -> None:
    blocklist(admin, "PUT", "evil.example")
    assert member.shorten("https://notevil.example/")["url"] == "https://notevil.example/"


def test_an_idn_host_is_blocked_in_both_spellings(admin: ApiCaller, member: ApiCaller) -> None:
    blocklist(admin, "PUT", "bücher.example")
    for url in ("https://bücher.example/", "https://xn--bcher-kva.example/", "https://shop.BÜCHER.example/"):
        assert member.request("POST", "/", body={"url": url})["statusCode"] == 400, url


def test_a_link_cannot_be_retargeted_to_a_blocked_host(admin: ApiCaller, member: ApiCaller) -> None:
    code = member.shorten("https://fine.example/")["code"]
    blocklist(admin, "PUT", "evil.example")
    answer = member.link("PATCH", code, {"url": "https://login.evil.example/"})
    assert answer["statusCode"] == 400
    assert body(answer)["error"] == "blocked_host"
    assert body(member.link("GET", code))["url"] == "https://fine.example/"


def test_unblocking_allows_the_host_again(admin: ApiCaller, member: ApiCaller) -> None:
    blocklist(admin, "PUT", "evil.example")
    blocklist(admin, "DELETE", "EVIL.EXAMPLE")
    assert member.shorten("https://evil.example/now-fine")["url"] == "https://evil.example/now-fine"


def test_blocking_a_host_takes_down_its_existing_links_and_unblocking_restores_only_those(
    admin: ApiCaller, member: ApiCaller
) -> None:
    # Given links to a host and to its subdomain, one to another host, and one the owner disabled
    to_host = member.shorten("https://phish.example/login")["code"]
    to_subdomain = member.shorten("https://www.phish.example/x")["code"]
    elsewhere = member.shorten("https://fine.example/")["code"]
    disabled = member.shorten("https://phish.example/old")["code"]
    assert member.link("PATCH", disabled, {"status": "disabled"})["statusCode"] == 200
    assert member.follow(to_host)["statusCode"] == 301  # and followed once (in the container's memory)
    # When an admin blocks the host
    blocked = blocklist(admin, "PUT", "phish.example", reason="phishing")
    # Then it says how many existing links it took down, and those answer 410 at once
    assert (body(blocked)["links_taken_down"], body(blocked)["stage_cache_refreshed"]) == (3, None)
    for code in (to_host, to_subdomain, disabled):
        gone = member.follow(code, headers={"Accept": "application/json"})
        assert gone["statusCode"] == 410, code
    assert (
        "phish.example"
        in body(member.follow(to_subdomain, headers={"Accept": "application/json"}))["message"]
    )
    assert member.follow(elsewhere)["statusCode"] == 301
    # And when it is unblocked, the links the block took down redirect again, the disabled one not
    assert blocklist(admin, "DELETE", "phish.example")["statusCode"] == 204
    statuses = [member.follow(code)["statusCode"] for code in (to_host, to_subdomain, disabled)]
    assert statuses == [301, 301, 410]


def test_a_host_with_a_user_name_is_refused_not_blocked_as_its_host(admin: ApiCaller) -> None:
    # 'user@evil.example' is no host: blocking evil.example whole would block more than was typed.
    answer = blocklist(admin, "PUT", "user@evil.example")
    assert (answer["statusCode"], body(answer)["error"]) == (400, "invalid_request")
    assert "user name" in body(answer)["message"]
    assert body(blocklist(admin, "GET"))["hosts"] == []


def test_blocking_again_in_another_spelling_answers_the_first_entry(
    admin: ApiCaller, api: ModuleType
) -> None:
    # Given a host blocked for phishing
    first = body(blocklist(admin, "PUT", "evil.example", reason="phishing"))
    assert first["already_blocked"] is False
    # When another admin blocks it again, spelt otherwise, for another reason
    again = body(blocklist(ApiCaller(api, "root", role="admin"), "PUT", "EVIL.Example.", reason="spam"))
    # Then the first entry stands, and the answer says so
    assert again["already_blocked"] is True
    assert (again["reason"], again["added_by"], again["created_at"]) == (
        "phishing",
        "ops",
        first["created_at"],
    )
    assert [entry["reason"] for entry in body(blocklist(admin, "GET"))["hosts"]] == ["phishing"]
